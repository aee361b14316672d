/**
 * Normalized market events: the only thing that crosses from adapters/ to streams/.
 *
 * Units (stated once, see docs/conventions.md):
 * - every timestamp is Unix time in SECONDS (fractional, ms precision kept); adapters convert
 *   exchange milliseconds at their edge;
 * - implied volatilities are FRACTIONS (0.55 = 55 %); Deribit prints percent, adapters divide;
 * - prices are in the pair's quote currency (USD or USDC) unless the field name says otherwise
 *   (`markPriceNative` is in the instrument's premium currency as the exchange prints it).
 *
 * Source: docs/architecture.md "Data flow".
 */
import { z } from 'zod';
import { BASE_CURRENCIES, QUOTE_CURRENCIES, SOURCES } from './markets.js';

const source = z.enum(SOURCES);
const base = z.enum(BASE_CURRENCIES);
const quote = z.enum(QUOTE_CURRENCIES);
const finite = z.number().finite();
const positive = z.number().finite().positive();

/** A listed instrument from the exchange's instrument listing (bootstrap). */
export const InstrumentDefinitionSchema = z.object({
  kind: z.literal('instrument'),
  source,
  /** Exchange instrument name, e.g. `BTC-26JUN26-100000-C`. */
  instrument: z.string().min(1),
  base,
  quote,
  type: z.enum(['option', 'future', 'perpetual']),
  /** Expiry, Unix seconds; null for perpetuals. */
  expirationTimestamp: finite.nullable(),
  /** Strike in quote currency; null unless option. */
  strike: positive.nullable(),
  optionType: z.enum(['C', 'P']).nullable(),
  /** True when settled in the base coin (premium in coin). */
  inverse: z.boolean(),
  /** Exchange timestamp of the listing, seconds. */
  timestamp: finite,
});
export type InstrumentDefinition = z.infer<typeof InstrumentDefinitionSchema>;

/** One option ticker: mark IV, bid/ask IV, the expiry's forward and the index. */
export const OptionQuoteSchema = z.object({
  kind: z.literal('option'),
  source,
  instrument: z.string().min(1),
  base,
  quote,
  /** Expiry, Unix seconds (08:00 UTC for all three exchanges). */
  expirationTimestamp: finite,
  /** Strike, quote currency. */
  strike: positive,
  optionType: z.enum(['C', 'P']),
  inverse: z.boolean(),
  /** Mark implied volatility, fraction. */
  markIv: positive,
  /** Best bid IV, fraction; null when there is no bid (exchange prints 0). */
  bidIv: positive.nullable(),
  /** Best ask IV, fraction; null when there is no ask (exchange prints 0). */
  askIv: positive.nullable(),
  /** Mark price as the exchange prints it (coin for inverse, quote currency for linear). */
  markPriceNative: finite.nullable(),
  /** The expiry's forward (Deribit `underlying_price`), quote currency. */
  forward: positive,
  /** Spot index (Deribit `index_price`), quote currency. */
  indexPrice: positive,
  /** Exchange-printed Greeks when present (Deribit: delta N(d1)-style, vega per 1 vol point in USD...). */
  greeks: z
    .object({ delta: finite, gamma: finite, vega: finite, theta: finite, rho: finite.optional() })
    .nullable(),
  /** Exchange timestamp, seconds. */
  timestamp: finite,
  /** Local receive time, seconds (wall clock, or the message time in replay). */
  receivedAt: finite,
});
export type OptionQuote = z.infer<typeof OptionQuoteSchema>;

/** A dated future or a perpetual ticker. */
export const FutureQuoteSchema = z.object({
  kind: z.literal('future'),
  source,
  instrument: z.string().min(1),
  base,
  quote,
  perpetual: z.boolean(),
  /** Expiry, Unix seconds; null for perpetuals. */
  expirationTimestamp: finite.nullable(),
  inverse: z.boolean(),
  /** Mark price, quote currency. */
  markPrice: positive,
  /** Spot index, quote currency. */
  indexPrice: positive,
  /** Perpetuals only: the current funding rate for the exchange's funding interval, fraction; else null. */
  currentFunding: finite.nullable(),
  /** Perpetuals only: the exchange's 8h funding figure (Deribit `funding_8h`), fraction; else null. */
  funding8h: finite.nullable(),
  timestamp: finite,
  receivedAt: finite,
});
export type FutureQuote = z.infer<typeof FutureQuoteSchema>;

/** Spot index price (Deribit `deribit_price_index.btc_usd`). */
export const IndexPriceSchema = z.object({
  kind: z.literal('index'),
  source,
  base,
  quote,
  price: positive,
  timestamp: finite,
  receivedAt: finite,
});
export type IndexPrice = z.infer<typeof IndexPriceSchema>;

/**
 * One settled funding-rate point of a perpetual. `interest` is the rate for the exchange's native
 * interval as the exchange states it (Deribit: `interest_1h` of get_funding_rate_history, hourly).
 */
export const FundingRateSchema = z.object({
  kind: z.literal('funding'),
  source,
  /** Funding instrument id, e.g. `BTC-PERPETUAL`. */
  instrumentId: z.string().min(1),
  base,
  quote,
  /** Funding rate for the interval, fraction; may be negative. */
  interest: finite,
  /** Length of the funding interval, hours (Deribit history: 1). */
  intervalHours: positive,
  /** Settlement time, Unix seconds. */
  timestamp: finite,
});
export type FundingRate = z.infer<typeof FundingRateSchema>;

/** Connection state change of an exchange feed. A disconnect marks data stale; it erases nothing. */
export const FeedStatusSchema = z.object({
  kind: z.literal('status'),
  source,
  state: z.enum(['connecting', 'connected', 'disconnected']),
  reason: z.string().optional(),
  timestamp: finite,
});
export type FeedStatus = z.infer<typeof FeedStatusSchema>;

/** Any normalized event. */
export const MarketEventSchema = z.discriminatedUnion('kind', [
  InstrumentDefinitionSchema,
  OptionQuoteSchema,
  FutureQuoteSchema,
  IndexPriceSchema,
  FundingRateSchema,
  FeedStatusSchema,
]);
export type MarketEvent = z.infer<typeof MarketEventSchema>;
