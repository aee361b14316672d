/**
 * The REST side of the Bybit simulator (bybitServer.ts): Bybit API v5 market endpoints (pages of
 * https://bybit-exchange.github.io/docs/v5/), envelope `{retCode: 0, retMsg: "OK", result, retExtInfo: {}, time}`;
 * parameter errors HTTP 200 with retCode 10001 `params error: ...`, as Bybit answers them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BybitChains, BybitSimInstrument } from './bybitChains.js';
import { fundingHistoryList } from './bybitMessages.js';
import type { MarketView } from './exchangeView.js';
import type { FaultSwitches } from './faults.js';
import type { Market } from './market.js';
import { replyRest } from './serverKit.js';

/** A parameter error, answered retCode 10001 `params error: <message>`. */
export class ParamError extends Error {}

/** What the REST endpoints read of the simulator. */
export interface BybitRestSource {
  readonly market: Market;
  readonly view: MarketView;
  readonly chains: BybitChains;
}

/** The cursor of the page list[from, to): Bybit-style URL-encoded `first=...&last=...`, "" on the last page. */
function cursorOf(list: readonly BybitSimInstrument[], from: number, to: number): string {
  if (to >= list.length) return '';
  return encodeURIComponent(`first=${list[from]!.symbol}&last=${list[to - 1]!.symbol}`);
}

/** The index after the cursor's last instrument. @throws ParamError on a cursor that names none */
function startAfterCursor(list: readonly BybitSimInstrument[], cursor: string): number {
  let decoded: string;
  try {
    decoded = decodeURIComponent(cursor);
  } catch {
    throw new ParamError('cursor invalid');
  }
  const last = new URLSearchParams(decoded).get('last');
  const i = last === null ? -1 : list.findIndex((x) => x.symbol === last);
  if (i < 0) throw new ParamError('cursor invalid');
  return i + 1;
}

/** An integer parameter in [lo, hi]; absent or "": dflt. @throws ParamError when not digits or out of range */
function intParam(q: URLSearchParams, name: string, lo: number, hi: number, dflt: number | null): number | null {
  const v = q.get(name);
  if (v === null || v === '') return dflt;
  if (!/^\d+$/.test(v)) throw new ParamError(`${name} invalid`);
  const n = Number(v);
  if (n < lo || n > hi) throw new ParamError(`${name} out of range [${lo}, ${hi}]`);
  return n;
}

/** GET /v5/market/instruments-info: one cursor page of a category's instruments (options without baseCoin: BTC). */
function instrumentsInfo(src: BybitRestSource, q: URLSearchParams): unknown {
  const category = q.get('category');
  if (category !== 'option' && category !== 'linear' && category !== 'inverse' && category !== 'spot') throw new ParamError('category invalid');
  if (category === 'inverse' || category === 'spot') return { category, list: [], nextPageCursor: '' };
  const symbol = q.get('symbol');
  const baseCoin = q.get('baseCoin') || (category === 'option' && !symbol ? 'BTC' : undefined);
  const limit = intParam(q, 'limit', 1, 1000, 500)!;
  const all = src.chains.list(category, baseCoin ?? undefined).filter((i) => !symbol || i.symbol === symbol);
  const cursor = q.get('cursor');
  const from = cursor ? startAfterCursor(all, cursor) : 0;
  const to = Math.min(all.length, from + limit);
  return { category, list: all.slice(from, to).map((i) => i.json), nextPageCursor: cursorOf(all, from, to) };
}

/** GET /v5/market/funding/history: a perpetual's funding points, newest first, in [startTime, endTime] (ms). */
function fundingHistory(src: BybitRestSource, q: URLSearchParams, nowMs: number): unknown {
  const category = q.get('category');
  if (category !== 'linear' && category !== 'inverse') throw new ParamError('category invalid');
  const symbol = q.get('symbol');
  if (!symbol) throw new ParamError('symbol is required');
  const inst = src.chains.get(symbol);
  if (!inst || inst.kind !== 'perpetual') throw new ParamError(`symbol invalid: ${symbol}`);
  const start = intParam(q, 'startTime', 0, Number.MAX_SAFE_INTEGER, null);
  const end = intParam(q, 'endTime', 0, Number.MAX_SAFE_INTEGER, null);
  if (start !== null && end === null) throw new ParamError('endTime is required when startTime is passed');
  if (start !== null && end !== null && start > end) throw new ParamError('startTime must be <= endTime');
  const limit = intParam(q, 'limit', 1, 200, 200)!;
  return { category, list: fundingHistoryList(src.view, inst, nowMs, start ?? 0, end ?? nowMs, limit) };
}

/**
 * The `result` of a GET on `path` with the query q; undefined for an unknown path.
 * @throws ParamError on a parameter error
 */
export function bybitRestResult(src: BybitRestSource, path: string, q: URLSearchParams): unknown {
  const nowMs = src.market.now;
  switch (path) {
    case '/v5/market/time':
      return { timeSecond: String(Math.floor(nowMs / 1000)), timeNano: `${nowMs}000000` };
    case '/v5/market/instruments-info':
      return instrumentsInfo(src, q);
    case '/v5/market/funding/history':
      return fundingHistory(src, q, nowMs);
    default:
      return undefined;
  }
}

/**
 * Answer one REST request: HTTP 403 `access too frequent` (text, Retry-After 1) while the fault switches fail REST,
 * else {@link bybitRestResult} in Bybit's envelope (404 for an unknown path; errors HTTP 200 with retCode 10001 or 10016).
 */
export function answerBybitRest(src: BybitRestSource, switches: FaultSwitches, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (switches.takeRestFailure()) {
    return replyRest(res, 403, 'access too frequent', { 'content-type': 'text/plain', 'retry-after': '1' });
  }
  const time = src.market.now;
  try {
    const result = bybitRestResult(src, url.pathname, url.searchParams);
    if (result === undefined) return replyRest(res, 404, { retCode: 404, retMsg: 'Not Found', result: {}, retExtInfo: {}, time });
    replyRest(res, 200, { retCode: 0, retMsg: 'OK', result, retExtInfo: {}, time });
  } catch (e) {
    const msg = e instanceof ParamError ? `params error: ${e.message}` : 'Internal System Error.';
    replyRest(res, 200, { retCode: e instanceof ParamError ? 10001 : 10016, retMsg: msg, result: {}, retExtInfo: {}, time });
  }
}
