/**
 * Raw SVI ("stochastic volatility inspired") parameterization of one expiry's total implied variance.
 *
 * Sources:
 * - J. Gatheral, "A parsimonious arbitrage-free implied volatility parameterization with application
 *   to the valuation of volatility derivatives", Global Derivatives & Risk Management, Madrid, 2004.
 * - J. Gatheral, A. Jacquier, "Arbitrage-free SVI volatility surfaces", Quantitative Finance 14(1),
 *   2014, pp. 59-71 (arXiv:1204.0646): raw SVI eq. (3.1); the condition a + b·sigma·sqrt(1 - rho^2) >= 0
 *   for w >= 0 (sec. 3.1); the butterfly function g(k) of eq. (2.1) / Lemma 2.2; Axel Vogt's
 *   arbitrageable example (sec. 5.1, eq. (5.1)).
 * - R. Lee, "The moment formula for implied volatility at extreme strikes", Mathematical Finance 14(3),
 *   2004, pp. 469-480: the wings of total variance grow at most like 2|k|, so for SVI
 *   b(1 + |rho|) <= 2 (Gatheral-Jacquier 2014 sec. 3.1 and Rogers-Tehranchi).
 *
 * Units: k = ln(K/F) is the log-moneyness against the expiry's forward F; w(k) = sigma_BS(k)^2 · T is
 * the total implied variance (dimensionless, T in years ACT/365); implied vol fractions.
 */

/**
 * Raw SVI parameters: w(k) = a + b (rho (k - m) + sqrt((k - m)^2 + sigma^2)).
 * - `a`: level (total variance units), any real but with a + b·sigma·sqrt(1 - rho^2) >= 0;
 * - `b` >= 0: wing slope scale;
 * - `rho` in (-1, 1): skew (rotation);
 * - `m`: horizontal shift (log-moneyness units);
 * - `sigma` > 0: ATM curvature width (log-moneyness units).
 * Source: Gatheral-Jacquier 2014 eq. (3.1).
 */
export interface SviParams {
  readonly a: number;
  readonly b: number;
  readonly rho: number;
  readonly m: number;
  readonly sigma: number;
}

/** Lee's (2004) maximal asymptotic slope of total variance in |k| (moment formula): 2. */
export const LEE_MAX_WING_SLOPE = 2;

/**
 * Raw SVI total implied variance w(k) (dimensionless) at log-moneyness k = ln(K/F).
 * Source: Gatheral-Jacquier 2014 eq. (3.1).
 */
export function sviTotalVariance(p: SviParams, k: number): number {
  const x = k - p.m;
  return p.a + p.b * (p.rho * x + Math.sqrt(x * x + p.sigma * p.sigma));
}

/** First derivative dw/dk of raw SVI at k (differentiating eq. (3.1) of Gatheral-Jacquier 2014). */
export function sviFirstDerivative(p: SviParams, k: number): number {
  const x = k - p.m;
  return p.b * (p.rho + x / Math.sqrt(x * x + p.sigma * p.sigma));
}

/** Second derivative d^2w/dk^2 = b sigma^2 / ((k-m)^2 + sigma^2)^(3/2) of raw SVI at k (>= 0 for b >= 0). */
export function sviSecondDerivative(p: SviParams, k: number): number {
  const x = k - p.m;
  const s2 = p.sigma * p.sigma;
  const r = x * x + s2;
  return (p.b * s2) / (r * Math.sqrt(r));
}

/**
 * Black implied volatility (fraction) of a raw SVI slice at log-moneyness k and expiry T (years):
 * sqrt(w(k)/T). Returns NaN where w(k) < 0 (an invalid parameter set). Throws RangeError if T <= 0.
 */
export function sviImpliedVol(p: SviParams, k: number, T: number): number {
  if (!(T > 0)) throw new RangeError(`sviImpliedVol: T must be > 0, got ${T}`);
  const w = sviTotalVariance(p, k);
  return w >= 0 ? Math.sqrt(w / T) : Number.NaN;
}

/**
 * Gatheral-Jacquier butterfly function of a total-variance smile with value w, slope w1 = w'(k) and
 * curvature w2 = w''(k) at k:
 *   g(k) = (1 - k w'/(2w))^2 - (w'^2/4) (1/w + 1/4) + w''/2.
 * The risk-neutral density is p(k) = g(k) / sqrt(2 pi w) · exp(-d_-(k)^2/2), so a smile is free of
 * butterfly arbitrage iff g >= 0 everywhere (and the call price tends to 0 as k -> infinity).
 * Source: Gatheral-Jacquier 2014 eq. (2.1) and Lemma 2.2. Returns -Infinity when w <= 0.
 */
export function butterflyG(k: number, w: number, w1: number, w2: number): number {
  if (!(w > 0)) return Number.NEGATIVE_INFINITY;
  const t = 1 - (k * w1) / (2 * w);
  return t * t - ((w1 * w1) / 4) * (1 / w + 0.25) + w2 / 2;
}

/** g(k) of a raw SVI slice (see {@link butterflyG}); Gatheral-Jacquier 2014 eq. (2.1). */
export function sviG(p: SviParams, k: number): number {
  return butterflyG(k, sviTotalVariance(p, k), sviFirstDerivative(p, k), sviSecondDerivative(p, k));
}

/**
 * Minimum of raw SVI total variance over all k: a + b·sigma·sqrt(1 - rho^2) (attained at
 * k = m - rho·sigma/sqrt(1 - rho^2)). w >= 0 everywhere iff this is >= 0. Gatheral-Jacquier 2014 sec. 3.1.
 */
export function sviMinTotalVariance(p: SviParams): number {
  return p.a + p.b * p.sigma * Math.sqrt(Math.max(0, 1 - p.rho * p.rho));
}

/**
 * Roger Lee's moment bound for raw SVI: both wing slopes b(1 ± rho) <= 2, i.e. b(1 + |rho|) <= 2
 * (Lee 2004, Theorem 3.2; Gatheral-Jacquier 2014 sec. 3.1). `tol` is an absolute tolerance.
 */
export function sviSatisfiesLeeBound(p: SviParams, tol = 1e-12): boolean {
  return p.b * (1 + Math.abs(p.rho)) <= LEE_MAX_WING_SLOPE + tol;
}

/**
 * Structural validity of raw SVI parameters: finite, b >= 0, |rho| < 1, sigma > 0, w >= 0 everywhere
 * (a >= -b sigma sqrt(1-rho^2)) and the Lee bound. Gatheral-Jacquier 2014 sec. 3.1; Lee 2004.
 * Returns a list of violated conditions (empty when valid).
 */
export function sviParamViolations(p: SviParams, tol = 1e-12): string[] {
  const out: string[] = [];
  for (const key of ['a', 'b', 'rho', 'm', 'sigma'] as const) {
    if (!Number.isFinite(p[key])) out.push(`${key} not finite`);
  }
  if (out.length > 0) return out;
  if (p.b < -tol) out.push('b < 0');
  if (!(Math.abs(p.rho) < 1)) out.push('|rho| >= 1');
  if (!(p.sigma > 0)) out.push('sigma <= 0');
  if (sviMinTotalVariance(p) < -tol) out.push('w < 0 somewhere (a < -b sigma sqrt(1-rho^2))');
  if (!sviSatisfiesLeeBound(p, tol)) out.push('Lee bound b(1+|rho|) <= 2 violated');
  return out;
}

/**
 * Default log-moneyness grid for arbitrage checks of a slice: 401 evenly spaced points on [-3, 3]
 * (K/F from 0.05 to 20, wider than any listed crypto strike) merged with 201 points on
 * [m - 12 sigma, m + 12 sigma], where the smile's curvature lives (so narrow smiles of 1-day
 * expiries are resolved), sorted ascending.
 */
export function defaultSviCheckGrid(p: SviParams): number[] {
  const pts: number[] = [];
  for (let i = 0; i <= 400; i++) pts.push(-3 + (6 * i) / 400);
  const s = Math.max(p.sigma, 1e-4);
  for (let i = 0; i <= 200; i++) pts.push(p.m - 12 * s + (24 * s * i) / 200);
  pts.sort((x, y) => x - y);
  return pts;
}

/** Result of a butterfly-arbitrage check on a grid. */
export interface ButterflyCheck {
  /** True when g(k) >= -tol at every grid point (and w > 0 there). */
  readonly arbitrageFree: boolean;
  /** Minimum of g over the grid (-Infinity if w <= 0 somewhere on it). */
  readonly minG: number;
  /** The grid log-moneyness where the minimum is attained. */
  readonly kAtMinG: number;
  /** Grid points with g < -tol, in grid order. */
  readonly violations: readonly number[];
}

/**
 * Checks a raw SVI slice for butterfly arbitrage: g(k) >= 0 on `kGrid` (default
 * {@link defaultSviCheckGrid}). The wings are arbitrage-free asymptotically iff the Lee bound holds
 * (g -> 1/4 - b^2 (1 ± rho)^2 / 16 as k -> ±infinity), which is also checked: a violated Lee bound
 * makes the result not arbitrage-free. Source: Gatheral-Jacquier 2014 Lemma 2.2 and sec. 5.1.
 * @param tol tolerance on g (default 0).
 */
export function butterflyArbitrageFree(p: SviParams, kGrid?: readonly number[], tol = 0): ButterflyCheck {
  const grid = kGrid ?? defaultSviCheckGrid(p);
  let minG = Number.POSITIVE_INFINITY;
  let kAt = Number.NaN;
  const violations: number[] = [];
  for (const k of grid) {
    const g = sviG(p, k);
    if (g < minG || Number.isNaN(kAt)) {
      minG = g;
      kAt = k;
    }
    if (!(g >= -tol)) violations.push(k);
  }
  const lee = sviSatisfiesLeeBound(p);
  return { arbitrageFree: violations.length === 0 && lee, minG, kAtMinG: kAt, violations };
}
