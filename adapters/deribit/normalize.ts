/**
 * Pure Deribit normalizer: raw JSON-RPC message -> normalized {@link MarketEvent}s, or a counted drop.
 *
 * Units converted here, at the adapter edge (src/domain/events.ts):
 * - ms timestamps -> Unix seconds (`/ 1000`, ms precision kept);
 * - `mark_iv`, `bid_iv`, `ask_iv` percent -> fraction (`/ 100`);
 * - `underlying_price` -> `forward` (the expiry's forward that Deribit's mark IV refers to),
 *   `index_price` -> `indexPrice` (spot); `mark_price` kept as printed in `markPriceNative`
 *   (coin for BTC/ETH inverse options, USDC for linear options).
 *
 * Decisions (documented in adapters/deribit/README.md):
 * - zero means missing: `bid_iv`/`ask_iv` <= 0 or null -> null, and also null when the matching
 *   `best_bid_price`/`best_ask_price` is 0 (no order on that side);
 * - but Deribit also prints `bid_iv = ask_iv = 0` next to a real order (seen on the recorded 878-option BTC
 *   chain of 2026-05-26: 790 options with a bid price and zero IVs). Then the side's IV is implied from
 *   its price ({@link ivFromPrice}): Black-76 on `underlying_price` with r = 0 (decisions.md), T = (expiry -
 *   ticker time) ACT/365, the price in quote currency (coin price x underlying_price for inverse options,
 *   decisions.md "Inverse option value"); null when the price has no IV (at or below intrinsic value, at
 *   or above the upper bound);
 * - a ticker whose `state` is not `open` (closed, settlement, delivered, inactive, locked, halted,
 *   archivized), or whose timestamp is at/after its expiry, is dropped as `closed-instrument`:
 *   its marks are frozen or settlement values, not a live market;
 * - combos/spreads (`combo-instrument`) and currencies outside the spec's DERIBIT pair table
 *   (`unsupported-instrument`, `unsupported-index`) are recognised and ignored, not `bad-*`;
 * - an open option with mark_iv <= 0, forward <= 0 or index <= 0 is `bad-ticker` (no usable quote);
 * - control traffic (heartbeats, subscribe/set_heartbeat/test results) normalizes to zero events.
 *
 * Source: Deribit API v2 docs (see wire.ts for the section of each message); sample messages in
 * test/fixtures/deribit/. Never throws.
 */
import type { FundingRate, InstrumentDefinition, MarketEvent } from '../../src/domain/events.js';
import type { Pair } from '../../src/domain/markets.js';
import { CommonDropKinds, drop, errorMessage, fundingRate, futureQuote, instrumentDefinition as definitionEvent, isRecord, ivFromPrice, neverThrows, optionQuote, pos, zodDetail, type DroppedItem, type ListNormalizeResult } from '../shared/normalizeKit.js';
import type { NormalizeResult, Normalizer } from '../../src/domain/feeds.js';
import { parseInstrumentName, pairOfIndexName, type DeribitInstrument } from './instruments.js';
import { FundingPointSchema, FutureTickerSchema, HeartbeatSchema, InstrumentSchema, OptionTickerSchema, PriceIndexDataSchema, RpcErrorResponseSchema, SubscriptionNotificationSchema, TestResultSchema, type FutureTicker, type OptionTicker, type PriceIndexData } from './wire.js';
import { StringMemo } from '../shared/fastFields.js';

/** The `source` of every event this normalizer emits. */
const SOURCE = 'DERIBIT' as const;

/** Parsed ticker instrument names (a pure function of the name, shared by every caller; bounded). */
const TICKER_NAMES = new StringMemo((name: string) => parseInstrumentName(name));

/** The stable drop labels this normalizer uses (for metrics and the README). */
export const DropKinds = {
  ...CommonDropKinds,
  badIndex: 'bad-index',
  combo: 'combo-instrument',
  unsupportedIndex: 'unsupported-index',
  unknownChannel: 'unknown-channel',
  unknownMethod: 'unknown-method',
  unknownResponse: 'unknown-response',
  rpcError: 'rpc-error',
  unattributedFunding: 'unattributed-funding-history',
} as const;

/** Map a parse failure of an instrument name to a drop label. */
function nameDropKind(reason: 'combo' | 'unsupported' | 'malformed', badKind: string): string {
  return reason === 'combo' ? DropKinds.combo : reason === 'unsupported' ? DropKinds.unsupportedInstrument : badKind;
}

/**
 * IV side (bid or ask): percent -> fraction; null when the exchange prints 0/null/negative or when
 * the matching best price is 0 (no order on that side).
 */
function ivSide(ivPct: number | null | undefined, bestPrice: number | null | undefined): number | null {
  // the fraction, not the percent, must be > 0: a denormal percent (5e-324) underflows to 0 (fuzz finding)
  if (!pos(ivPct) || !pos(ivPct / 100)) return null;
  if (bestPrice === 0) return null;
  return ivPct / 100;
}

// ivFromPrice lives in adapters/shared/normalizeKit.ts (Deribit's and Bybit's zero IVs); re-exported for the tests
export { ivFromPrice };

const SECONDS_PER_YEAR = 365 * 86400;

function normalizeOptionTicker(inst: DeribitInstrument, data: unknown, receivedAtS: number): NormalizeResult {
  const parsed = OptionTickerSchema.safeParse(data);
  if (!parsed.success) return drop(DropKinds.badTicker, `${inst.name}: ${zodDetail(parsed.error)}`);
  const d: OptionTicker = parsed.data;
  if (d.state !== 'open') return drop(DropKinds.closed, `${inst.name} state ${d.state}`);
  if (!pos(d.timestamp)) return drop(DropKinds.badTicker, `${inst.name}: timestamp ${d.timestamp}`);
  const timestamp = d.timestamp / 1000;
  const expiry = inst.expirationTimestamp as number;
  if (timestamp >= expiry) return drop(DropKinds.closed, `${inst.name} ticker at/after expiry`);
  if (!pos(d.mark_iv) || !pos(d.mark_iv / 100)) return drop(DropKinds.badTicker, `${inst.name}: mark_iv ${d.mark_iv}`);
  if (!pos(d.underlying_price)) return drop(DropKinds.badTicker, `${inst.name}: underlying_price ${d.underlying_price}`);
  if (!pos(d.index_price)) return drop(DropKinds.badTicker, `${inst.name}: index_price ${d.index_price}`);
  const g = d.greeks;
  const greeks = g
    ? g.rho === undefined
      ? { delta: g.delta, gamma: g.gamma, vega: g.vega, theta: g.theta }
      : { delta: g.delta, gamma: g.gamma, vega: g.vega, theta: g.theta, rho: g.rho }
    : null;
  const K = inst.strike as number;
  const optionType = inst.optionType as 'C' | 'P';
  const T = (expiry - timestamp) / SECONDS_PER_YEAR;
  // a zero IV next to a real order: implied from the price (module docstring)
  const side = (ivPct: number | null | undefined, price: number | null | undefined): number | null =>
    ivSide(ivPct, price) ?? (pos(price) && !pos(ivPct) ? ivFromPrice(price, inst.inverse, d.underlying_price, K, T, optionType) : null);
  const ev: MarketEvent = optionQuote(SOURCE, inst, expiry, {
    markIv: d.mark_iv / 100,
    bidIv: side(d.bid_iv, d.best_bid_price),
    askIv: side(d.ask_iv, d.best_ask_price),
    markPriceNative: d.mark_price >= 0 ? d.mark_price : null,
    forward: d.underlying_price,
    indexPrice: d.index_price,
    greeks,
    timestamp,
    receivedAt: receivedAtS,
  });
  return { ok: true, events: [ev] };
}

function normalizeFutureTicker(inst: DeribitInstrument, data: unknown, receivedAtS: number): NormalizeResult {
  const parsed = FutureTickerSchema.safeParse(data);
  if (!parsed.success) return drop(DropKinds.badTicker, `${inst.name}: ${zodDetail(parsed.error)}`);
  const d: FutureTicker = parsed.data;
  if (d.state !== 'open') return drop(DropKinds.closed, `${inst.name} state ${d.state}`);
  if (!pos(d.timestamp)) return drop(DropKinds.badTicker, `${inst.name}: timestamp ${d.timestamp}`);
  const timestamp = d.timestamp / 1000;
  if (inst.expirationTimestamp !== null && timestamp >= inst.expirationTimestamp) {
    return drop(DropKinds.closed, `${inst.name} ticker at/after expiry`);
  }
  if (!pos(d.mark_price)) return drop(DropKinds.badTicker, `${inst.name}: mark_price ${d.mark_price}`);
  if (!pos(d.index_price)) return drop(DropKinds.badTicker, `${inst.name}: index_price ${d.index_price}`);
  const perpetual = inst.type === 'perpetual';
  const ev: MarketEvent = futureQuote(SOURCE, inst, inst.expirationTimestamp, {
    markPrice: d.mark_price,
    indexPrice: d.index_price,
    currentFunding: perpetual && typeof d.current_funding === 'number' ? d.current_funding : null,
    funding8h: perpetual && typeof d.funding_8h === 'number' ? d.funding_8h : null,
    timestamp,
    receivedAt: receivedAtS,
  });
  return { ok: true, events: [ev] };
}

function normalizeTicker(channel: string, data: unknown, receivedAtS: number): NormalizeResult {
  // ticker.{instrument_name}.{interval}; instrument names contain no '.'.
  const parts = channel.split('.');
  if (parts.length !== 3) return drop(DropKinds.unknownChannel, channel);
  const name = parts[1] as string;
  const p = TICKER_NAMES.get(name);
  if (!p.ok) return drop(nameDropKind(p.reason, DropKinds.badTicker), p.detail);
  if (!isRecord(data)) return drop(DropKinds.badTicker, `${name}: data is not an object`);
  if (data['instrument_name'] !== name) {
    return drop(DropKinds.badTicker, `${name}: data.instrument_name ${JSON.stringify(data['instrument_name'])} differs from channel`);
  }
  return p.instrument.type === 'option'
    ? normalizeOptionTicker(p.instrument, data, receivedAtS)
    : normalizeFutureTicker(p.instrument, data, receivedAtS);
}

function normalizeIndex(channel: string, data: unknown, receivedAtS: number): NormalizeResult {
  const indexName = channel.slice('deribit_price_index.'.length);
  const pair = pairOfIndexName(indexName);
  if (!pair) return drop(DropKinds.unsupportedIndex, indexName);
  const parsed = PriceIndexDataSchema.safeParse(data);
  if (!parsed.success) return drop(DropKinds.badIndex, `${indexName}: ${zodDetail(parsed.error)}`);
  const d: PriceIndexData = parsed.data;
  if (d.index_name !== indexName) return drop(DropKinds.badIndex, `${indexName}: data.index_name ${d.index_name}`);
  if (!pos(d.price)) return drop(DropKinds.badIndex, `${indexName}: price ${d.price}`);
  if (!pos(d.timestamp)) return drop(DropKinds.badIndex, `${indexName}: timestamp ${d.timestamp}`);
  return {
    ok: true,
    events: [{ kind: 'index', source: SOURCE, base: pair.base, quote: pair.quote, price: d.price, timestamp: d.timestamp / 1000, receivedAt: receivedAtS }],
  };
}

function normalizeResponse(msg: Record<string, unknown>, receivedAtS: number): NormalizeResult {
  if ('error' in msg) {
    const e = RpcErrorResponseSchema.safeParse(msg);
    if (!e.success) return drop(DropKinds.malformed, `error response: ${zodDetail(e.error)}`);
    return drop(DropKinds.rpcError, `id ${String(e.data.id)}: ${e.data.error.code} ${e.data.error.message}`);
  }
  const result = msg['result'];
  if (result === 'ok') return { ok: true, events: [] }; // public/set_heartbeat
  if (Array.isArray(result)) {
    if (result.length === 0 || result.every((x) => typeof x === 'string')) return { ok: true, events: [] }; // (un)subscribe
    const first = result[0];
    if (isRecord(first) && 'instrument_name' in first && 'kind' in first) {
      return { ok: true, events: normalizeInstrumentList(result, receivedAtS).events };
    }
    if (isRecord(first) && 'interest_1h' in first) {
      return drop(DropKinds.unattributedFunding, 'get_funding_rate_history result without its request (use normalizeFundingHistory)');
    }
    return drop(DropKinds.unknownResponse, `result array of ${typeof first}`);
  }
  if (TestResultSchema.safeParse(result).success) return { ok: true, events: [] }; // public/test
  return drop(DropKinds.unknownResponse, `result ${JSON.stringify(result)?.slice(0, 120)}`);
}

function normalizeInner(raw: unknown, receivedAtS: number): NormalizeResult {
  if (!isRecord(raw)) return drop(DropKinds.malformed, `not a JSON object: ${typeof raw}`);
  if (!Number.isFinite(receivedAtS)) return drop(DropKinds.malformed, `receivedAt ${receivedAtS}`);
  const method = raw['method'];
  if (method === 'subscription') {
    const n = SubscriptionNotificationSchema.safeParse(raw);
    if (!n.success) return drop(DropKinds.malformed, `subscription: ${zodDetail(n.error)}`);
    const { channel, data } = n.data.params;
    if (channel.startsWith('ticker.')) return normalizeTicker(channel, data, receivedAtS);
    if (channel.startsWith('deribit_price_index.')) return normalizeIndex(channel, data, receivedAtS);
    return drop(DropKinds.unknownChannel, channel.slice(0, 120));
  }
  if (method === 'heartbeat') {
    return HeartbeatSchema.safeParse(raw).success ? { ok: true, events: [] } : drop(DropKinds.malformed, 'heartbeat without a known params.type');
  }
  if (typeof method === 'string') return drop(DropKinds.unknownMethod, method.slice(0, 80));
  if ('result' in raw || 'error' in raw) return normalizeResponse(raw, receivedAtS);
  return drop(DropKinds.malformed, 'neither a notification nor a JSON-RPC response');
}

/**
 * The Deribit {@link Normalizer}: one raw parsed JSON-RPC message + local receive time (Unix s) ->
 * events or a counted drop. Handles `ticker.*` (options -> OptionQuote, futures/perpetuals ->
 * FutureQuote), `deribit_price_index.*` (IndexPrice), public/get_instruments results
 * (InstrumentDefinition), heartbeats and control responses (no events). Pure; never throws.
 */
export const normalizeDeribit: Normalizer = neverThrows(normalizeInner, DropKinds.internal);

/**
 * A public/get_instruments `result` (array of instruments) -> InstrumentDefinition events for the
 * supported pairs, plus per-item drops (combos, unsupported currencies, inactive or inconsistent
 * entries). Accepts both the current and the 2021 listing format. `timestamp` of each definition
 * is the instrument's `creation_timestamp` (s), or `receivedAtS` when absent. An option/future
 * whose `expiration_timestamp` or `strike` disagrees with its name is dropped as `bad-instrument`.
 * Pure; never throws.
 */
export function normalizeInstrumentList(result: unknown, receivedAtS: number): ListNormalizeResult<InstrumentDefinition> {
  const events: InstrumentDefinition[] = [];
  const dropped: DroppedItem[] = [];
  if (!Array.isArray(result)) return { events, dropped: [{ kind: DropKinds.malformed, detail: 'get_instruments result is not an array' }] };
  for (const item of result) {
    try {
      const r = instrumentDefinition(item, receivedAtS);
      if (r.ok) events.push(r.def);
      else dropped.push(r.dropped);
    } catch (e) {
      dropped.push({ kind: DropKinds.internal, detail: errorMessage(e) });
    }
  }
  return { events, dropped };
}

type DefinitionResult = { ok: true; def: InstrumentDefinition } | { ok: false; dropped: DroppedItem };

function instrumentDefinition(item: unknown, receivedAtS: number): DefinitionResult {
  const no = (kind: string, detail: string): DefinitionResult => ({ ok: false, dropped: { kind, detail } });
  const parsed = InstrumentSchema.safeParse(item);
  if (!parsed.success) return no(DropKinds.badInstrument, zodDetail(parsed.error));
  const it = parsed.data;
  const p = parseInstrumentName(it.instrument_name);
  if (!p.ok) return no(nameDropKind(p.reason, DropKinds.badInstrument), p.detail);
  const inst = p.instrument;
  if (it.kind !== 'option' && it.kind !== 'future') return no(DropKinds.combo, `${inst.name} kind ${it.kind}`);
  if (it.is_active === false) return no(DropKinds.inactive, inst.name);
  if ((it.kind === 'option') !== (inst.type === 'option')) return no(DropKinds.badInstrument, `${inst.name} kind ${it.kind}`);
  if (inst.expirationTimestamp !== null && it.expiration_timestamp / 1000 !== inst.expirationTimestamp) {
    return no(DropKinds.badInstrument, `${inst.name} expiration_timestamp ${it.expiration_timestamp} differs from its name`);
  }
  if (inst.type === 'option') {
    const k = inst.strike as number;
    if (it.strike !== undefined && Math.abs(it.strike - k) > 1e-9 * k) {
      return no(DropKinds.badInstrument, `${inst.name} strike ${it.strike} differs from its name`);
    }
    const ot = it.option_type === 'call' ? 'C' : it.option_type === 'put' ? 'P' : undefined;
    if (ot !== undefined && ot !== inst.optionType) return no(DropKinds.badInstrument, `${inst.name} option_type ${it.option_type}`);
  }
  const created = it.creation_timestamp;
  const def = definitionEvent(SOURCE, inst, inst.expirationTimestamp, typeof created === 'number' && created > 0 ? created / 1000 : receivedAtS);
  return { ok: true, def };
}

/**
 * A public/get_funding_rate_history `result` for perpetual `instrumentId` of `pair` -> FundingRate
 * events, ascending by timestamp, one per distinct timestamp: `interest` = `interest_1h` (the
 * hour's funding rate, fraction), `intervalHours` = 1, `timestamp` = the point's ms / 1000 (the
 * end of the hour). Malformed points are returned in `dropped` (`bad-funding`). The response does
 * not name its instrument, hence the explicit `instrumentId`. Pure; never throws.
 * Source: docs.deribit.com /api-reference/market-data/public-get_funding_rate_history.
 */
export function normalizeFundingHistory(result: unknown, instrumentId: string, pair: Pair): ListNormalizeResult<FundingRate> {
  const dropped: DroppedItem[] = [];
  if (!Array.isArray(result)) return { events: [], dropped: [{ kind: DropKinds.badFunding, detail: 'get_funding_rate_history result is not an array' }] };
  const byTs = new Map<number, FundingRate>();
  for (const item of result) {
    const parsed = FundingPointSchema.safeParse(item);
    if (!parsed.success) {
      dropped.push({ kind: DropKinds.badFunding, detail: `${instrumentId}: ${zodDetail(parsed.error)}` });
      continue;
    }
    const pt = parsed.data;
    if (!pos(pt.timestamp)) {
      dropped.push({ kind: DropKinds.badFunding, detail: `${instrumentId}: timestamp ${pt.timestamp}` });
      continue;
    }
    const ts = pt.timestamp / 1000;
    byTs.set(ts, fundingRate(SOURCE, instrumentId, pair, pt.interest_1h, 1, ts));
  }
  const events = [...byTs.values()].sort((a, b) => a.timestamp - b.timestamp);
  return { events, dropped };
}
