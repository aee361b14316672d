/**
 * A chain view's option quotes in columns, for the message to a calibration worker (streams/calibrationPool.ts).
 *
 * Why: `postMessage` structured-clones its payload on the sending thread, and a view holds about a thousand
 * {@link OptionQuote} objects (each with a nested Greeks object). Cloning them was a quarter of the main thread's CPU
 * on the simulated default (CPU profile, 2026-11-26), on the thread that also serves REST and ingests the feeds. In
 * columns the payload is one Float64Array, one Uint8Array and one string, which clone as flat copies.
 *
 * The round trip is exact: {@link decodeOptions}(encodeOptions(q)) deep-equals q for every quote the normalizers make
 * (numbers bit for bit, nulls, an absent Greeks `rho`); tested in test/streams/viewCodec.test.ts.
 */
import type { OptionQuote } from '../src/domain/events.js';
import type { ChainView } from './chainState.js';

/** Numbers per quote in {@link EncodedOptions.numbers}. */
const NUMS = 15;
/** Flag bits per quote in {@link EncodedOptions.flags}. */
const CALL = 1;
const INVERSE = 2;
const HAS_BID = 4;
const HAS_ASK = 8;
const HAS_MARK_PRICE = 16;
const HAS_GREEKS = 32;
const HAS_RHO = 64;
/** Separator of the text column (never in an instrument, source or currency name: a control character). */
const SEP = '\u0001';

/** The option quotes of one view in columns (structured-clone friendly). */
export interface EncodedOptions {
  readonly count: number;
  /** Per quote: expiry, strike, mark IV, bid IV, ask IV, mark price, forward, index, 5 Greeks, timestamp, received. */
  readonly numbers: Float64Array;
  /** Per quote: the flag bits above. */
  readonly flags: Uint8Array;
  /** Per quote, joined by SEP: instrument, source, base, quote. */
  readonly text: string;
}

/** A chain view whose options travel as {@link EncodedOptions}. */
export type EncodedView = Omit<ChainView, 'options'> & { readonly encodedOptions: EncodedOptions };

/**
 * Option quotes in columns.
 * @param quotes quotes as the normalizers make them (OptionQuoteSchema)
 */
export function encodeOptions(quotes: readonly OptionQuote[]): EncodedOptions {
  const n = quotes.length;
  const numbers = new Float64Array(n * NUMS);
  const flags = new Uint8Array(n);
  const text: string[] = new Array<string>(n * 4);
  for (let i = 0; i < n; i++) {
    const q = quotes[i]!;
    const o = i * NUMS;
    const g = q.greeks;
    numbers[o] = q.expirationTimestamp;
    numbers[o + 1] = q.strike;
    numbers[o + 2] = q.markIv;
    numbers[o + 3] = q.bidIv ?? 0;
    numbers[o + 4] = q.askIv ?? 0;
    numbers[o + 5] = q.markPriceNative ?? 0;
    numbers[o + 6] = q.forward;
    numbers[o + 7] = q.indexPrice;
    numbers[o + 8] = g ? g.delta : 0;
    numbers[o + 9] = g ? g.gamma : 0;
    numbers[o + 10] = g ? g.vega : 0;
    numbers[o + 11] = g ? g.theta : 0;
    numbers[o + 12] = g?.rho ?? 0;
    numbers[o + 13] = q.timestamp;
    numbers[o + 14] = q.receivedAt;
    flags[i] =
      (q.optionType === 'C' ? CALL : 0) |
      (q.inverse ? INVERSE : 0) |
      (q.bidIv !== null ? HAS_BID : 0) |
      (q.askIv !== null ? HAS_ASK : 0) |
      (q.markPriceNative !== null ? HAS_MARK_PRICE : 0) |
      (g ? HAS_GREEKS : 0) |
      (g && g.rho !== undefined ? HAS_RHO : 0);
    text[i * 4] = q.instrument;
    text[i * 4 + 1] = q.source;
    text[i * 4 + 2] = q.base;
    text[i * 4 + 3] = q.quote;
  }
  return { count: n, numbers, flags, text: text.join(SEP) };
}

/**
 * The quotes back from {@link encodeOptions}.
 * @throws RangeError when the columns do not hold `count` quotes
 */
export function decodeOptions(e: EncodedOptions): OptionQuote[] {
  const n = e.count;
  const text = n > 0 ? e.text.split(SEP) : [];
  if (e.numbers.length !== n * NUMS || e.flags.length !== n || text.length !== n * 4) {
    throw new RangeError(`decodeOptions: columns do not hold ${n} quotes`);
  }
  const out = new Array<OptionQuote>(n);
  for (let i = 0; i < n; i++) {
    const o = i * NUMS;
    const f = e.flags[i]!;
    const num = e.numbers;
    out[i] = {
      kind: 'option',
      source: text[i * 4 + 1] as OptionQuote['source'],
      instrument: text[i * 4]!,
      base: text[i * 4 + 2] as OptionQuote['base'],
      quote: text[i * 4 + 3] as OptionQuote['quote'],
      expirationTimestamp: num[o]!,
      strike: num[o + 1]!,
      optionType: f & CALL ? 'C' : 'P',
      inverse: (f & INVERSE) !== 0,
      markIv: num[o + 2]!,
      bidIv: f & HAS_BID ? num[o + 3]! : null,
      askIv: f & HAS_ASK ? num[o + 4]! : null,
      markPriceNative: f & HAS_MARK_PRICE ? num[o + 5]! : null,
      forward: num[o + 6]!,
      indexPrice: num[o + 7]!,
      greeks:
        f & HAS_GREEKS
          ? { delta: num[o + 8]!, gamma: num[o + 9]!, vega: num[o + 10]!, theta: num[o + 11]!, ...(f & HAS_RHO ? { rho: num[o + 12]! } : {}) }
          : null,
      timestamp: num[o + 13]!,
      receivedAt: num[o + 14]!,
    };
  }
  return out;
}

/** A view for the worker message: its options in columns. */
export function encodeView(view: ChainView): EncodedView {
  const { options, ...rest } = view;
  return { ...rest, encodedOptions: encodeOptions(options) };
}

/** The view back from {@link encodeView}. */
export function decodeView(v: EncodedView): ChainView {
  const { encodedOptions, ...rest } = v;
  return { ...rest, options: decodeOptions(encodedOptions) };
}
