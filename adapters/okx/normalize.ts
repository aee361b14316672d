/**
 * OKX normalizer: raw OKX v5 public messages -> normalized {@link MarketEvent}s, or a counted drop.
 *
 * OKX splits what one Deribit ticker carries over several channels: `opt-summary` has the IVs and
 * the forward but no index; `mark-price` has the mark but no index; `index-tickers` has the index;
 * `funding-rate` the funding. So the normalizer is a small deterministic state machine
 * ({@link OkxNormalizer}): it keeps the latest index per instrument family, mark per instrument and
 * funding per swap, and joins them. No I/O, no clock: the same message sequence always gives the
 * same events (replay-safe). Never throws.
 *
 * Units converted here (src/domain/events.ts):
 * - every value is a JSON string parsed strictly (wire.ts `okxNum`: `""` = missing);
 * - ms timestamps -> Unix seconds (`/ 1000`); IVs are already fractions (`markVol` 0.3675 = 36.75 %).
 *
 * Decisions (adapters/okx/README.md):
 * - forward = `fwdPx` (OKX's forward for the expiry). The index is NOT the forward (tardis-node's
 *   OKX mapper used the index as the underlying price: that is the mistake avoided here).
 * - indexPrice of an OptionQuote = the latest `index-tickers` price of its family. Before the first
 *   index of a family has been seen, the fallback is the forward of the nearest expiry of that
 *   family (F(T) = S(1 + basis T): for OKX's daily expiries T < 1 day, an error of the order of
 *   basis x T, about 1e-4); such quotes are counted in {@link OkxNormalizer.indexFallbacks}.
 * - bid/ask IV `"0"` or `""` -> null (no order on that side); markVol <= 0 or missing -> dropped.
 * - greeks = OKX's Black-Scholes Greeks (`deltaBS`, `gammaBS`, `vegaBS` per vol point, `thetaBS`
 *   per day, USD); the plain `delta`/`gamma`/`vega`/`theta` are OKX's coin ("PA") Greeks, not kept.
 * - FutureQuote (futures, swaps) from `mark-price` joined with the family index (dropped as
 *   `no-index-yet` until one is seen); `tickers` only stand in before the first mark-price of an
 *   instrument (mark = mid of best bid/ask, else last) and are otherwise ignored.
 * - `funding-rate` -> the swap's currentFunding (rate for OKX's interval; funding8h = rate x 8 /
 *   intervalHours) and FundingRate points: current format, `settState: settled` -> one point at the
 *   previous settlement (prevFundingTime, else fundingTime - interval) with `settFundingRate`; old
 *   format (no settState) -> one point when `fundingTime` rolls forward, with the last rate seen
 *   for the settled time. Each (instrument, time) is emitted once.
 * - options of an expiry at/after their expiry (`closed-instrument`), unsupported families
 *   (`unsupported-instrument`/`unsupported-index`), and channels we do not use are counted drops.
 *
 * Source: OKX API v5 docs (see wire.ts for each message's section); samples in
 * test/fixtures/okx/.
 */
import type { FundingRate, FutureQuote, InstrumentDefinition, MarketEvent, OptionQuote } from '../../src/domain/events.js';
import { CommonDropKinds, FundingDedupe, FundingHistoryBuilder, HOUR_MS, drop, eachListedItem, fundingRate, futureQuote, instrumentDefinition, isRecord, listedExpiry, neverThrows, optionQuote, pos, zodDetail, type DroppedItem, type ListNormalizeResult } from '../shared/normalizeKit.js';
import type { NormalizeResult, Normalizer } from '../../src/domain/feeds.js';
import { fastFields, StringMemo, type FastFieldSpec } from '../shared/fastFields.js';
import { parseOkxInstId, pairOfFamily, type OkxInstrument } from './instruments.js';
import { FundingHistoryItemSchema, FundingRatePushSchema, IndexTickerSchema, MarkPriceSchema, OkxEventSchema, OkxInstrumentSchema, OkxPushSchema, OkxRestEnvelopeSchema, OptSummarySchema, TickerSchema, type FundingRatePush, type OkxInstrument as OkxInstrumentItem, type OptSummary } from './wire.js';

/** The `source` of every event this normalizer emits. */
const SOURCE = 'OKX' as const;

/** The fields of {@link OptSummarySchema}, for its fast path (adapters/shared/fastFields.ts). */
const OPT_SUMMARY_FIELDS: FastFieldSpec = {
  required: ['markVol', 'ts'],
  optional: ['delta', 'gamma', 'vega', 'theta', 'deltaBS', 'gammaBS', 'vegaBS', 'thetaBS', 'lever', 'bidVol', 'askVol', 'realVol', 'volLv', 'fwdPx'],
  strings: ['instId'],
  optionalStrings: ['instType', 'uly'],
};
const ARG_STRINGS = ['instId', 'instFamily', 'uly', 'instType'] as const;

/** A push `{arg: {channel, ...}, data: [...]}` checked by hand (the fast path of OkxPushSchema), or null. */
function fastPush(raw: Record<string, unknown>): { arg: { channel: string }; data: readonly unknown[] } | null {
  const arg = raw['arg'];
  const data = raw['data'];
  if (!isRecord(arg) || !Array.isArray(data) || typeof arg['channel'] !== 'string') return null;
  if (raw['action'] !== undefined && typeof raw['action'] !== 'string') return null;
  for (const k of ARG_STRINGS) if (arg[k] !== undefined && typeof arg[k] !== 'string') return null;
  return { arg: arg as { channel: string }, data };
}

/** The stable drop labels of the OKX normalizer (metrics, README). */
export const OkxDropKinds = {
  ...CommonDropKinds,
  badOptSummary: 'bad-opt-summary',
  noForward: 'no-forward',
  badIndex: 'bad-index',
  badMark: 'bad-mark-price',
  noIndexYet: 'no-index-yet',
  unsupportedIndex: 'unsupported-index',
  ignoredChannel: 'ignored-channel',
  unknownChannel: 'unknown-channel',
  unknownEvent: 'unknown-event',
  wsError: 'ws-error',
  restError: 'rest-error',
} as const;

/** OKX's usual funding interval, hours (docs: funding rate channel, "currently set at 8 hours"). */
export const OKX_DEFAULT_FUNDING_INTERVAL_H = 8;

type ItemResult = { ok: true; events: MarketEvent[] } | { ok: false; kind: string; detail: string };

function nameDrop(reason: 'unsupported' | 'malformed', bad: string): string {
  return reason === 'unsupported' ? OkxDropKinds.unsupportedInstrument : bad;
}

/**
 * The funding point settled by a current-format `funding-rate` push, or null. Requires
 * `settState: "settled"` and a `settFundingRate`: the point is at `prevFundingTime` when printed,
 * else at `fundingTime - (nextFundingTime - fundingTime)`; `interest` = `settFundingRate`
 * (fraction, for that interval as OKX states it); `intervalHours` = fundingTime - point time.
 * Times Unix seconds. Pure. Source: docs #public-data-websocket-funding-rate-channel (settState,
 * settFundingRate: "if settled, the funding rate used for the previous settlement cycle").
 */
export function okxSettledFundingPoint(p: FundingRatePush): { timestamp: number; interest: number; intervalHours: number } | null {
  if (p.settState !== 'settled' || p.settFundingRate === null) return null;
  const ft = p.fundingTime;
  if (!pos(ft)) return null;
  let at: number | null = null;
  if (pos(p.prevFundingTime) && p.prevFundingTime < ft) at = p.prevFundingTime;
  else if (pos(p.nextFundingTime) && p.nextFundingTime > ft) at = ft - (p.nextFundingTime - ft);
  if (at === null || !(at > 0)) return null;
  return { timestamp: at / 1000, interest: p.settFundingRate, intervalHours: (ft - at) / HOUR_MS };
}

interface Held {
  readonly price: number;
  /** Exchange time, Unix s. */
  readonly ts: number;
}

interface HeldFunding {
  readonly rate: number;
  /** Settlement time of `rate`, Unix ms (as printed). */
  readonly fundingTimeMs: number;
  readonly intervalHours: number;
  /** True when the push carried `settState` (current format). */
  readonly current: boolean;
}

/** Options of {@link OkxNormalizer}. */
export interface OkxNormalizerOptions {
  /**
   * Called once per dropped ITEM of a push whose other items were kept (or beyond the first
   * dropped item of a push whose items were all dropped: that first one is the NormalizeResult).
   * Wire it to the feed's DropCounter so that every bad item is counted exactly once.
   */
  readonly onItemDrop?: (kind: string, detail: string) => void;
  /** Per-instrument memory of emitted funding times (dedupe); oldest forgotten beyond this. Default 5 000. */
  readonly fundingMemory?: number;
}

/**
 * The stateful, deterministic OKX normalizer (see the module docstring). Use
 * {@link OkxNormalizer.normalize} as a {@link Normalizer}. One instance per connection set
 * (feed) or per replayed file.
 */
export class OkxNormalizer {
  private readonly index = new Map<string, Held>();
  private readonly nearestForward = new Map<string, { expiry: number; forward: number }>();
  private readonly marks = new Map<string, Held>();
  private readonly funding = new Map<string, HeldFunding>();
  private readonly fundingSeen: FundingDedupe;
  private readonly expiries = new Map<string, number>();
  private readonly onItemDrop: (kind: string, detail: string) => void;
  /** Parsed instrument ids (a pure function of the id), so that each name is parsed once. */
  private readonly names = new StringMemo((id: string) => parseOkxInstId(id));
  private fallbacks = 0;

  constructor(opts: OkxNormalizerOptions = {}) {
    this.onItemDrop = opts.onItemDrop ?? (() => {});
    this.fundingSeen = new FundingDedupe(opts.fundingMemory ?? 5_000);
  }

  /** OptionQuotes emitted with the nearest-expiry forward as index (no index seen yet for the family). */
  get indexFallbacks(): number {
    return this.fallbacks;
  }

  /** Latest index of a family (`BTC-USD`), Unix s and price; undefined before the first. */
  latestIndex(family: string): { price: number; timestamp: number } | undefined {
    const h = this.index.get(family);
    return h ? { price: h.price, timestamp: h.ts } : undefined;
  }

  /**
   * Record listed expiries (from {@link normalizeOkxInstruments}): quotes of these instruments use
   * the listing's `expTime` instead of the date in the name.
   */
  registerInstruments(defs: readonly InstrumentDefinition[]): void {
    for (const d of defs) if (d.source === SOURCE && d.expirationTimestamp !== null) this.expiries.set(d.instrument, d.expirationTimestamp);
  }

  /**
   * Mark a funding point (instrument, Unix s) as already published (e.g. from the REST history);
   * returns true when it was new. The normalizer never emits a marked point again.
   */
  noteFunding(instrumentId: string, timestampS: number): boolean {
    return this.fundingSeen.note(instrumentId, timestampS);
  }

  /** The {@link Normalizer}: one parsed message (or the text `pong`) + receive time (Unix s). Never throws. */
  readonly normalize: Normalizer = neverThrows((raw, receivedAtS) => this.inner(raw, receivedAtS), OkxDropKinds.internal);

  private inner(raw: unknown, receivedAtS: number): NormalizeResult {
    if (raw === 'pong') return { ok: true, events: [] };
    if (!isRecord(raw)) return drop(OkxDropKinds.malformed, `not a JSON object: ${typeof raw}`);
    if (!Number.isFinite(receivedAtS)) return drop(OkxDropKinds.malformed, `receivedAt ${receivedAtS}`);
    if (typeof raw['event'] === 'string') return this.event(raw);
    if (!('arg' in raw) || !('data' in raw)) return drop(OkxDropKinds.malformed, 'neither a push nor an event');
    let pushed = fastPush(raw);
    if (!pushed) {
      const push = OkxPushSchema.safeParse(raw);
      if (!push.success) return drop(OkxDropKinds.malformed, `push: ${zodDetail(push.error)}`);
      pushed = push.data;
    }
    const { arg, data } = pushed;
    let handle: (item: unknown, recv: number) => ItemResult;
    switch (arg.channel) {
      case 'opt-summary':
        return this.optSummary(data, receivedAtS);
      case 'index-tickers':
        handle = (it, r) => this.indexTicker(it, r);
        break;
      case 'mark-price':
        handle = (it, r) => this.markPrice(it, r);
        break;
      case 'tickers':
        handle = (it, r) => this.ticker(it, r);
        break;
      case 'funding-rate':
        handle = (it, r) => this.fundingRate(it, r);
        break;
      case 'books':
      case 'books5':
      case 'books-l2-tbt':
      case 'books50-l2-tbt':
      case 'bbo-tbt':
      case 'trades':
      case 'trades-all':
      case 'open-interest':
      case 'price-limit':
      case 'estimated-price':
        return drop(OkxDropKinds.ignoredChannel, arg.channel);
      default:
        return drop(OkxDropKinds.unknownChannel, arg.channel.slice(0, 80));
    }
    return this.combine(data.map((it) => handle(it, receivedAtS)));
  }

  /** Merge per-item results: ok with the kept events; every dropped item counted exactly once. */
  private combine(results: readonly ItemResult[]): NormalizeResult {
    const events: MarketEvent[] = [];
    const drops: { kind: string; detail: string }[] = [];
    for (const r of results) {
      if (r.ok) events.push(...r.events);
      else drops.push({ kind: r.kind, detail: r.detail });
    }
    if (events.length === 0 && drops.length > 0 && drops.length === results.length) {
      for (const d of drops.slice(1)) this.onItemDrop(d.kind, d.detail);
      const first = drops[0] as { kind: string; detail: string };
      return { ok: false, kind: first.kind, detail: first.detail };
    }
    for (const d of drops) this.onItemDrop(d.kind, d.detail);
    return { ok: true, events };
  }

  private event(raw: Record<string, unknown>): NormalizeResult {
    const e = OkxEventSchema.safeParse(raw);
    if (!e.success) return drop(OkxDropKinds.malformed, `event: ${zodDetail(e.error)}`);
    const ev = e.data;
    switch (ev.event) {
      case 'subscribe':
      case 'unsubscribe':
      case 'notice':
        return { ok: true, events: [] };
      case 'error':
        return drop(OkxDropKinds.wsError, `${ev.code ?? '?'} ${ev.msg ?? ''}`.slice(0, 300));
      default:
        return drop(OkxDropKinds.unknownEvent, ev.event.slice(0, 80));
    }
  }

  private expiryOf(inst: OkxInstrument): number | null {
    return this.expiries.get(inst.name) ?? inst.expirationTimestamp;
  }

  // ------------------------------------------------------------------ options

  private optSummary(data: readonly unknown[], receivedAtS: number): NormalizeResult {
    interface Ok {
      inst: OkxInstrument;
      d: OptSummary;
      expiry: number;
      ts: number;
    }
    const results: ItemResult[] = [];
    const good: (Ok | null)[] = [];
    for (const item of data) {
      const r = this.parseOptItem(item);
      if ('kind' in r) {
        results.push(r);
        good.push(null);
      } else {
        results.push({ ok: true, events: [] });
        good.push(r);
      }
    }
    // Nearest-expiry forward per family (fallback index), from this push and earlier ones.
    for (const g of good) {
      if (!g) continue;
      const cur = this.nearestForward.get(g.inst.family);
      // keep the shortest live expiry; a held expiry already past (<= this item's time) is replaced
      if (!cur || g.expiry <= cur.expiry || cur.expiry <= g.ts) this.nearestForward.set(g.inst.family, { expiry: g.expiry, forward: g.d.fwdPx as number });
    }
    for (let i = 0; i < good.length; i++) {
      const g = good[i];
      if (!g) continue;
      const idx = this.index.get(g.inst.family);
      let indexPrice: number;
      if (idx) indexPrice = idx.price;
      else {
        indexPrice = (this.nearestForward.get(g.inst.family) as { forward: number }).forward;
        this.fallbacks += 1;
      }
      results[i] = { ok: true, events: [this.optionQuote(g.inst, g.d, g.expiry, g.ts, indexPrice, receivedAtS)] };
    }
    return this.combine(results);
  }

  private parseOptItem(item: unknown): { inst: OkxInstrument; d: OptSummary; expiry: number; ts: number } | { ok: false; kind: string; detail: string } {
    const id = isRecord(item) ? item['instId'] : undefined;
    const p = typeof id === 'string' ? this.names.get(id) : parseOkxInstId(id);
    if (!p.ok) return { ok: false, kind: nameDrop(p.reason, OkxDropKinds.badOptSummary), detail: p.detail };
    const inst = p.instrument;
    if (inst.type !== 'option') return drop(OkxDropKinds.badOptSummary, `${inst.name} is not an option`);
    let d = fastFields<OptSummary>(item as Record<string, unknown>, OPT_SUMMARY_FIELDS);
    if (!d) {
      const parsed = OptSummarySchema.safeParse(item);
      if (!parsed.success) return drop(OkxDropKinds.badOptSummary, `${inst.name}: ${zodDetail(parsed.error)}`);
      d = parsed.data;
    }
    if (!pos(d.ts)) return drop(OkxDropKinds.badOptSummary, `${inst.name}: ts ${d.ts}`);
    const ts = d.ts / 1000;
    const expiry = this.expiryOf(inst) as number;
    if (ts >= expiry) return drop(OkxDropKinds.closed, `${inst.name} at/after expiry`);
    if (!pos(d.markVol)) return drop(OkxDropKinds.badOptSummary, `${inst.name}: markVol ${d.markVol}`);
    if (!pos(d.fwdPx)) return drop(OkxDropKinds.noForward, `${inst.name}: fwdPx ${d.fwdPx === null ? 'missing' : d.fwdPx}`);
    return { inst, d, expiry, ts };
  }

  private optionQuote(inst: OkxInstrument, d: OptSummary, expiry: number, ts: number, indexPrice: number, receivedAtS: number): OptionQuote {
    const bs = [d.deltaBS, d.gammaBS, d.vegaBS, d.thetaBS];
    const greeks = bs.every((v) => typeof v === 'number' && Number.isFinite(v))
      ? { delta: d.deltaBS as number, gamma: d.gammaBS as number, vega: d.vegaBS as number, theta: d.thetaBS as number }
      : null;
    return optionQuote(SOURCE, inst, expiry, {
      markIv: d.markVol as number,
      bidIv: pos(d.bidVol) ? d.bidVol : null,
      askIv: pos(d.askVol) ? d.askVol : null,
      markPriceNative: null,
      forward: d.fwdPx as number,
      indexPrice,
      greeks,
      timestamp: ts,
      receivedAt: receivedAtS,
    });
  }

  // ------------------------------------------------------------------ index

  private indexTicker(item: unknown, receivedAtS: number): ItemResult {
    const parsed = IndexTickerSchema.safeParse(item);
    if (!parsed.success) return drop(OkxDropKinds.badIndex, zodDetail(parsed.error));
    const d = parsed.data;
    const pair = pairOfFamily(d.instId);
    if (!pair) return drop(OkxDropKinds.unsupportedIndex, d.instId.slice(0, 40));
    if (!pos(d.idxPx)) return drop(OkxDropKinds.badIndex, `${d.instId}: idxPx ${d.idxPx}`);
    if (!pos(d.ts)) return drop(OkxDropKinds.badIndex, `${d.instId}: ts ${d.ts}`);
    const ts = d.ts / 1000;
    const held = this.index.get(d.instId);
    if (!held || ts >= held.ts) this.index.set(d.instId, { price: d.idxPx, ts });
    return { ok: true, events: [{ kind: 'index', source: SOURCE, base: pair.base, quote: pair.quote, price: d.idxPx, timestamp: ts, receivedAt: receivedAtS }] };
  }

  // ------------------------------------------------------------------ futures and swaps

  private futureInstrument(id: unknown, bad: string): { inst: OkxInstrument } | ItemResult {
    const p = parseOkxInstId(id);
    if (!p.ok) return drop(nameDrop(p.reason, bad), p.detail);
    if (p.instrument.type === 'option') return drop(OkxDropKinds.ignoredChannel, `option ${p.instrument.name} on a futures channel`);
    return { inst: p.instrument };
  }

  private futureQuote(inst: OkxInstrument, markPrice: number, ts: number, receivedAtS: number): ItemResult {
    const idx = this.index.get(inst.family);
    if (!idx) return drop(OkxDropKinds.noIndexYet, `${inst.name}: no ${inst.family} index yet`);
    const expiry = this.expiryOf(inst);
    if (expiry !== null && ts >= expiry) return drop(OkxDropKinds.closed, `${inst.name} at/after expiry`);
    const perpetual = inst.type === 'perpetual';
    const f = perpetual ? this.funding.get(inst.name) : undefined;
    const q: FutureQuote = futureQuote(SOURCE, inst, expiry, {
      markPrice,
      indexPrice: idx.price,
      currentFunding: f ? f.rate : null,
      funding8h: f ? (f.rate * 8) / f.intervalHours : null,
      timestamp: ts,
      receivedAt: receivedAtS,
    });
    return { ok: true, events: [q] };
  }

  private markPrice(item: unknown, receivedAtS: number): ItemResult {
    const id = isRecord(item) ? item['instId'] : undefined;
    const fi = this.futureInstrument(id, OkxDropKinds.badMark);
    if ('ok' in fi) return fi;
    const parsed = MarkPriceSchema.safeParse(item);
    if (!parsed.success) return drop(OkxDropKinds.badMark, `${fi.inst.name}: ${zodDetail(parsed.error)}`);
    const d = parsed.data;
    if (!pos(d.markPx)) return drop(OkxDropKinds.badMark, `${fi.inst.name}: markPx ${d.markPx}`);
    if (!pos(d.ts)) return drop(OkxDropKinds.badMark, `${fi.inst.name}: ts ${d.ts}`);
    const ts = d.ts / 1000;
    const held = this.marks.get(fi.inst.name);
    if (!held || ts >= held.ts) this.marks.set(fi.inst.name, { price: d.markPx, ts });
    return this.futureQuote(fi.inst, d.markPx, ts, receivedAtS);
  }

  private ticker(item: unknown, receivedAtS: number): ItemResult {
    const id = isRecord(item) ? item['instId'] : undefined;
    const fi = this.futureInstrument(id, OkxDropKinds.badTicker);
    if ('ok' in fi) return fi;
    const parsed = TickerSchema.safeParse(item);
    if (!parsed.success) return drop(OkxDropKinds.badTicker, `${fi.inst.name}: ${zodDetail(parsed.error)}`);
    if (this.marks.has(fi.inst.name)) return { ok: true, events: [] }; // mark-price is the source once seen
    const d = parsed.data;
    if (!pos(d.ts)) return drop(OkxDropKinds.badTicker, `${fi.inst.name}: ts ${d.ts}`);
    const mark = pos(d.bidPx) && pos(d.askPx) ? (d.bidPx + d.askPx) / 2 : pos(d.last) ? d.last : null;
    if (mark === null) return drop(OkxDropKinds.badTicker, `${fi.inst.name}: no bid/ask or last`);
    return this.futureQuote(fi.inst, mark, d.ts / 1000, receivedAtS);
  }

  // ------------------------------------------------------------------ funding

  private fundingRate(item: unknown, receivedAtS: number): ItemResult {
    const id = isRecord(item) ? item['instId'] : undefined;
    const p = parseOkxInstId(id);
    if (!p.ok) return drop(nameDrop(p.reason, OkxDropKinds.badFunding), p.detail);
    const inst = p.instrument;
    if (inst.type !== 'perpetual') return drop(OkxDropKinds.unsupportedInstrument, `${inst.name}: funding of a non-swap`);
    const parsed = FundingRatePushSchema.safeParse(item);
    if (!parsed.success) return drop(OkxDropKinds.badFunding, `${inst.name}: ${zodDetail(parsed.error)}`);
    const d = parsed.data;
    if (d.fundingRate === null || !pos(d.fundingTime)) return drop(OkxDropKinds.badFunding, `${inst.name}: fundingRate ${d.fundingRate}, fundingTime ${d.fundingTime}`);
    const prev = this.funding.get(inst.name);
    const interval =
      pos(d.nextFundingTime) && d.nextFundingTime > d.fundingTime
        ? (d.nextFundingTime - d.fundingTime) / HOUR_MS
        : prev && d.fundingTime > prev.fundingTimeMs
          ? (d.fundingTime - prev.fundingTimeMs) / HOUR_MS
          : (prev?.intervalHours ?? OKX_DEFAULT_FUNDING_INTERVAL_H);
    const current = d.settState !== undefined;
    const events: MarketEvent[] = [];
    // Settled points.
    const settled = okxSettledFundingPoint(d);
    if (settled) {
      const ev = this.fundingPoint(inst, settled.timestamp, settled.interest, settled.intervalHours);
      if (ev) events.push(ev);
    } else if (!current && prev && !prev.current && d.fundingTime > prev.fundingTimeMs) {
      // Old format: fundingTime rolled forward -> the previous one settled at the last rate seen.
      const ev = this.fundingPoint(inst, prev.fundingTimeMs / 1000, prev.rate, (d.fundingTime - prev.fundingTimeMs) / HOUR_MS);
      if (ev) events.push(ev);
    }
    if (!prev || d.fundingTime >= prev.fundingTimeMs) {
      this.funding.set(inst.name, { rate: d.fundingRate, fundingTimeMs: d.fundingTime, intervalHours: interval, current });
    }
    // The swap's quote with the new current funding, when a mark is held.
    const mark = this.marks.get(inst.name);
    if (mark && this.index.has(inst.family)) {
      const ts = pos(d.ts) ? d.ts / 1000 : mark.ts;
      const q = this.futureQuote(inst, mark.price, ts, receivedAtS);
      if (q.ok) events.unshift(...q.events);
    }
    return { ok: true, events };
  }

  private fundingPoint(inst: OkxInstrument, timestampS: number, interest: number, intervalHours: number): FundingRate | null {
    if (!(intervalHours > 0) || !Number.isFinite(interest)) return null;
    if (!this.noteFunding(inst.name, timestampS)) return null;
    return fundingRate(SOURCE, inst.name, inst.pair, interest, intervalHours, timestampS);
  }
}

/** A fresh {@link OkxNormalizer}'s `normalize` (e.g. for the replay feed): stateful per call of this factory. */
export function okxNormalizer(opts?: OkxNormalizerOptions): Normalizer {
  return new OkxNormalizer(opts).normalize;
}

/** The `data` array of a REST body (`{code:"0", data}`) or a bare array; an error for anything else. */
function restData(body: unknown): { ok: true; data: unknown[] } | { ok: false; detail: string } {
  if (Array.isArray(body)) return { ok: true, data: body };
  const env = OkxRestEnvelopeSchema.safeParse(body);
  if (!env.success) return { ok: false, detail: `not an OKX REST body: ${zodDetail(env.error)}` };
  if (env.data.code !== '0') return { ok: false, detail: `code ${env.data.code} ${env.data.msg ?? ''}`.trim() };
  return { ok: true, data: env.data.data ?? [] };
}

/**
 * GET /api/v5/public/instruments (OPTION, FUTURES or SWAP; the body or its `data` array) ->
 * InstrumentDefinitions of the supported families, plus per-item drops. Kept: `state: live` only.
 * Expiry = `expTime` (ms -> s) when printed, else the date in the instId (08:00 UTC); an `expTime`
 * more than a day away from the named date, a strike `stk` or `optType` that disagrees with the id,
 * or an `instType` that does not match the id's shape is `bad-instrument`. `timestamp` = `listTime`
 * (s), else `receivedAtS`. Pure; never throws. Source: #public-data-rest-api-get-instruments.
 */
export function normalizeOkxInstruments(body: unknown, receivedAtS: number): ListNormalizeResult<InstrumentDefinition> {
  const events: InstrumentDefinition[] = [];
  const dropped: DroppedItem[] = [];
  const r = restData(body);
  if (!r.ok) return { events, dropped: [{ kind: OkxDropKinds.restError, detail: r.detail }] };
  eachListedItem(r.data, OkxInstrumentSchema, OkxDropKinds.badInstrument, dropped, (it) => {
    const checked = listedOkxInstrument(it);
    if (!checked.ok) return checked.drop;
    events.push(instrumentDefinition(SOURCE, checked.inst, checked.expiry, pos(it.listTime) ? it.listTime / 1000 : receivedAtS));
    return null;
  });
  return { events, dropped };
}

/**
 * One instruments item checked against its instId: the instType of its shape, `live`, the expTime within a day of
 * the name's, an option's strike and type; its instrument and expiry (Unix s), or the item's drop.
 */
function listedOkxInstrument(it: OkxInstrumentItem): { ok: true; inst: OkxInstrument; expiry: number | null } | { ok: false; drop: DroppedItem } {
  const refuse = (detail: string, kind: string = OkxDropKinds.badInstrument) => ({ ok: false as const, drop: { kind, detail } });
  const p = parseOkxInstId(it.instId);
  if (!p.ok) return refuse(p.detail, nameDrop(p.reason, OkxDropKinds.badInstrument));
  const inst = p.instrument;
  const expected = inst.type === 'option' ? 'OPTION' : inst.type === 'future' ? 'FUTURES' : 'SWAP';
  if (it.instType !== expected) return refuse(`${inst.name}: instType ${it.instType}`);
  if (it.state !== undefined && it.state !== 'live') return refuse(`${inst.name} ${it.state}`, OkxDropKinds.inactive);
  const listed = listedExpiry(inst.expirationTimestamp, it.expTime);
  if (!listed) return refuse(`${inst.name}: expTime ${it.expTime} far from its name`);
  if (inst.type === 'option') {
    const k = inst.strike as number;
    if (it.stk !== null && Math.abs(it.stk - k) > 1e-9 * k) return refuse(`${inst.name}: stk ${it.stk}`);
    if (it.optType !== undefined && it.optType !== '' && it.optType !== inst.optionType) return refuse(`${inst.name}: optType ${it.optType}`);
  }
  return { ok: true, inst, expiry: listed.expiry };
}

/**
 * GET /api/v5/public/funding-rate-history (the body or its `data` array, any order) -> FundingRate
 * points ascending by time, one per `fundingTime`: `interest` = `realizedRate` (OKX: "actual funding
 * rate") when printed, else `fundingRate`, fraction for the interval; `intervalHours` = the gap to
 * the previous point of the same instrument (the first point takes the gap to the next one; a lone
 * point {@link OKX_DEFAULT_FUNDING_INTERVAL_H}); `timestamp` = fundingTime / 1000. Items of
 * unsupported instruments are dropped. Pure; never throws.
 * Source: #public-data-rest-api-get-funding-rate-history.
 */
export function normalizeOkxFundingHistory(body: unknown): ListNormalizeResult<FundingRate> {
  const dropped: DroppedItem[] = [];
  const r = restData(body);
  if (!r.ok) return { events: [], dropped: [{ kind: OkxDropKinds.restError, detail: r.detail }] };
  const history = new FundingHistoryBuilder();
  eachListedItem(r.data, FundingHistoryItemSchema, OkxDropKinds.badFunding, dropped, (it) => {
    const p = parseOkxInstId(it.instId);
    if (!p.ok) return { kind: nameDrop(p.reason, OkxDropKinds.badFunding), detail: p.detail };
    if (p.instrument.type !== 'perpetual') return { kind: OkxDropKinds.unsupportedInstrument, detail: `${it.instId}: not a swap` };
    const rate = it.realizedRate ?? it.fundingRate;
    if (!pos(it.fundingTime) || rate === null) return { kind: OkxDropKinds.badFunding, detail: `${it.instId}: fundingTime ${it.fundingTime}, rate ${rate}` };
    history.add(p.instrument, it.fundingTime, rate);
    return null;
  });
  return { events: history.events(SOURCE, OKX_DEFAULT_FUNDING_INTERVAL_H), dropped };
}
