/**
 * The REST side of the OKX simulator (okxServer.ts): OKX API v5 public endpoints (docs sections of
 * https://www.okx.com/docs-v5/en/), envelope `{code: "0", msg: "", data: [...]}`, errors HTTP 400 (404 for an unknown
 * path) with `{code, msg, data: []}`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FaultSwitches } from './faults.js';
import type { MarketView } from './exchangeView.js';
import type { Market, Underlying } from './market.js';
import type { OkxChains, OkxInstType } from './okxChains.js';
import { fundingHistoryItems, fundingRateItem, indexTickerItem, markPriceItem, optSummaryItem, type IndexStats, type Json } from './okxMessages.js';
import { replyRest } from './serverKit.js';

/** An OKX error answer: its `code` (e.g. "50014" parameter empty, "51000" parameter error, "60018" unknown channel). */
export class OkxError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What the REST endpoints read of the simulator. */
export interface OkxRestSource {
  readonly market: Market;
  readonly view: MarketView;
  readonly chains: OkxChains;
  /** The index's 24 h statistics at nowMs (Unix ms), cached by the hour. */
  readonly statsOf: (u: Underlying, nowMs: number) => IndexStats;
}

/** A query parameter; "" counts as absent. @throws OkxError 50014 when required and absent */
function param(q: URLSearchParams, name: string, required: boolean): string | undefined {
  const v = q.get(name);
  if (v === null || v === '') {
    if (required) throw new OkxError('50014', `Parameter ${name} can not be empty.`);
    return undefined;
  }
  return v;
}

/** GET /api/v5/public/instruments: instType (OPTION needs instFamily or uly), optional instId. */
function instruments(src: OkxRestSource, q: URLSearchParams): Json[] {
  const instType = param(q, 'instType', true)!;
  if (!['SPOT', 'MARGIN', 'SWAP', 'FUTURES', 'OPTION'].includes(instType)) throw new OkxError('51000', 'Parameter instType error');
  const fam = param(q, 'instFamily', false) ?? param(q, 'uly', false);
  if (instType === 'OPTION' && fam === undefined) throw new OkxError('50014', 'Parameter instFamily can not be empty.');
  const instId = param(q, 'instId', false);
  if (instType === 'SPOT' || instType === 'MARGIN') return [];
  return src.chains
    .list(instType as OkxInstType, fam)
    .filter((i) => instId === undefined || i.instId === instId)
    .map((i) => i.json as Json);
}

/** GET /api/v5/public/funding-rate-history: a swap's instId; before/after (fundingTime, ms) and limit (1..400, 400). */
function fundingRateHistory(src: OkxRestSource, q: URLSearchParams, nowMs: number): Json[] {
  const instId = param(q, 'instId', true)!;
  const inst = src.chains.get(instId);
  if (!inst || inst.instType !== 'SWAP') throw new OkxError('51001', "Instrument ID doesn't exist.");
  const num = (name: string): number | null => {
    const v = param(q, name, false);
    if (v === undefined) return null;
    if (!/^\d+$/.test(v)) throw new OkxError('51000', `Parameter ${name} error`);
    return Number(v);
  };
  const limit = num('limit') ?? 400;
  if (limit < 1 || limit > 400) throw new OkxError('51000', 'Parameter limit error');
  return fundingHistoryItems(src.view, inst, nowMs, num('before'), num('after'), limit);
}

/** The index tickers of the families (one family with instId), at nowMs. */
function indexTickers(src: OkxRestSource, instId: string | undefined, nowMs: number): Json[] {
  const fams = src.chains.familyNames().filter((f) => instId === undefined || f === instId);
  return fams.map((f) => {
    const spec = src.chains.family(f)!;
    return indexTickerItem(f, spec.priceDecimals, src.view.spot(spec.underlying), src.statsOf(spec.underlying, nowMs), nowMs);
  });
}

/**
 * The `data` of a GET on `path` with the query q.
 * @throws OkxError on a parameter error, or code "404" for an unknown path
 */
export function okxRestData(src: OkxRestSource, path: string, q: URLSearchParams): Json[] {
  const { chains, view } = src;
  const nowMs = src.market.now;
  switch (path) {
    case '/api/v5/public/time':
      return [{ ts: String(nowMs) }];
    case '/api/v5/public/instruments':
      return instruments(src, q);
    case '/api/v5/public/funding-rate-history':
      return fundingRateHistory(src, q, nowMs);
    case '/api/v5/public/funding-rate': {
      const inst = chains.get(param(q, 'instId', true)!);
      if (!inst || inst.instType !== 'SWAP') throw new OkxError('51001', "Instrument ID doesn't exist.");
      return [fundingRateItem(view, inst, nowMs)];
    }
    case '/api/v5/public/opt-summary': {
      const fam = param(q, 'instFamily', false) ?? param(q, 'uly', false);
      if (fam === undefined) throw new OkxError('50014', 'Parameter instFamily can not be empty.');
      if (!chains.family(fam)) throw new OkxError('51000', 'Parameter instFamily error');
      return chains.list('OPTION', fam).map((i) => optSummaryItem(view, i, nowMs));
    }
    case '/api/v5/market/index-tickers':
      return indexTickers(src, param(q, 'instId', false), nowMs);
    case '/api/v5/public/mark-price': {
      const instType = param(q, 'instType', true)!;
      const instId = param(q, 'instId', false);
      if (instType !== 'SWAP' && instType !== 'FUTURES') return [];
      return chains
        .list(instType, param(q, 'instFamily', false) ?? param(q, 'uly', false))
        .filter((i) => instId === undefined || i.instId === instId)
        .map((i) => markPriceItem(view, i, nowMs));
    }
    default:
      throw new OkxError('404', 'Not Found');
  }
}

/**
 * Answer one REST request: 405 for a method other than GET, HTTP 429 `{code: "50011"}` (Retry-After 1) while the
 * fault switches fail REST, else {@link okxRestData} in OKX's envelope (its errors as 400/404, others 500).
 */
export function answerOkxRest(src: OkxRestSource, switches: FaultSwitches, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (req.method !== 'GET') return replyRest(res, 405, { code: '405', msg: 'Method Not Allowed', data: [] });
  if (switches.takeRestFailure()) {
    return replyRest(res, 429, { code: '50011', msg: 'Too Many Requests', data: [] }, { 'retry-after': '1' });
  }
  try {
    replyRest(res, 200, { code: '0', msg: '', data: okxRestData(src, url.pathname, url.searchParams) });
  } catch (e) {
    if (e instanceof OkxError) replyRest(res, e.code === '404' ? 404 : 400, { code: e.code, msg: e.message, data: [] });
    else replyRest(res, 500, { code: '50000', msg: 'Internal error', data: [] });
  }
}
