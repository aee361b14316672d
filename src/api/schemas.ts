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

/** Caller-defined unique instrument id, echoed in the result. */
export const instrumentId = z.string().min(1, 'Must be a non-empty string').max(200, 'Must be at most 200 characters');
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
const queryTimestampS = z.coerce
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
export const VanillaBody = batch(VanillaItem, 50);

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
export const ByStrikeBody = batch(ByStrikeItem, 50);

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
export const ByDeltaBody = batch(ByDeltaItem, 50);

/** Query of GET forwardCurve (spec section 7). */
export const PairQuery = z.object({
  baseCurrency: BaseCurrencyValue,
  quoteCurrency: QuoteCurrencyValue,
  source: SourceValue,
});

/** Query of GET fundingRates (spec section 6). Times in Unix seconds. */
export const FundingRatesQuery = z.object({
  source: SourceValue,
  instrumentId,
  startTime: queryTimestampS,
  endTime: queryTimestampS,
});

/** Query of GET fundingInstruments (decisions.md). */
export const FundingInstrumentsQuery = z.object({ source: SourceValue });

/** Query of GET surface (additive to the spec; issue 4 "fit diagnostics"). */
export const SurfaceQuery = PairQuery.extend({ volatilityModel: VolatilityModelValue });
