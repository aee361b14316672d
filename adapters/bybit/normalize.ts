/**
 * Bybit normalizer: raw Bybit v5 public messages (option and linear streams) -> normalized
 * {@link MarketEvent}s, or a counted drop.
 *
 * Linear tickers arrive as a `snapshot` followed by `delta`s carrying only the changed fields, so
 * the normalizer holds the merged record per symbol ({@link BybitTickerBook}) and normalizes the
 * merged state; it is a small deterministic state machine ({@link BybitNormalizer}): no I/O, no
 * clock, the same message sequence gives the same events (replay-safe). Never throws.
 *
 * Units converted here (src/domain/events.ts): strings parsed strictly (wire.ts `bybitNum`,
 * `""` = missing); ms -> Unix seconds; IVs are already fractions.
 *
 * Decisions (adapters/bybit/README.md):
 * - option: markIv = `markPriceIv`; bidIv/askIv = `bidIv`/`askIv`, null when that side's price is 0 (Bybit
 *   prints 0 for "no quote"); a 0 IV next to a positive price is implied from that price (Black-76, r = 0, on
 *   `underlyingPrice`, src/quant/impliedVol.ts; issue 26: the fits weight each quote by its spread); forward = `underlyingPrice`; indexPrice =
 *   `indexPrice`; markPriceNative = `markPrice` (USDC); greeks = `delta`, `gamma`, `vega`, `theta` as
 *   printed; timestamp = the message `ts`. markPriceIv <= 0 or a missing forward/index: `bad-ticker`.
 * - IndexPrice events come from the option tickers' `indexPrice`, one per pair whenever the price
 *   changes or at most once per second of exchange time (Bybit has no separate index topic).
 * - linear (USDC perpetuals and futures): snapshot replaces the held record, delta is merged into it
 *   (a delta with no snapshot held: `delta-without-snapshot`); FutureQuote from the merged record:
 *   markPrice, indexPrice, and for perpetuals currentFunding = `fundingRate` (the rate for
 *   Bybit's interval), funding8h = fundingRate x 8 / fundingIntervalHour.
 * - funding points: when a perpetual's held `nextFundingTime` T passes (a message with ts >= T, or a
 *   record whose nextFundingTime moved past T), one FundingRate at T with interest = the
 *   `fundingRate` held before that message (the rate that settled) and intervalHours =
 *   `fundingIntervalHour` (else the listing's fundingInterval, else the move of nextFundingTime, else
 *   8). Each (symbol, time) is emitted once; REST history points can be marked with noteFunding.
 * - USDT/inverse symbols (`unsupported-instrument`) are ignored; control answers (pong, subscribe
 *   acks) give no events; failed subscriptions are `subscribe-error` drops.
 *
 * Source: Bybit V5 docs (see wire.ts for each message's page); samples in
 * test/fixtures/bybit/.
 */
import type { FundingRate, FutureQuote, InstrumentDefinition, MarketEvent, OptionQuote } from '../../src/domain/events.js';
import type { Pair } from '../../src/domain/markets.js';
import { CommonDropKinds, FundingDedupe, FundingHistoryBuilder, HOUR_MS, drop, eachListedItem, finite, fundingRate, futureQuote, instrumentDefinition, isRecord, ivFromPrice, listedExpiry, neverThrows, optionQuote, pos, zodDetail, type DroppedItem, type ListNormalizeResult } from '../shared/normalizeKit.js';
import type { NormalizeResult, Normalizer } from '../../src/domain/feeds.js';
import { parseBybitSymbol, pairOfBaseCoin, type BybitSymbol } from './instruments.js';
import { BybitInstrumentSchema, BybitRestEnvelopeSchema, CommandRespSchema, FundingHistoryItemSchema, LinearTickerSchema, OpResponseSchema, OptionTickerSchema, TickerMessageSchema, type BybitInstrument, type LinearTicker, type OptionTicker, type TickerMessage } from './wire.js';
import { fastFields, StringMemo, type FastFieldSpec } from '../shared/fastFields.js';

/** The `source` of every event this normalizer emits. */
const SOURCE = 'BYBIT' as const;

/** The fields of {@link OptionTickerSchema}, for its fast path (adapters/shared/fastFields.ts). */
const OPTION_TICKER_FIELDS: FastFieldSpec = {
  required: ['indexPrice', 'markPriceIv', 'underlyingPrice'],
  optional: ['bidPrice', 'bidSize', 'bidIv', 'askPrice', 'askSize', 'askIv', 'lastPrice', 'markPrice', 'delta', 'gamma', 'vega', 'theta', 'predictedDeliveryPrice'],
  strings: ['symbol'],
};

/** A ticker push checked by hand (the fast path of TickerMessageSchema), or null. */
function fastTickerMessage(raw: Record<string, unknown>): TickerMessage | null {
  const { type, ts, cs, id, data } = raw;
  if (type !== 'snapshot' && type !== 'delta') return null;
  if (typeof ts !== 'number' || !Number.isFinite(ts)) return null;
  if (cs !== undefined && (typeof cs !== 'number' || !Number.isFinite(cs))) return null;
  if (id !== undefined && typeof id !== 'string') return null;
  if (!isRecord(data)) return null;
  return raw as TickerMessage;
}

/** The stable drop labels of the Bybit normalizer (metrics, README). */
export const BybitDropKinds = {
  ...CommonDropKinds,
  deltaWithoutSnapshot: 'delta-without-snapshot',
  ignoredTopic: 'ignored-topic',
  unknownMessage: 'unknown-message',
  subscribeError: 'subscribe-error',
  restError: 'rest-error',
} as const;

/** Bybit's usual funding interval, hours (docs: fundingIntervalHour "8" in the examples). */
export const BYBIT_DEFAULT_FUNDING_INTERVAL_H = 8;

/**
 * Held linear ticker records, per symbol: `snapshot` replaces, `delta` is merged field by field
 * (Bybit: "if a response param is not found in the message, then its value has not changed").
 * Values are kept as printed (strings). Pure data structure; no validation here.
 */
export class BybitTickerBook {
  private readonly held = new Map<string, Readonly<Record<string, unknown>>>();

  /**
   * Apply one message's `data` for `symbol`. Returns the record held before (undefined if none) and
   * the merged record now held, or `{ok: false}` for a delta with no snapshot held (nothing changed).
   */
  apply(
    symbol: string,
    type: 'snapshot' | 'delta',
    data: Readonly<Record<string, unknown>>,
  ): { ok: true; previous: Readonly<Record<string, unknown>> | undefined; merged: Readonly<Record<string, unknown>> } | { ok: false } {
    const previous = this.held.get(symbol);
    if (type === 'delta' && previous === undefined) return { ok: false };
    const merged = Object.freeze(type === 'snapshot' ? { ...data } : { ...previous, ...data });
    this.held.set(symbol, merged);
    return { ok: true, previous, merged };
  }

  /** The merged record held for `symbol`. */
  get(symbol: string): Readonly<Record<string, unknown>> | undefined {
    return this.held.get(symbol);
  }

  /** Forget every record (after a reconnect the server sends fresh snapshots). */
  clear(): void {
    this.held.clear();
  }

  /** Number of symbols held. */
  get size(): number {
    return this.held.size;
  }
}

/** What the REST listing says about one symbol (registered into the normalizer). */
export interface BybitListingInfo {
  readonly instrument: BybitSymbol;
  /** Funding interval of a perpetual, hours (instruments-info `fundingInterval` minutes / 60). */
  readonly fundingIntervalHours: number | null;
}

/** Options of {@link BybitNormalizer}. */
export interface BybitNormalizerOptions {
  /** Per-symbol memory of emitted funding times (dedupe); oldest forgotten beyond this. Default 5 000. */
  readonly fundingMemory?: number;
  /** Minimum exchange-time gap between two unchanged IndexPrice events of a pair, s. Default 1. */
  readonly indexMinIntervalS?: number;
}

/** The stateful, deterministic Bybit normalizer (see the module docstring). Use {@link BybitNormalizer.normalize}. */
export class BybitNormalizer {
  /** Linear ticker records (snapshot + deltas merged). */
  readonly book = new BybitTickerBook();
  private readonly listing = new Map<string, BybitListingInfo>();
  private readonly lastIndex = new Map<string, { price: number; ts: number }>();
  private readonly fundingSeen: FundingDedupe;
  private readonly indexMinIntervalS: number;

  constructor(opts: BybitNormalizerOptions = {}) {
    this.fundingSeen = new FundingDedupe(opts.fundingMemory ?? 5_000);
    this.indexMinIntervalS = opts.indexMinIntervalS ?? 1;
  }

  /** Register listed instruments: their `deliveryTime` and funding interval win over the symbol. */
  registerListing(infos: Iterable<BybitListingInfo>): void {
    for (const i of infos) this.listing.set(i.instrument.name, i);
  }

  /** Mark a funding point (symbol, Unix s) as published; true when it was new. Never emitted again. */
  noteFunding(instrumentId: string, timestampS: number): boolean {
    return this.fundingSeen.note(instrumentId, timestampS);
  }

  /** The {@link Normalizer}: one parsed message + receive time (Unix s). Never throws. */
  readonly normalize: Normalizer = neverThrows((raw, receivedAtS) => this.inner(raw, receivedAtS), BybitDropKinds.internal);

  /** Parsed symbols (a pure function of the symbol), so that each name is parsed once. */
  private readonly names = new StringMemo((symbol: string) => parseBybitSymbol(symbol));

  private symbolInfo(symbol: string): { ok: true; inst: BybitSymbol } | { ok: false; reason: 'unsupported' | 'malformed'; detail: string } {
    const l = this.listing.get(symbol);
    if (l) return { ok: true, inst: l.instrument };
    const p = this.names.get(symbol);
    return p.ok ? { ok: true, inst: p.instrument } : p;
  }

  private inner(raw: unknown, receivedAtS: number): NormalizeResult {
    if (!isRecord(raw)) return drop(BybitDropKinds.malformed, `not a JSON object: ${typeof raw}`);
    if (!Number.isFinite(receivedAtS)) return drop(BybitDropKinds.malformed, `receivedAt ${receivedAtS}`);
    const topic = raw['topic'];
    if (typeof topic === 'string') {
      if (!topic.startsWith('tickers.')) return drop(BybitDropKinds.ignoredTopic, topic.split('.')[0]?.slice(0, 40) ?? topic);
      let msg = fastTickerMessage(raw);
      if (!msg) {
        const parsed = TickerMessageSchema.safeParse(raw);
        if (!parsed.success) return drop(BybitDropKinds.malformed, `${topic.slice(0, 60)}: ${zodDetail(parsed.error)}`);
        msg = parsed.data;
      }
      const m = { data: msg };
      const symbol = topic.slice('tickers.'.length);
      const data = m.data.data;
      if (data['symbol'] !== undefined && data['symbol'] !== symbol) return drop(BybitDropKinds.badTicker, `${symbol}: data.symbol ${String(data['symbol'])}`);
      const info = this.symbolInfo(symbol);
      if (!info.ok) return drop(info.reason === 'unsupported' ? BybitDropKinds.unsupportedInstrument : BybitDropKinds.badTicker, info.detail);
      if (!pos(m.data.ts)) return drop(BybitDropKinds.badTicker, `${symbol}: ts ${m.data.ts}`);
      return info.inst.type === 'option'
        ? this.optionTicker(info.inst, data, m.data.ts, receivedAtS)
        : this.linearTicker(info.inst, m.data.type, data, m.data.ts, receivedAtS);
    }
    if (raw['type'] === 'COMMAND_RESP') {
      const c = CommandRespSchema.safeParse(raw);
      if (!c.success) return drop(BybitDropKinds.malformed, `COMMAND_RESP: ${zodDetail(c.error)}`);
      const failed = c.data.data?.failTopics ?? [];
      if (c.data.success === false || failed.length > 0) return drop(BybitDropKinds.subscribeError, `failTopics ${failed.slice(0, 5).join(',')}`);
      return { ok: true, events: [] };
    }
    if (typeof raw['op'] === 'string') {
      const o = OpResponseSchema.safeParse(raw);
      if (!o.success) return drop(BybitDropKinds.malformed, `op answer: ${zodDetail(o.error)}`);
      if (o.data.success === false) return drop(BybitDropKinds.subscribeError, `${o.data.op}: ${o.data.ret_msg ?? ''}`.slice(0, 300));
      return { ok: true, events: [] };
    }
    return drop(BybitDropKinds.unknownMessage, Object.keys(raw).slice(0, 6).join(','));
  }

  private expiryOf(inst: BybitSymbol): number | null {
    return this.listing.get(inst.name)?.instrument.expirationTimestamp ?? inst.expirationTimestamp;
  }

  // ------------------------------------------------------------------ options

  private optionTicker(inst: BybitSymbol, data: Record<string, unknown>, tsMs: number, receivedAtS: number): NormalizeResult {
    let d = fastFields<OptionTicker>(data, OPTION_TICKER_FIELDS);
    if (!d) {
      const parsed = OptionTickerSchema.safeParse(data);
      if (!parsed.success) return drop(BybitDropKinds.badTicker, `${inst.name}: ${zodDetail(parsed.error)}`);
      d = parsed.data;
    }
    const ts = tsMs / 1000;
    const expiry = this.expiryOf(inst) as number;
    if (ts >= expiry) return drop(BybitDropKinds.closed, `${inst.name} at/after expiry`);
    if (!pos(d.markPriceIv)) return drop(BybitDropKinds.badTicker, `${inst.name}: markPriceIv ${d.markPriceIv}`);
    if (!pos(d.underlyingPrice)) return drop(BybitDropKinds.badTicker, `${inst.name}: underlyingPrice ${d.underlyingPrice}`);
    if (!pos(d.indexPrice)) return drop(BybitDropKinds.badTicker, `${inst.name}: indexPrice ${d.indexPrice}`);
    const events: MarketEvent[] = [];
    const idx = this.indexEvent(inst.pair, d.indexPrice, ts, receivedAtS);
    if (idx) events.push(idx);
    const g = [d.delta, d.gamma, d.vega, d.theta];
    const q: OptionQuote = optionQuote(SOURCE, inst, expiry, {
      markIv: d.markPriceIv,
      bidIv: ivOfSide(d.bidIv, d.bidPrice, d.underlyingPrice, inst.strike as number, (expiry - ts) / (365 * 86400), inst.optionType as 'C' | 'P'),
      askIv: ivOfSide(d.askIv, d.askPrice, d.underlyingPrice, inst.strike as number, (expiry - ts) / (365 * 86400), inst.optionType as 'C' | 'P'),
      markPriceNative: finite(d.markPrice) && d.markPrice >= 0 ? d.markPrice : null,
      forward: d.underlyingPrice,
      indexPrice: d.indexPrice,
      greeks: g.every(finite) ? { delta: d.delta as number, gamma: d.gamma as number, vega: d.vega as number, theta: d.theta as number } : null,
      timestamp: ts,
      receivedAt: receivedAtS,
    });
    events.push(q);
    return { ok: true, events };
  }

  private indexEvent(pair: Pair, price: number, ts: number, receivedAtS: number): MarketEvent | null {
    const key = `${pair.base}/${pair.quote}`;
    const last = this.lastIndex.get(key);
    if (last && ts < last.ts) return null;
    if (last && last.price === price && ts - last.ts < this.indexMinIntervalS) return null;
    this.lastIndex.set(key, { price, ts });
    return { kind: 'index', source: SOURCE, base: pair.base, quote: pair.quote, price, timestamp: ts, receivedAt: receivedAtS };
  }

  // ------------------------------------------------------------------ linear

  private linearTicker(inst: BybitSymbol, type: 'snapshot' | 'delta', data: Record<string, unknown>, tsMs: number, receivedAtS: number): NormalizeResult {
    const applied = this.book.apply(inst.name, type, data);
    if (!applied.ok) return drop(BybitDropKinds.deltaWithoutSnapshot, inst.name);
    const parsed = LinearTickerSchema.safeParse(applied.merged);
    if (!parsed.success) return drop(BybitDropKinds.badTicker, `${inst.name}: ${zodDetail(parsed.error)}`);
    const d = parsed.data;
    const ts = tsMs / 1000;
    const events: MarketEvent[] = [];
    const perpetual = inst.type === 'perpetual';
    let intervalH: number | null = null;
    if (perpetual) {
      intervalH = this.intervalHours(inst, d);
      const prev = applied.previous ? LinearTickerSchema.safeParse(applied.previous) : undefined;
      if (prev?.success) {
        const T = prev.data.nextFundingTime;
        const r = prev.data.fundingRate;
        const moved = pos(d.nextFundingTime) && pos(T) && d.nextFundingTime > T;
        if (pos(T) && finite(r) && (tsMs >= T || moved)) {
          const h = this.intervalHours(inst, prev.data) ?? (moved ? ((d.nextFundingTime as number) - T) / HOUR_MS : BYBIT_DEFAULT_FUNDING_INTERVAL_H);
          const point = this.fundingPoint(inst, T / 1000, r, h);
          if (point) events.push(point);
        }
      }
    }
    let expiry = this.expiryOf(inst);
    if (inst.type === 'future' && d.deliveryTime !== undefined && !this.listing.has(inst.name)) {
      const iso = Date.parse(d.deliveryTime);
      if (Number.isFinite(iso) && iso > 0) expiry = iso / 1000;
    }
    if (expiry !== null && ts >= expiry) return events.length ? { ok: true, events } : drop(BybitDropKinds.closed, `${inst.name} at/after expiry`);
    if (!pos(d.markPrice) || !pos(d.indexPrice)) {
      return events.length ? { ok: true, events } : drop(BybitDropKinds.badTicker, `${inst.name}: markPrice ${d.markPrice}, indexPrice ${d.indexPrice}`);
    }
    const rate = perpetual && finite(d.fundingRate) ? d.fundingRate : null;
    const q: FutureQuote = futureQuote(SOURCE, inst, perpetual ? null : expiry, {
      markPrice: d.markPrice,
      indexPrice: d.indexPrice,
      currentFunding: rate,
      funding8h: rate === null ? null : (rate * 8) / (intervalH ?? BYBIT_DEFAULT_FUNDING_INTERVAL_H),
      timestamp: ts,
      receivedAt: receivedAtS,
    });
    events.unshift(q);
    return { ok: true, events };
  }

  /** Funding interval of a perpetual, hours: the ticker's `fundingIntervalHour`, else the listing's; null when neither. */
  private intervalHours(inst: BybitSymbol, d: LinearTicker): number | null {
    if (pos(d.fundingIntervalHour)) return d.fundingIntervalHour;
    return this.listing.get(inst.name)?.fundingIntervalHours ?? null;
  }

  private fundingPoint(inst: BybitSymbol, timestampS: number, interest: number, intervalHours: number): FundingRate | null {
    if (!(intervalHours > 0)) return null;
    if (!this.noteFunding(inst.name, timestampS)) return null;
    return fundingRate(SOURCE, inst.name, inst.pair, interest, intervalHours, timestampS);
  }
}

/** A fresh {@link BybitNormalizer}'s `normalize` (e.g. for the replay feed). */
export function bybitNormalizer(opts?: BybitNormalizerOptions): Normalizer {
  return new BybitNormalizer(opts).normalize;
}

/** `result.list` and `nextPageCursor` of a REST body, or an error. */
export function bybitRestList(body: unknown): { ok: true; list: unknown[]; nextPageCursor: string } | { ok: false; detail: string } {
  const env = BybitRestEnvelopeSchema.safeParse(body);
  if (!env.success) return { ok: false, detail: `not a Bybit REST body: ${zodDetail(env.error)}` };
  if (env.data.retCode !== 0) return { ok: false, detail: `retCode ${env.data.retCode} ${env.data.retMsg ?? ''}`.trim() };
  return { ok: true, list: env.data.result?.list ?? [], nextPageCursor: env.data.result?.nextPageCursor ?? '' };
}

/** Result of {@link normalizeBybitInstruments}: definitions, drops and the listing facts to register. */
export interface BybitListingResult extends ListNormalizeResult<InstrumentDefinition> {
  readonly listing: BybitListingInfo[];
  /** `result.nextPageCursor` ("" on the last page). */
  readonly nextPageCursor: string;
}

/**
 * One page of GET /v5/market/instruments-info (category option or linear; the body or its
 * `result.list`) -> InstrumentDefinitions of the supported USDC pairs. Kept: `status: Trading`,
 * `settleCoin: USDC` (options: also quoteCoin USD for the older listings), linear
 * `contractType` LinearPerpetual/LinearFutures. Expiry = `deliveryTime` (ms -> s) for options and
 * futures when > 0 (more than a day away from the symbol's date: `bad-instrument`), else the
 * symbol's date at 08:00 UTC; a baseCoin or optionsType that disagrees with the symbol is
 * `bad-instrument`. `timestamp` = `launchTime` (s), else `receivedAtS`. Pure; never throws.
 * Source: /v5/market/instrument.
 */
export function normalizeBybitInstruments(body: unknown, receivedAtS: number): BybitListingResult {
  const events: InstrumentDefinition[] = [];
  const dropped: DroppedItem[] = [];
  const listing: BybitListingInfo[] = [];
  let list: unknown[];
  let nextPageCursor = '';
  if (Array.isArray(body)) list = body;
  else {
    const r = bybitRestList(body);
    if (!r.ok) return { events, dropped: [{ kind: BybitDropKinds.restError, detail: r.detail }], listing, nextPageCursor };
    list = r.list;
    nextPageCursor = r.nextPageCursor;
  }
  eachListedItem(list, BybitInstrumentSchema, BybitDropKinds.badInstrument, dropped, (it) => {
    const r = listedBybitInstrument(it);
    if (!r.ok) return r.drop;
    const { inst, expiry } = r;
    const fixed: BybitSymbol = { ...inst, expirationTimestamp: expiry };
    listing.push({
      instrument: fixed,
      fundingIntervalHours: inst.type === 'perpetual' && typeof it.fundingInterval === 'number' && it.fundingInterval > 0 ? it.fundingInterval / 60 : null,
    });
    events.push(instrumentDefinition(SOURCE, inst, expiry, pos(it.launchTime) ? it.launchTime / 1000 : receivedAtS));
    return null;
  });
  return { events, dropped, listing, nextPageCursor };
}

/**
 * One instruments-info item checked against its symbol: USDC-settled, the contract type of its kind, the base coin,
 * `Trading`, the option type, the delivery time within a day of the name's; its instrument and expiry (Unix s), or the
 * item's drop.
 */
function listedBybitInstrument(it: BybitInstrument): { ok: true; inst: BybitSymbol; expiry: number | null } | { ok: false; drop: DroppedItem } {
  const refuse = (kind: string, detail: string) => ({ ok: false as const, drop: { kind, detail } });
  const p = parseBybitSymbol(it.symbol);
  if (!p.ok) return refuse(p.reason === 'unsupported' ? BybitDropKinds.unsupportedInstrument : BybitDropKinds.badInstrument, p.detail);
  const inst = p.instrument;
  if (it.settleCoin !== undefined && it.settleCoin !== 'USDC') return refuse(BybitDropKinds.unsupportedInstrument, `${inst.name} settles in ${it.settleCoin}`);
  if (inst.type !== 'option') {
    const want = inst.type === 'perpetual' ? 'LinearPerpetual' : 'LinearFutures';
    if (it.contractType !== undefined && it.contractType !== want) return refuse(BybitDropKinds.unsupportedInstrument, `${inst.name} contractType ${it.contractType}`);
  }
  if (pairOfBaseCoin(it.baseCoin)?.base !== inst.pair.base) return refuse(BybitDropKinds.badInstrument, `${inst.name}: baseCoin ${it.baseCoin}`);
  if (it.status !== undefined && it.status !== 'Trading') return refuse(BybitDropKinds.inactive, `${inst.name} ${it.status}`);
  if (inst.type === 'option' && it.optionsType !== undefined && (it.optionsType === 'Call' ? 'C' : it.optionsType === 'Put' ? 'P' : '?') !== inst.optionType) {
    return refuse(BybitDropKinds.badInstrument, `${inst.name}: optionsType ${it.optionsType}`);
  }
  const listed = listedExpiry(inst.expirationTimestamp, it.deliveryTime);
  if (!listed) return refuse(BybitDropKinds.badInstrument, `${inst.name}: deliveryTime ${it.deliveryTime} far from its name`);
  return { ok: true, inst, expiry: listed.expiry };
}

/**
 * GET /v5/market/funding/history (the body or its `result.list`, any order) -> FundingRate points
 * ascending by time, one per `fundingRateTimestamp`: `interest` = `fundingRate` (fraction for the
 * interval); `intervalHours` = `intervalHours` when given (the listing's fundingInterval), else the
 * gap to the previous point of the symbol (the first takes the gap to the next; a lone point
 * {@link BYBIT_DEFAULT_FUNDING_INTERVAL_H}); `timestamp` = ms / 1000. Unsupported symbols are
 * dropped. Pure; never throws. Source: /v5/market/history-fund-rate.
 */
export function normalizeBybitFundingHistory(body: unknown, intervalHours?: number | null): ListNormalizeResult<FundingRate> {
  const dropped: DroppedItem[] = [];
  let list: unknown[];
  if (Array.isArray(body)) list = body;
  else {
    const r = bybitRestList(body);
    if (!r.ok) return { events: [], dropped: [{ kind: BybitDropKinds.restError, detail: r.detail }] };
    list = r.list;
  }
  const history = new FundingHistoryBuilder();
  eachListedItem(list, FundingHistoryItemSchema, BybitDropKinds.badFunding, dropped, (it) => {
    const p = parseBybitSymbol(it.symbol);
    if (!p.ok || p.instrument.type !== 'perpetual') return { kind: BybitDropKinds.unsupportedInstrument, detail: p.ok ? `${it.symbol}: not a perpetual` : p.detail };
    if (!pos(it.fundingRateTimestamp) || it.fundingRate === null) return { kind: BybitDropKinds.badFunding, detail: `${it.symbol}: ${it.fundingRateTimestamp} ${it.fundingRate}` };
    history.add(p.instrument, it.fundingRateTimestamp, it.fundingRate);
    return null;
  });
  return { events: history.events(SOURCE, BYBIT_DEFAULT_FUNDING_INTERVAL_H, intervalHours), dropped };
}

/**
 * One side's IV (fraction) of a Bybit option ticker: the printed IV when it is > 0 and that side has a price; a 0 (or
 * missing) IV next to a positive price is implied from the price (USDC, linear) by adapters/shared/normalizeKit.ts
 * ivFromPrice (Black-76, r = 0, on `underlyingPrice`); null when there is no price or no volatility gives it.
 * @param T years ACT/365 to expiry; F, K in USDC
 */
function ivOfSide(iv: number | null | undefined, price: number | null | undefined, F: number, K: number, T: number, optionType: 'C' | 'P'): number | null {
  if (price === 0) return null;
  if (typeof iv === 'number' && iv > 0 && Number.isFinite(iv)) return iv;
  return ivFromPrice(price, false, F, K, T, optionType);
}
