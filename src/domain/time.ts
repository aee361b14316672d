/**
 * Time conventions (docs/conventions.md "Time"): times at the API in Unix seconds, from the exchanges in Unix ms
 * (converted at the adapter edge), and T in years ACT/365: T = (expirationTimestamp - observationTimestamp) /
 * SECONDS_PER_YEAR, the convention of Deribit's, OKX's and Bybit's own Black-Scholes marks.
 */

/** Seconds in an ACT/365 year (365 x 86,400). */
export const SECONDS_PER_YEAR = 365 * 86_400;

/** Milliseconds in an ACT/365 year. */
export const MS_PER_YEAR = SECONDS_PER_YEAR * 1000;

/** Years ACT/365 from `fromS` to `toS` (Unix seconds); negative when `toS` is earlier. */
export function yearsBetween(fromS: number, toS: number): number {
  return (toS - fromS) / SECONDS_PER_YEAR;
}
