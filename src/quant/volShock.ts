/**
 * Volatility shifts of the three scenario endpoints (interface-spec.md sections 5a, 5b, 5c;
 * decisions.md "Limits the spec leaves open").
 *
 * - Absolute shifts (riskScenarios, volRangeRiskScenarios): sigma + shift, e.g. 0.54 + 0.05 = 0.59,
 *   0.54 - 0.05 = 0.49; shifts -0.2, 0, 0.2, 0.5 on 0.6 give 0.4, 0.6, 0.8, 1.1.
 * - Term-dependent shock (advancedRiskScenarios), the margin approach of Deribit's portfolio margin, which
 *   shocks short-dated options harder (Deribit, "Portfolio Margin" documentation: "maximum implied
 *   volatility change of (30/days to expiration)^0.30 * ..."; interface-spec.md 5c formulas):
 *     f = (30 / daysToExpiry) ^ vegaPower,  vegaPower = shortTermVegaPower if days < 30, else longTermVegaPower
 *     volUp   = max(sigma (1 + volRangeUp f), minVolForShockUp)
 *     volDown = max(sigma (1 - volRangeDown f), 0)
 *   daysToExpiry = (expirationTimestamp - observationTimestamp) / 86400, fractional (decisions.md); at
 *   exactly 30 days f = 1 whatever the power, and the long-term power is used (decisions.md).
 * - Every scenario vol is floored at {@link MIN_SCENARIO_VOL} = 0.0001 (decisions.md: 1 bp).
 *
 * Days below 1 (our rule, docs/conventions.md "Risk scenarios"): f uses max(daysToExpiry, 1). The factor
 * (30/d)^p grows without bound as d -> 0 (infinite at the expiry instant), while the vol of an option with
 * hours left barely moves its value (vega ~ sqrt T); a vol-of-vol shock over the one-day horizon a margin
 * scenario stands for is the 1-day factor 30^p (2.77 for p = 0.3). Clamping keeps every number finite and
 * the shock continuous and monotone in days.
 * Tested in test/quant/scenarios.test.ts.
 */

/** Floor of every scenario volatility: 0.0001 (1 bp), decisions.md. */
export const MIN_SCENARIO_VOL = 0.0001;
/** Days at and above which the long-term vega power applies (decisions.md: days >= 30). */
export const VEGA_POWER_SWITCH_DAYS = 30;
/** Smallest daysToExpiry used in the shock factor (days below 1 count as 1; module docstring). */
export const MIN_SHOCK_DAYS = 1;
const SECONDS_PER_DAY = 86400;

/** A volatility shifted by an absolute amount, floored at {@link MIN_SCENARIO_VOL}. Fractions. */
export function shiftedVol(sigma: number, shift: number): number {
  return Math.max(sigma + shift, MIN_SCENARIO_VOL);
}

/** Parameters of the advanced (term-dependent) shock, interface-spec.md 5c. */
export interface VolShockParams {
  readonly volRangeUp: number;
  readonly volRangeDown: number;
  readonly minVolForShockUp: number;
  readonly shortTermVegaPower: number;
  readonly longTermVegaPower: number;
}

/** daysToExpiry = (expirationTimestamp - observationTimestamp) / 86400, fractional (Unix seconds in). */
export function daysToExpiry(expirationTimestamp: number, observationTimestamp: number): number {
  return (expirationTimestamp - observationTimestamp) / SECONDS_PER_DAY;
}

/**
 * The shock factor (30 / max(days, 1)) ^ vegaPower, with the short-term power below 30 days and the
 * long-term power at and above (module docstring).
 */
export function volShockFactor(days: number, shortTermVegaPower: number, longTermVegaPower: number): number {
  const p = days < VEGA_POWER_SWITCH_DAYS ? shortTermVegaPower : longTermVegaPower;
  return Math.pow(VEGA_POWER_SWITCH_DAYS / Math.max(days, MIN_SHOCK_DAYS), p);
}

/**
 * volUp and volDown of the advanced scenarios (interface-spec.md 5c; module docstring), each floored at
 * {@link MIN_SCENARIO_VOL}. volDown is below the current vol whenever volRangeDown > 0.
 * @param sigma current implied vol at the strike, fraction
 * @param days daysToExpiry, fractional
 */
export function advancedVolShock(sigma: number, days: number, params: VolShockParams): { volUp: number; volDown: number } {
  const f = volShockFactor(days, params.shortTermVegaPower, params.longTermVegaPower);
  const up = Math.max(sigma * (1 + params.volRangeUp * f), params.minVolForShockUp);
  const down = Math.max(sigma * (1 - params.volRangeDown * f), 0);
  return { volUp: Math.max(up, MIN_SCENARIO_VOL), volDown: Math.max(down, MIN_SCENARIO_VOL) };
}
