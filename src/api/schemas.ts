/**
 * Request schemas of the REST API, exactly per docs/spec/interface-spec.md (field names,
 * enums, batch limits) and docs/spec/decisions.md (aliases, limits the spec leaves open).
 * Shape and per-field rules live here; rules that need the market or the clock (supported pair,
 * expiry >= now, inverse flag consistency) are checked in src/api/rules.ts.
 */
import { z } from 'zod';
import { BASE_CURRENCIES, QUOTE_CURRENCIES } from '../domain/markets.js';
import { VOLATILITY_MODELS } from '../cache/snapshot.js';
import { MAX_NOTIONAL, MAX_PRICE, MAX_UNIX_TIME_S } from './limits.js';

/** Source values: wire values and the spec's aliases (decisions.md). */
export const SourceValue = z.enum(['DERIBIT', 'OKX', 'BYBIT', 'XCHG_A', 'XCHG_B', 'XCHG_C']);
/** priceMethod values: the sources plus OTC (= DERIBIT). */
export const PriceMethodValue = z.enum(['DERIBIT', 'OKX', 'BYBIT', 'XCHG_A', 'XCHG_B', 'XCHG_C', 'OTC']);
export const BaseCurrencyValue = z.enum(BASE_CURRENCIES);
export const QuoteCurrencyValue = z.enum(QUOTE_CURRENCIES);
export const VolatilityModelValue = z.enum(VOLATILITY_MODELS);

/** Most items of a batch body (vanilla, euBarrier, iV/byStrike, iV/byDelta; spec "Limits"). */
export const MAX_BATCH_ITEMS = 50;
/** Longest instrumentId accepted, characters. */
export const MAX_INSTRUMENT_ID_LENGTH = 200;
/** Caller-defined unique instrument id, echoed in the result. */
export const instrumentId = z.string().min(1, 'Must be a non-empty string').max(MAX_INSTRUMENT_ID_LENGTH, `Must be at most ${MAX_INSTRUMENT_ID_LENGTH} characters`);
/** A price (strike, barrier), quote currency: 0 < x <= MAX_PRICE (src/api/limits.ts). */
export const positive = z
  .number('Must be a number')
  .finite('Must be a finite number')
  .gt(0, 'Must be > 0')
  .max(MAX_PRICE, `Must be <= ${MAX_PRICE} (the price limit)`);
/** Unix time in seconds, 0 to MAX_UNIX_TIME_S (2100-01-01); expiries are further held to the expiry window (rules.ts). */
export const timestampS = z
  .number('Must be a Unix time in seconds')
  .finite('Must be a Unix time in seconds')
  .nonnegative('Must be a Unix time in seconds')
  .max(MAX_UNIX_TIME_S, `Must be <= ${MAX_UNIX_TIME_S} (2100-01-01T00:00:00Z, the timestamp limit)`);
/** A position nominal, base-currency units: |x| <= MAX_NOTIONAL (src/api/limits.ts). */
export const notional = z
  .number('Must be a number')
  .finite('Must be a finite number')
  .min(-MAX_NOTIONAL, `Must be >= -${MAX_NOTIONAL} (the notional limit)`)
  .max(MAX_NOTIONAL, `Must be <= ${MAX_NOTIONAL} (the notional limit)`);
/** A Unix time in seconds in a query string (coerced from text), 0 to MAX_UNIX_TIME_S. */
export const queryTimestampS = z.coerce
  .number('Must be a Unix time in seconds')
  .finite('Must be a Unix time in seconds')
  .nonnegative('Must be a Unix time in seconds')
  .max(MAX_UNIX_TIME_S, `Must be <= ${MAX_UNIX_TIME_S} (2100-01-01T00:00:00Z, the timestamp limit)`);

/** Batch of 1..max items. */
function batch<T extends z.ZodType>(item: T, max: number) {
  return z.array(item).min(1, `Must hold 1 to ${max} items`).max(max, `Must hold 1 to ${max} items`);
}

/** POST /api/v1/global/optionValuation/vanilla item (spec section 2). */
export const VanillaItem = z.object({
  instrumentId,
  baseCurrency: BaseCurrencyValue,
  quoteCurrency: QuoteCurrencyValue,
  /** Instrument nominal, base-currency units. */
  amount: notional,
  vanillaOptionType: z.enum(['CALL', 'PUT', 'FORWARD']).optional(),
  source: SourceValue,
  inverse: z.boolean().optional(),
  priceMethod: PriceMethodValue,
  expirationTimestamp: timestampS,
  strike: positive.optional(),
  volatilityModel: VolatilityModelValue,
});
export type VanillaItem = z.infer<typeof VanillaItem>;
export const VanillaBody = batch(VanillaItem, MAX_BATCH_ITEMS);

/** POST /api/v1/global/data/iV/byStrike item (spec section 4). */
export const ByStrikeItem = z.object({
  instrumentId,
  baseCurrency: BaseCurrencyValue,
  quoteCurrency: QuoteCurrencyValue,
  source: SourceValue,
  volatilityModel: VolatilityModelValue,
  expirationTimestamp: timestampS,
  strike: positive,
});
export type ByStrikeItem = z.infer<typeof ByStrikeItem>;
export const ByStrikeBody = batch(ByStrikeItem, MAX_BATCH_ITEMS);

/**
 * POST /api/v1/global/data/iV/byDelta item (spec section 3). The target is a forward Black CALL
 * delta, 0.01 < delta < 0.99 (decisions.md: 0.75 is the 25-delta put strike).
 */
export const ByDeltaItem = z.object({
  instrumentId,
  baseCurrency: BaseCurrencyValue,
  quoteCurrency: QuoteCurrencyValue,
  source: SourceValue,
  volatilityModel: VolatilityModelValue,
  expirationTimestamp: timestampS,
  delta: z.number().finite().gt(0.01, 'Must be > 0.01').lt(0.99, 'Must be < 0.99 (a call delta; 0.75 is the 25-delta put)'),
});
export type ByDeltaItem = z.infer<typeof ByDeltaItem>;
export const ByDeltaBody = batch(ByDeltaItem, MAX_BATCH_ITEMS);

/**
 * `asOf` of every data endpoint (issue 24; src/api/asOf.ts): answer from what was served at that time, Unix seconds
 * (fractional allowed), read from the history store. Absent: the live answer.
 */
const asOf = queryTimestampS
  .optional()
  .describe('Answer as of this time (Unix seconds, fractional allowed): from the surface, forward curve and funding served then (history store); absent = now');

/** Query of the POST data endpoints: only `asOf` (the bodies stay as the spec has them). */
export const AsOfQuery = z.object({ asOf });

/** Query of GET forwardCurve (spec section 7). */
export const PairQuery = z.object({
  baseCurrency: BaseCurrencyValue,
  quoteCurrency: QuoteCurrencyValue,
  source: SourceValue,
  asOf,
});

/** Query of GET fundingRates (spec section 6). Times in Unix seconds. */
export const FundingRatesQuery = z.object({
  source: SourceValue,
  instrumentId,
  startTime: queryTimestampS,
  endTime: queryTimestampS,
  asOf,
});

/** Query of GET fundingInstruments (decisions.md). */
export const FundingInstrumentsQuery = z.object({ source: SourceValue, asOf });

/** The intervals of the history series and their seconds. */
export const HISTORY_INTERVALS_S = { '1m': 60, '5m': 300, '1h': 3600, '1d': 86400 } as const;

/** Query of the history series (GET iVSummary/history, surface/history; src/api/routes/history.ts). */
export const HistoryRangeQuery = z.object({
  baseCurrency: BaseCurrencyValue,
  quoteCurrency: QuoteCurrencyValue,
  source: SourceValue,
  volatilityModel: VolatilityModelValue,
  from: queryTimestampS.optional().describe('Start, Unix seconds (default: to - 24 h)'),
  to: queryTimestampS.optional().describe('End, Unix seconds (default: now)'),
  interval: z.enum(['1m', '5m', '1h', '1d']).default('1h').describe('One point per interval: the first stored in it'),
  format: z.enum(['json', 'csv', 'parquet']).default('json').describe('json (default), csv, or parquet (a file for notebooks)'),
});

/** Query of GET surface (additive to the spec; issue 4 "fit diagnostics"). */
export const SurfaceQuery = PairQuery.extend({ volatilityModel: VolatilityModelValue });
