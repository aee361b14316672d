/**
 * Model-independent butterfly-arbitrage (density) check of one expiry's smile, for any implied-vol
 * function iv(K): used for SABR and Vanna-Volga (SVI has the analytic Gatheral-Jacquier g(k), svi.ts).
 *
 * Method: on a strike grid, undiscounted Black-76 call prices c(K) = C(K)/F (r = 0, normalized by the
 * forward, so c is a function of x = K/F) are computed from iv(K). A smile is free of butterfly (static)
 * arbitrage on the grid iff
 *   1. the call price lies within its model-free bounds max(1 - x, 0) <= c(x) <= 1,
 *   2. it is non-increasing with slope >= -1 (dc/dx in [-1, 0]: the digital price N(d2)-like slope is a
 *      probability), and
 *   3. it is convex: the risk-neutral density of F_T/F, p(x) = d^2c/dx^2 (Breeden and Litzenberger 1978),
 *      is >= 0. p is estimated by the second divided difference on the (non-uniform) grid,
 *      p_i = 2 [ (c_{i+1} - c_i)/(x_{i+1} - x_i) - (c_i - c_{i-1})/(x_i - x_{i-1}) ] / (x_{i+1} - x_{i-1}).
 * The density of the strike itself is p(K/F)/F (per currency unit); `minDensity` is reported in the
 * dimensionless x units (density of F_T/F), so one tolerance fits every underlying.
 *
 * Sources: D. T. Breeden, R. H. Litzenberger, "Prices of state-contingent claims implicit in option prices",
 * Journal of Business 51(4), 1978 (density = second strike derivative of the undiscounted call price);
 * P. Carr, D. B. Madan, "A note on sufficient conditions for no arbitrage", Finance Research Letters 2(3),
 * 2005 (call prices decreasing and convex in strike, within bounds, are free of static arbitrage for one
 * expiry); J. Gatheral, A. Jacquier, "Arbitrage-free SVI volatility surfaces", Quantitative Finance 14(1),
 * 2014, sec. 2 (the same conditions in implied-variance terms, g(k) >= 0).
 */
import { black76Price } from './black76.js';

/** Options of {@link checkSmileDensity} and {@link defaultDensityCheckStrikes}. */
export interface DensityCheckOptions {
  /** Explicit strike grid (ascending, > 0, at least 3 points). Overrides the default grid. */
  readonly strikes?: readonly number[];
  /** Log-moneyness range ln(K/F) that the default grid must include (e.g. the quoted range). */
  readonly kMin?: number;
  readonly kMax?: number;
  /** Half-width of the default grid in ATM total standard deviations s = iv(F) sqrt(T). Default 4
   * (call delta from about 3e-5 to 1 - 3e-5: every delta the API accepts, 0.01..0.99, is inside). */
  readonly nStd?: number;
  /** Number of points of the default grid (uniform in log-moneyness). Default 401. */
  readonly points?: number;
  /** Tolerance on the density p (dimensionless, x = K/F units) and on the slope/bound conditions.
   * Default 1e-7 (the peak of p is about 0.4/s, so this is ~1e-7 relative; floating-point noise of the
   * second differences is below 1e-10 on the default grid). */
  readonly tol?: number;
}

/** Result of {@link checkSmileDensity}. */
export interface SmileDensityCheck {
  /** True when every condition holds on the grid within `tol` (and iv is finite > 0 everywhere). */
  readonly arbitrageFree: boolean;
  /** Minimum over the interior grid points of the density p = F d^2C/dK^2 (density of F_T/F); NaN when
   * no interior point has valid vols. */
  readonly minDensity: number;
  /** Strike where the minimum density is attained. */
  readonly atStrike: number;
  /** Call prices non-increasing with slope >= -1 on the grid (within tol). */
  readonly monotone: boolean;
  /** Call prices convex on the grid (p >= -tol everywhere). */
  readonly convex: boolean;
  /** max(1 - x, 0) <= c <= 1 on the grid (within tol). */
  readonly withinBounds: boolean;
  /** iv(K) finite and > 0 at every grid strike. */
  readonly validVols: boolean;
  /** Number of interior grid points with p < -tol. */
  readonly densityViolations: number;
  /** Lowest and highest strike of the grid, and its size. */
  readonly grid: { readonly kMin: number; readonly kMax: number; readonly points: number };
}

/**
 * Default strike grid of the density check: `points` strikes uniform in k = ln(K/F) over
 * [-s^2/2 - nStd s, -s^2/2 + nStd s] (centred on the mean of ln(F_T/F) under a lognormal law with the ATM
 * vol), widened to include [kMin, kMax] when given; s = atmVol sqrt(T).
 * @throws RangeError when F, T or atmVol are not finite and > 0
 */
export function defaultDensityCheckStrikes(F: number, T: number, atmVol: number, options: DensityCheckOptions = {}): number[] {
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`defaultDensityCheckStrikes: F must be finite > 0, got ${F}`);
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`defaultDensityCheckStrikes: T must be finite > 0, got ${T}`);
  if (!(atmVol > 0 && Number.isFinite(atmVol))) throw new RangeError(`defaultDensityCheckStrikes: atmVol must be finite > 0, got ${atmVol}`);
  const s = atmVol * Math.sqrt(T);
  const nStd = options.nStd ?? 4;
  const n = Math.max(3, Math.floor(options.points ?? 401));
  let lo = -0.5 * s * s - nStd * s;
  let hi = -0.5 * s * s + nStd * s;
  if (options.kMin !== undefined && Number.isFinite(options.kMin)) lo = Math.min(lo, options.kMin);
  if (options.kMax !== undefined && Number.isFinite(options.kMax)) hi = Math.max(hi, options.kMax);
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(F * Math.exp(lo + ((hi - lo) * i) / (n - 1)));
  return out;
}

/**
 * Butterfly (density) check of a smile iv(K) for one expiry: Black-76 call prices on a strike grid must
 * be within bounds, non-increasing with slope >= -1, and convex (risk-neutral density >= 0), see the module
 * docstring for the formulas and sources.
 *
 * @param iv implied volatility (fraction) at strike K (same currency as F); a non-finite or non-positive
 *   value makes the smile invalid (arbitrageFree false), never an exception
 * @param F the expiry's forward (> 0)
 * @param T years ACT/365 (> 0)
 * @param options grid and tolerance; default grid {@link defaultDensityCheckStrikes} around iv(F)
 * @throws RangeError when F or T are not finite and > 0, iv(F) is not finite > 0 and no explicit grid is
 *   given, or an explicit grid has fewer than 3 points or is not strictly ascending and positive
 */
export function checkSmileDensity(iv: (K: number) => number, F: number, T: number, options: DensityCheckOptions = {}): SmileDensityCheck {
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`checkSmileDensity: F must be finite > 0, got ${F}`);
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`checkSmileDensity: T must be finite > 0, got ${T}`);
  let strikes: readonly number[];
  if (options.strikes) {
    strikes = options.strikes;
    if (strikes.length < 3) throw new RangeError('checkSmileDensity: the strike grid needs at least 3 points');
    for (let i = 0; i < strikes.length; i++) {
      const K = strikes[i] as number;
      if (!(K > 0 && Number.isFinite(K)) || (i > 0 && !(K > (strikes[i - 1] as number)))) {
        throw new RangeError('checkSmileDensity: strikes must be finite, > 0 and strictly ascending');
      }
    }
  } else {
    const atm = iv(F);
    if (!(atm > 0 && Number.isFinite(atm))) throw new RangeError(`checkSmileDensity: iv(F) must be finite > 0 for the default grid, got ${atm}`);
    strikes = defaultDensityCheckStrikes(F, T, atm, options);
  }
  const tol = options.tol ?? 1e-7;
  const n = strikes.length;
  const x = new Float64Array(n);
  const c = new Float64Array(n);
  let validVols = true;
  for (let i = 0; i < n; i++) {
    const K = strikes[i] as number;
    x[i] = K / F;
    const v = iv(K);
    if (!(v > 0 && Number.isFinite(v))) {
      validVols = false;
      c[i] = Number.NaN;
      continue;
    }
    c[i] = black76Price(1, x[i] as number, T, v, 'C');
  }
  let withinBounds = validVols;
  let monotone = validVols;
  if (validVols) {
    for (let i = 0; i < n; i++) {
      const ci = c[i] as number;
      if (ci < Math.max(1 - (x[i] as number), 0) - tol || ci > 1 + tol) withinBounds = false;
      if (i + 1 < n) {
        const slope = ((c[i + 1] as number) - ci) / ((x[i + 1] as number) - (x[i] as number));
        if (slope > tol || slope < -1 - tol) monotone = false;
      }
    }
  }
  let minDensity = Number.POSITIVE_INFINITY;
  let atStrike = Number.NaN;
  let violations = 0;
  for (let i = 1; i + 1 < n; i++) {
    const p = secondDifference(x, c, i);
    if (Number.isNaN(p)) continue;
    if (p < minDensity) {
      minDensity = p;
      atStrike = strikes[i] as number;
    }
    if (p < -tol) violations++;
  }
  if (minDensity === Number.POSITIVE_INFINITY) minDensity = Number.NaN; // no valid interior point
  const convex = validVols && violations === 0;
  return {
    arbitrageFree: validVols && withinBounds && monotone && convex,
    minDensity,
    atStrike,
    monotone,
    convex,
    withinBounds,
    validVols,
    densityViolations: violations,
    grid: { kMin: Math.log((strikes[0] as number) / F), kMax: Math.log((strikes[n - 1] as number) / F), points: n },
  };
}

/** Second divided difference of c at interior grid point i (non-uniform grid). */
function secondDifference(x: Float64Array, c: Float64Array, i: number): number {
  const x0 = x[i - 1] as number;
  const x1 = x[i] as number;
  const x2 = x[i + 1] as number;
  const s1 = ((c[i] as number) - (c[i - 1] as number)) / (x1 - x0);
  const s2 = ((c[i + 1] as number) - (c[i] as number)) / (x2 - x1);
  return (2 * (s2 - s1)) / (x2 - x0);
}

/**
 * Risk-neutral density of F_T/F implied by a smile on a strike grid (the same second divided differences
 * of normalized Black-76 call prices as {@link checkSmileDensity}), for diagnostics and penalties.
 * Returns one value per interior grid strike (length strikes.length - 2); NaN where iv is invalid.
 * @throws RangeError when F or T are not finite and > 0
 */
export function smileDensityOnGrid(iv: (K: number) => number, F: number, T: number, strikes: readonly number[]): number[] {
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`smileDensityOnGrid: F must be finite > 0, got ${F}`);
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`smileDensityOnGrid: T must be finite > 0, got ${T}`);
  const n = strikes.length;
  const x = new Float64Array(n);
  const c = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const K = strikes[i] as number;
    x[i] = K / F;
    const v = iv(K);
    c[i] = v > 0 && Number.isFinite(v) ? black76Price(1, x[i] as number, T, v, 'C') : Number.NaN;
  }
  const out: number[] = [];
  for (let i = 1; i + 1 < n; i++) out.push(secondDifference(x, c, i));
  return out;
}

/**
 * Hinge penalties of the conditions of {@link checkSmileDensity} on a strike grid, for constrained
 * (penalized) refits: for every interior point max(0, margin - p·scale) with p the density of F_T/F
 * (margin = 1e-6), and for every interval max(0, slope) + max(0, -1 - slope) of the normalized call
 * price c(K/F). All entries are >= 0 and vanish on an arbitrage-free grid; an invalid vol gives 1.
 * Length: (strikes.length - 2) + (strikes.length - 1).
 * @param scale multiplies the densities (e.g. the ATM total standard deviation, making p·scale O(1))
 * @throws RangeError when F or T are not finite and > 0
 */
export function smileArbitragePenalties(
  iv: (K: number) => number,
  F: number,
  T: number,
  strikes: readonly number[],
  scale = 1,
): number[] {
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`smileArbitragePenalties: F must be finite > 0, got ${F}`);
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`smileArbitragePenalties: T must be finite > 0, got ${T}`);
  const n = strikes.length;
  const x = new Float64Array(n);
  const c = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const K = strikes[i] as number;
    x[i] = K / F;
    const v = iv(K);
    c[i] = v > 0 && Number.isFinite(v) ? black76Price(1, x[i] as number, T, v, 'C') : Number.NaN;
  }
  const out: number[] = [];
  for (let i = 1; i + 1 < n; i++) {
    const p = secondDifference(x, c, i);
    out.push(Number.isFinite(p) ? Math.max(0, 1e-6 - p * scale) : 1);
  }
  for (let i = 0; i + 1 < n; i++) {
    const slope = ((c[i + 1] as number) - (c[i] as number)) / ((x[i + 1] as number) - (x[i] as number));
    out.push(Number.isFinite(slope) ? Math.max(0, slope) + Math.max(0, -1 - slope) : 1);
  }
  return out;
}
