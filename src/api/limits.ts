/**
 * Bounds of every number and timestamp the REST API accepts (issue 14 section 2: "an API contract an
 * outside fuzzer cannot break"). Each bound is a documented rule (docs/operations.md "Input limits"), stated
 * in the OpenAPI document (minimum / maximum; the expiry window is filled in at request time of
 * /openapi.json from the service clock), and checked before anything is computed: a value outside is a 400
 * whose message names the limit, never a 500 and never a 200 carrying a null or a non-finite figure.
 *
 * Why these numbers:
 * - the expiry horizon (10 years ACT/365): no exchange lists options or futures beyond a few years; a forward
 *   extrapolated further off the curve has no meaning, and at 1e16 s the extrapolated forward and total
 *   variance overflow (the 6.4e16 byStrike request of the issue answered `impliedVolatility: null`);
 * - {@link MAX_UNIX_TIME_S} (2100-01-01): the static bound of every timestamp field, so that the schema itself
 *   rejects 1.1e308 and friends; fundingRates periods are clipped to the data held anyway;
 * - {@link MAX_PRICE} (1e9 quote currency): three orders of magnitude above any listed BTC strike;
 * - {@link MONEYNESS_FACTOR} (100): a strike or barrier must lie within [F/100, 100 F] of the expiry's forward
 *   (|ln(K/F)| <= ln 100 = 4.6): beyond, no model has quotes to be calibrated on (listed strikes span about
 *   F/5 to 5 F) and the SABR expansion and the Vanna-Volga weights leave their domain;
 * - {@link MAX_NOTIONAL} (1e9 base-currency units): more than the supply of any listed coin, and keeps every
 *   Greek of a position finite in double precision.
 */
import { SECONDS_PER_YEAR } from '../domain/time.js';

/** Longest time to expiry the API accepts, seconds: 10 years of 365 days. */
export const EXPIRY_HORIZON_S = 10 * SECONDS_PER_YEAR;
/** {@link EXPIRY_HORIZON_S} in years (of 365 days), as the messages and the OpenAPI document state it. */
export const EXPIRY_HORIZON_YEARS = EXPIRY_HORIZON_S / SECONDS_PER_YEAR;
/** Largest Unix time (seconds) any timestamp field accepts: 2100-01-01T00:00:00Z. */
export const MAX_UNIX_TIME_S = 4_102_444_800;
/** Largest strike or barrier, quote currency. */
export const MAX_PRICE = 1e9;
/** A strike or barrier must satisfy F / MONEYNESS_FACTOR <= K <= F * MONEYNESS_FACTOR (F: the expiry's forward). */
export const MONEYNESS_FACTOR = 100;
/** Largest |amount| (vanilla) or |size| (scenarios), base-currency units. */
export const MAX_NOTIONAL = 1e9;

/** The expiry window at clock time `nowS` (Unix seconds): [ceil(now), floor(now) + EXPIRY_HORIZON_S]. */
export function expiryWindow(nowS: number): { min: number; max: number } {
  return { min: Math.ceil(nowS), max: Math.floor(nowS) + EXPIRY_HORIZON_S };
}
