/**
 * Helpers shared by the exchange normalizers (adapters/deribit, okx, bybit `normalize.ts`): drop
 * results, strict number guards, zod issue summaries, the never-throw wrapper, funding-point
 * deduplication and the event literals every venue builds the same way.
 *
 * Everything here is pure (the {@link FundingDedupe} holds only its own memory), never throws, and
 * converts no units: callers pass times already in Unix seconds, except where a parameter's name
 * says ms. Source: src/domain/feeds.ts (NormalizeResult, Normalizer); src/domain/events.ts (event shapes).
 */
import type { FundingRate, FutureQuote, InstrumentDefinition, OptionQuote } from '../../src/domain/events.js';
import type { Pair, Source } from '../../src/domain/markets.js';
import type { Normalizer } from '../../src/domain/feeds.js';
import { impliedVolBlack76 } from '../../src/quant/impliedVol.js';

/** One hour in milliseconds (exchange funding times are ms). */
export const HOUR_MS = 3_600_000;

/**
 * The drop labels every venue's normalizer uses with the same meaning (metrics and the venues'
 * README.md); each venue's `...DropKinds` spreads these and adds its own.
 */
export const CommonDropKinds = {
  /** Not JSON, not an object, or an envelope that fails its schema. */
  malformed: 'malformed',
  badTicker: 'bad-ticker',
  badInstrument: 'bad-instrument',
  badFunding: 'bad-funding',
  /** A quote at/after its instrument's expiry, or of an instrument not open for trading. */
  closed: 'closed-instrument',
  /** A listing item that is not live (inactive, suspended, pre-listing...). */
  inactive: 'inactive-instrument',
  /** A well-formed instrument outside the spec's pair table (or a kind we do not follow). */
  unsupportedInstrument: 'unsupported-instrument',
  /** An exception inside the normalizer (a bug), caught by {@link neverThrows}. */
  internal: 'normalizer-error',
} as const;

/** One dropped item with its counting label (the venue's `...DropKinds`). */
export interface DroppedItem {
  readonly kind: string;
  readonly detail: string;
}

/** Result of normalizing a list (REST listing, funding history): kept events and per-item drops. */
export interface ListNormalizeResult<E> {
  readonly events: E[];
  readonly dropped: DroppedItem[];
}

/**
 * A counted drop: the `ok: false` arm of {@link NormalizeResult} (also of a venue's per-item result).
 * `kind` is the stable label, `detail` a short human-readable reason.
 */
export function drop(kind: string, detail: string): { ok: false; kind: string; detail: string } {
  return { ok: false, kind, detail };
}

/** True for a plain JSON object (not null, not an array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The first three issues of a zod error as `path: message` joined by `; ` (`(root)` for an empty
 * path); structural, so it takes any zod version's error.
 */
export function zodDetail(err: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  return err.issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`)
    .join('; ');
}

/** True for a finite number > 0 (exchanges print 0 or nothing for "no value"). */
export function pos(v: number | null | undefined): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0;
}

/** True for a finite number (any sign). */
export function finite(v: number | null | undefined): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/** The message of a thrown value: `Error.message`, else `String(e)`. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Wraps a normalizer so that it never throws: an exception becomes a drop of `internalKind` (the
 * venue's `normalizer-error`) with the exception's message. src/domain/feeds.ts: "Never throws".
 */
export function neverThrows(normalize: Normalizer, internalKind: string): Normalizer {
  return (raw, receivedAtS) => {
    try {
      return normalize(raw, receivedAtS);
    } catch (e) {
      return drop(internalKind, errorMessage(e));
    }
  };
}

/**
 * Memory of the funding points already published, per instrument: {@link FundingDedupe.note} is
 * true the first time an (instrument, Unix s) pair is seen, false after. Beyond `memory` points of
 * one instrument the oldest is forgotten. Used so that a point read from the REST history and from
 * the stream (or read again after a reconnect) is emitted once.
 */
export class FundingDedupe {
  private readonly seen = new Map<string, Set<number>>();

  /** @param memory points remembered per instrument (oldest forgotten beyond), e.g. 5 000. */
  constructor(private readonly memory: number) {}

  /** Record (instrumentId, timestampS); true when it was new. */
  note(instrumentId: string, timestampS: number): boolean {
    let seen = this.seen.get(instrumentId);
    if (!seen) {
      seen = new Set();
      this.seen.set(instrumentId, seen);
    }
    if (seen.has(timestampS)) return false;
    seen.add(timestampS);
    if (seen.size > this.memory) seen.delete(Math.min(...seen));
    return true;
  }
}

/** The fields every venue's parsed instrument has (DeribitInstrument, OkxInstrument, BybitSymbol). */
export interface VenueInstrument {
  readonly name: string;
  readonly pair: Pair;
  readonly type: 'option' | 'future' | 'perpetual';
  readonly strike: number | null;
  readonly optionType: 'C' | 'P' | null;
  readonly inverse: boolean;
}

/**
 * An InstrumentDefinition event (src/domain/events.ts) of `inst` with the venue's expiry (Unix s,
 * null for perpetuals) and listing time `timestamp` (Unix s).
 */
export function instrumentDefinition(source: Source, inst: VenueInstrument, expirationTimestamp: number | null, timestamp: number): InstrumentDefinition {
  return {
    kind: 'instrument',
    source,
    instrument: inst.name,
    base: inst.pair.base,
    quote: inst.pair.quote,
    type: inst.type,
    expirationTimestamp,
    strike: inst.strike,
    optionType: inst.optionType,
    inverse: inst.inverse,
    timestamp,
  };
}

/** The market fields of an OptionQuote (all but the instrument's identity): what {@link optionQuote} takes. */
export type OptionQuoteValues = Omit<OptionQuote, 'kind' | 'source' | 'instrument' | 'base' | 'quote' | 'expirationTimestamp' | 'strike' | 'optionType' | 'inverse'>;

/**
 * An OptionQuote event (src/domain/events.ts) of the option `inst`: its identity (name, pair, strike, call/put,
 * inverse) from the instrument, the venue's expiry `expirationTimestamp` (Unix s), then the market fields `v` (IVs as
 * fractions, prices in the quote currency but the native mark, times in Unix s), in the schema's field order.
 */
export function optionQuote(source: Source, inst: VenueInstrument, expirationTimestamp: number, v: OptionQuoteValues): OptionQuote {
  return {
    kind: 'option',
    source,
    instrument: inst.name,
    base: inst.pair.base,
    quote: inst.pair.quote,
    expirationTimestamp,
    strike: inst.strike as number,
    optionType: inst.optionType as 'C' | 'P',
    inverse: inst.inverse,
    markIv: v.markIv,
    bidIv: v.bidIv,
    askIv: v.askIv,
    markPriceNative: v.markPriceNative,
    forward: v.forward,
    indexPrice: v.indexPrice,
    greeks: v.greeks,
    timestamp: v.timestamp,
    receivedAt: v.receivedAt,
  };
}

/** The market fields of a FutureQuote (all but the instrument's identity): what {@link futureQuote} takes. */
export type FutureQuoteValues = Omit<FutureQuote, 'kind' | 'source' | 'instrument' | 'base' | 'quote' | 'perpetual' | 'expirationTimestamp' | 'inverse'>;

/**
 * A FutureQuote event (src/domain/events.ts) of the future or perpetual `inst`: its identity (name, pair, perpetual or
 * not, inverse) from the instrument, the venue's expiry `expirationTimestamp` (Unix s; null for a perpetual), then the
 * market fields `v` (prices in the quote currency, funding as fractions, times in Unix s), in the schema's field order.
 */
export function futureQuote(source: Source, inst: VenueInstrument, expirationTimestamp: number | null, v: FutureQuoteValues): FutureQuote {
  return {
    kind: 'future',
    source,
    instrument: inst.name,
    base: inst.pair.base,
    quote: inst.pair.quote,
    perpetual: inst.type === 'perpetual',
    expirationTimestamp,
    inverse: inst.inverse,
    markPrice: v.markPrice,
    indexPrice: v.indexPrice,
    currentFunding: v.currentFunding,
    funding8h: v.funding8h,
    timestamp: v.timestamp,
    receivedAt: v.receivedAt,
  };
}

/**
 * Run each item of a REST listing through `normalizeItem`, in order, collecting drops in `dropped`: an item `schema`
 * rejects is dropped as `badKind` (zod's detail), one `normalizeItem` refuses by the drop it returns (null: kept), one
 * it throws on as {@link CommonDropKinds}.internal (the message). Never throws.
 */
export function eachListedItem<T>(
  list: readonly unknown[],
  schema: { safeParse(item: unknown): { success: true; data: T } | { success: false; error: Parameters<typeof zodDetail>[0] } },
  badKind: string,
  dropped: DroppedItem[],
  normalizeItem: (it: T) => DroppedItem | null,
): void {
  for (const item of list) {
    try {
      const parsed = schema.safeParse(item);
      if (!parsed.success) {
        dropped.push({ kind: badKind, detail: zodDetail(parsed.error) });
        continue;
      }
      const refused = normalizeItem(parsed.data);
      if (refused) dropped.push(refused);
    } catch (e) {
      dropped.push({ kind: CommonDropKinds.internal, detail: errorMessage(e) });
    }
  }
}

/**
 * The expiry (Unix s) of a listed instrument: the exchange's printed expiry `printedMs` (Unix ms) when it is > 0 and
 * the name has one (`nameExpiry`, Unix s; null for a perpetual, kept null), else the name's.
 * @returns null when the printed expiry is more than a day from the name's (the listing item is bad)
 */
export function listedExpiry(nameExpiry: number | null, printedMs: number | null | undefined): { readonly expiry: number | null } | null {
  if (nameExpiry === null || !pos(printedMs)) return { expiry: nameExpiry };
  const e = printedMs / 1000;
  return Math.abs(e - nameExpiry) > 86_400 ? null : { expiry: e };
}

/**
 * A FundingRate event (src/domain/events.ts): `interest` the rate for the interval as the exchange
 * states it (fraction), `intervalHours` > 0, `timestamp` the settlement time in Unix s.
 */
export function fundingRate(source: Source, instrumentId: string, pair: Pair, interest: number, intervalHours: number, timestamp: number): FundingRate {
  return { kind: 'funding', source, instrumentId, base: pair.base, quote: pair.quote, interest, intervalHours, timestamp };
}

/**
 * Collects funding-history points (settlement time ms -> rate) per instrument and turns them into
 * FundingRate events, as OKX's funding-rate-history and Bybit's funding/history are read: one point
 * per (instrument, time) (a later duplicate replaces the earlier), `intervalHours` = `fixedIntervalHours`
 * when > 0, else the gap to the previous point of the same instrument (the first point takes the gap
 * to the next; a lone point `defaultIntervalHours`); events ascending by time, then instrument id.
 */
export class FundingHistoryBuilder {
  private readonly byInstrument = new Map<string, { inst: VenueInstrument; points: Map<number, number> }>();

  /** Add one point of `inst`: settlement time `timeMs` (Unix ms), `rate` (fraction for the interval). */
  add(inst: VenueInstrument, timeMs: number, rate: number): void {
    let e = this.byInstrument.get(inst.name);
    if (!e) {
      e = { inst, points: new Map() };
      this.byInstrument.set(inst.name, e);
    }
    e.points.set(timeMs, rate);
  }

  /** The FundingRate events of every point added (see the class docstring). */
  events(source: Source, defaultIntervalHours: number, fixedIntervalHours?: number | null): FundingRate[] {
    const events: FundingRate[] = [];
    for (const { inst, points } of this.byInstrument.values()) {
      const times = [...points.keys()].sort((a, b) => a - b);
      times.forEach((t, i) => {
        const gapH = i > 0 ? (t - (times[i - 1] as number)) / HOUR_MS : times.length > 1 ? ((times[1] as number) - t) / HOUR_MS : defaultIntervalHours;
        const intervalHours = fixedIntervalHours && fixedIntervalHours > 0 ? fixedIntervalHours : gapH;
        events.push(fundingRate(source, inst.name, inst.pair, points.get(t) as number, intervalHours, t / 1000));
      });
    }
    events.sort((a, b) => a.timestamp - b.timestamp || a.instrumentId.localeCompare(b.instrumentId));
    return events;
  }
}

/**
 * IV (fraction) implied by an order price when an exchange prints a zero IV next to it (Deribit, Bybit: their
 * normalizers' module docstrings): Black-76 with r = 0 (src/quant/impliedVol.ts, Jaeckel 2015) on the expiry's forward
 * `F` (Deribit `underlying_price`, Bybit `underlyingPrice`).
 * @param price best bid or ask as printed: coin for inverse options, quote currency (USDC) for linear ones
 * @param T years ACT/365 to expiry
 * @returns null when there is no price (<= 0) or no volatility gives it (at or below intrinsic value, at or
 *   above the upper bound), or the implied vol is 0
 */
export function ivFromPrice(price: number | null | undefined, inverse: boolean, F: number, K: number, T: number, optionType: 'C' | 'P'): number | null {
  if (!pos(price) || !(T > 0)) return null;
  const quotePrice = inverse ? price * F : price;
  const intrinsic = optionType === 'C' ? Math.max(F - K, 0) : Math.max(K - F, 0);
  if (quotePrice <= intrinsic) return null;
  try {
    const iv = impliedVolBlack76(quotePrice, F, K, T, optionType);
    return iv > 0 && Number.isFinite(iv) ? iv : null;
  } catch {
    return null;
  }
}

/**
 * One exchange instrument decoded from its printed name (adapters/<exchange>/instruments.ts). Times Unix
 * seconds; strike in the pair's quote currency.
 */
export interface DecodedInstrument extends VenueInstrument {
  /** Expiry, Unix seconds (the exchange's expiry hour, 08:00 UTC for all three, of the named day); null for perpetuals. */
  readonly expirationTimestamp: number | null;
}

/**
 * Result of an instrument-name parser: the instrument, or why not: `unsupported` (a recognised name outside
 * the spec's pairs), `combo` (Deribit spreads), `malformed` (no pattern of the exchange, or an impossible
 * date or strike), with a detail for the drop counter.
 */
export type ParsedName<I, Reason extends string = 'unsupported' | 'malformed'> =
  | { readonly ok: true; readonly instrument: I }
  | { readonly ok: false; readonly reason: Reason; readonly detail: string };
