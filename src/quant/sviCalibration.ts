/**
 * Calibration of raw SVI to one expiry's implied volatilities (mark IVs), robust on real chains.
 *
 * Pipeline (each step cites its source):
 * 1. Quasi-explicit fit (Zeliade Systems, "Quasi-explicit calibration of Gatheral's SVI model",
 *    Zeliade white paper ZWP-0005, 2009, sec. 3): for fixed (m, sigma) the smile
 *    w = a + d·y + c·sqrt(y^2 + 1), y = (k - m)/sigma, with c = b·sigma and d = rho·b·sigma, is linear
 *    in (a, d, c); that weighted least-squares problem is solved exactly under the linear constraints
 *    |d| <= c (|rho| <= 1), c + |d| <= 2 sigma (Lee 2004 moment bound b(1+|rho|) <= 2, in total
 *    variance), a + c - |d| >= floor (a sufficient linear form of w >= 0, since
 *    sqrt(c^2 - d^2) >= c - |d|; Gatheral-Jacquier 2014 sec. 3.1) and a <= max quoted variance
 *    (Zeliade's a-bound). The outer 2-D problem in (m, sigma) is searched on a deterministic grid
 *    (several starting points) and refined by Nelder-Mead from the grid's local minima (at most 3: adjacent
 *    grid points lie in one basin and would converge to the same optimum).
 *    Residuals are in variance, scaled by 1/(2·iv) so that they approximate IV errors
 *    (d sigma = dv / (2 sigma)).
 * 2. Levenberg-Marquardt polish of all free raw parameters on the exact IV residuals
 *    (Madsen-Nielsen-Tingleff 2004), with box bounds, the Lee bound and
 *    a >= floor - b sigma sqrt(1-rho^2) enforced by projection.
 * 3. Butterfly arbitrage: g(k) of Gatheral-Jacquier 2014 eq. (2.1) is checked on a k-grid; if it is
 *    negative anywhere, the LM is re-run with hinge penalty residuals on negative g (penalty weight
 *    raised ×10 per round, at most 6 rounds; violating grid points join the penalty points) and the
 *    final fit is verified again; a remaining violation is reported (`butterflyFree: false`, `minG`,
 *    a warning), never hidden. With `options.calendarFloor` (the previous expiry's fit) the same
 *    rounds also keep w(k) >= w_floor(k) (no calendar spread, Gatheral-Jacquier 2014 Lemma 2.1).
 * 4. Outliers (5-parameter mode, >= 10 quotes): the LM is re-run with a soft-L1 (pseudo-Huber)
 *    loss rho(r) = 2c^2 (sqrt(1 + (r/c)^2) - 1) on the weighted IV residuals, with the scale c =
 *    max(outlierSigmas · 1.4826·MAD of the least-squares residuals, floor) (MAD: Hampel et al.,
 *    "Robust Statistics", 1986; soft-L1 as in SciPy's least_squares, Triggs et al. 2000, "Bundle
 *    adjustment - a modern synthesis", sec. 6.8). Outliers keep a bounded influence and the fit
 *    stays a continuous function of the quotes (hard trimming would jump when a quote crosses the
 *    threshold).
 * 5. Sparse expiries degrade gracefully (design.md: a listed expiry may have 2 to 6 quoted strikes):
 *    1 quote -> flat smile; 2 -> (a, rho) fitted with m, sigma, b fixed; 3-4 -> (a, b, rho) with m and
 *    sigma fixed; 5-6 -> (a, b, rho, m) with sigma fixed. The fixed shape comes from `options.prior`
 *    (a neighbouring expiry's fit, rescaled to this expiry's ATM total variance s^2 by
 *    w(k) -> (s/s_p)^2 · w_p(k · s_p / s), which maps raw SVI to raw SVI) or from a default shape.
 *    `method` says what was done.
 * 6. ATM sanity check: the fitted ATM (k = 0) vol is compared with the market's (linear
 *    interpolation of the quotes around k = 0); a gap larger than max(1 vol pt, 3 RMSE) is a warning.
 *
 * Deterministic: no randomness; `options.previous` (warm start) only adds a starting point.
 */
import { gridLocalMinima, levenbergMarquardt, nelderMead, solveQp3, solveQpActiveSet } from './lm.js';
import {
  LEE_MAX_WING_SLOPE,
  butterflyArbitrageFree,
  defaultSviCheckGrid,
  sviTotalVariance,
  type SviParams,
} from './svi.js';
import {
  computeQuoteWeights,
  marketAtmIv,
  median,
  resolveWeighting,
  validSortedQuotes,
  type SviQuote,
  type SviWeighting,
} from './quoteWeights.js';
import { VolSurface } from './surface.js';

export type { SviQuote, SviWeighting } from './quoteWeights.js';

/** Options of {@link calibrateSvi}. */
export interface SviCalibrationOptions {
  /** Weighting scheme (quoteWeights.ts {@link SviWeighting}), default `auto`. */
  readonly weighting?: SviWeighting;
  /** Floor of relative vega weights, default 0.1. */
  readonly vegaFloor?: number;
  /** Floor of the bid-ask IV spread (fraction) for `spread` weights, default 0.005 (0.5 vol pt). */
  readonly minSpread?: number;
  /** Warm start: a previous fit of (nearly) the same expiry; adds one starting point. Optional. */
  readonly previous?: SviParams;
  /**
   * With `previous`: start ONLY from it (no grid of starting points in the outer (m, sigma) search), for the
   * incremental refit of a slice whose quotes moved a little since `previous` was fitted (issue 12 item 1). The
   * result is a local optimum near `previous`; the caller's periodic cold fit is the safety net should the global
   * optimum have moved elsewhere. Ignored without `previous`. Default false.
   */
  readonly warm?: boolean;
  /** Shape prior for sparse expiries: a neighbouring expiry's raw SVI fit (its own k and w units). */
  readonly prior?: SviParams;
  /**
   * Calendar floor: the raw SVI fit of the previous (shorter) expiry, same log-moneyness convention
   * (k against each expiry's own forward). The fit is then also kept above it, w(k) >= w_floor(k) on
   * the check grid (no calendar-spread arbitrage, Gatheral-Jacquier 2014 Lemma 2.1), by the same
   * penalty mechanism as the butterfly condition; the result's `calendarFree` reports it.
   */
  readonly calendarFloor?: SviParams;
  /**
   * Calendar ceiling: the total variance of the NEXT (longer) expiry's served slice and the k points where it
   * binds (its quoted log-moneyness outside this expiry's quoted range). The fit is kept at or below it there,
   * w(k) <= w_ceiling(k), by the same penalty rounds: the wings of a narrowly quoted short expiry give way to a
   * longer expiry that is quoted there (issue 11: arbitrage outside the quoted range is handled by the wings).
   */
  readonly calendarCeiling?: { readonly w: (k: number) => number; readonly kGrid: readonly number[] };
  /** Log-moneyness grid of the butterfly check (default: defaultSviCheckGrid of the fit). */
  readonly kGrid?: readonly number[];
  /** Robust (soft-L1) refit in the 5-parameter mode with >= 10 quotes. Default true. */
  readonly robust?: boolean;
  /** Scale of the soft-L1 loss, in robust standard deviations (1.4826·MAD) of the least-squares
   * weighted residuals. Default 3. */
  readonly outlierSigmas?: number;
  /** Lower bound of the soft-L1 scale, weighted vol points. Default 0.5. */
  readonly outlierFloorVolPts?: number;
  /** Minimum number of quotes for the full 5-parameter fit. Default 7 (>= 5). */
  readonly minQuotesFull?: number;
}

/** Fit mode: how many raw-SVI parameters were free. */
export type SviFitMode = 'flat' | 'svi-2p' | 'svi-3p' | 'svi-4p' | 'svi-5p';

/** Result of {@link calibrateSvi}. */
export interface SviCalibrationResult {
  /** Fitted raw SVI parameters (total variance of this expiry T). */
  readonly params: SviParams;
  /** Expiry, years. */
  readonly T: number;
  /** RMSE of fitted IV minus quote IV over the valid quotes (unweighted), vol points (|iv error| · 100). */
  readonly rmseVolPts: number;
  /** Largest |fitted IV - quote IV| over the valid quotes, vol points. */
  readonly maxErrorVolPts: number;
  /**
   * RMSE (vol points, unweighted, all valid quotes) of the same fit BEFORE the butterfly/calendar penalty
   * rounds: the unconstrained optimum of this weighting and loss; equals `rmseVolPts` when no penalty was needed.
   */
  readonly unconstrainedRmseVolPts: number;
  /** Number of valid quotes (all enter the fit; outliers with bounded influence). */
  readonly quotesUsed: number;
  /** Indices (into the input array) of invalid quotes that were dropped. */
  readonly quotesDropped: readonly number[];
  /** Indices (into the input array) of quotes whose weighted residual exceeds 3 robust-loss scales. */
  readonly outliers: readonly number[];
  /** Scale of the soft-L1 loss (weighted vol points), or null when the robust refit was not done. */
  readonly robustScaleVolPts: number | null;
  /** True when g(k) >= 0 on the check grid and the Lee bound holds (Gatheral-Jacquier 2014). */
  readonly butterflyFree: boolean;
  /** With `options.calendarFloor`: true when w(k) >= w_floor(k) on the check grid; null without a floor. */
  readonly calendarFree: boolean | null;
  /** Minimum of g on the check grid, and where. */
  readonly minG: number;
  readonly kAtMinG: number;
  /** Fit mode (number of free parameters). */
  readonly mode: SviFitMode;
  /** Human-readable account of what was done (mode, fixed parameters, robust loss, penalty). */
  readonly method: string;
  /** Weighting actually used. */
  readonly weighting: Exclude<SviWeighting, 'auto'>;
  /** Optimizer iterations: Nelder-Mead iterations plus LM iterations, summed over all passes. */
  readonly iterations: number;
  /** ATM (k = 0) sanity check: market IV (interpolated; null if k = 0 is outside the quotes) and fit IV. */
  readonly atm: { readonly marketIv: number | null; readonly modelIv: number; readonly errorVolPts: number | null };
  /** Warnings (ATM gap, remaining arbitrage, degraded fit). Empty when all is well. */
  readonly warnings: readonly string[];
}

interface Prepared {
  readonly k: Float64Array;
  readonly iv: Float64Array;
  readonly v: Float64Array; // iv^2
  readonly omega: Float64Array; // IV-residual weights, mean 1
  readonly index: number[]; // original indices
}

/**
 * Default sparse-fit shape, in units of the ATM total standard deviation s = sqrt(w_atm(0)):
 * sigma = 2 s, b = 0.75 s (b used only in the 2-quote mode), m = 0. These are the medians (rounded)
 * of the 5-parameter fits of all 29 expiries of the three recorded BTC chains in data/replay
 * (sigma/s = 2.2, b/s = 0.74, m/s = 0.25, rho = -0.16); rho is always fitted.
 */
const DEFAULT_SHAPE = { sigmaOverS: 2, bOverS: 0.75 } as const;

const RHO_MAX = 0.999;

/**
 * Calibrates raw SVI to one expiry. Deterministic for given inputs and options.
 * @param quotes the expiry's quotes (log-moneyness against the expiry forward, IV fractions).
 *   Quotes with a non-finite k, a non-positive or non-finite iv, or a non-positive weight are dropped.
 * @param T time to expiry in years (ACT/365), > 0.
 * @throws RangeError if T <= 0 or not finite, or if no valid quote remains.
 * Sources: see the module docstring (Zeliade 2009; Gatheral-Jacquier 2014; Lee 2004).
 */
export function calibrateSvi(quotes: readonly SviQuote[], T: number, options: SviCalibrationOptions = {}): SviCalibrationResult {
  if (!(T > 0) || !Number.isFinite(T)) throw new RangeError(`calibrateSvi: T must be a finite number > 0, got ${T}`);
  const { valid, dropped } = validSortedQuotes(quotes, 'calibrateSvi');
  const weighting = resolveWeighting(options.weighting ?? 'auto', valid.map((x) => x.q));
  const all = prepareQuotes(valid, T, weighting, options);
  const n = valid.length;
  const minFull = Math.max(5, options.minQuotesFull ?? 7);
  const mode: SviFitMode = n === 1 ? 'flat' : n === 2 ? 'svi-2p' : n <= 4 ? 'svi-3p' : n < minFull ? 'svi-4p' : 'svi-5p';
  const fit = mode === 'flat' ? flatSviFit(all, T) : shapedSviFit(all, T, mode, options);
  const a = assessSviFit(all, T, fit, options);
  dropped.sort((x, y) => x - y);
  return {
    params: fit.params,
    T,
    rmseVolPts: a.rmseVolPts,
    maxErrorVolPts: a.maxErrorVolPts,
    unconstrainedRmseVolPts: a.unconstrainedRmseVolPts,
    quotesUsed: all.k.length,
    quotesDropped: dropped,
    outliers: a.outliers,
    robustScaleVolPts: fit.robustScaleVolPts,
    butterflyFree: a.butterflyFree,
    calendarFree: a.calendarFree,
    minG: a.minG,
    kAtMinG: a.kAtMinG,
    mode,
    method: `${mode}: ${fit.notes.join('; ')}`,
    weighting,
    iterations: fit.iterations,
    atm: a.atm,
    warnings: a.warnings,
  };
}

/** The valid quotes (sorted) as arrays, with their IV-residual weights normalized to mean 1. */
function prepareQuotes(valid: ReturnType<typeof validSortedQuotes>['valid'], T: number, weighting: Exclude<SviWeighting, 'auto'>, options: SviCalibrationOptions): Prepared {
  const n = valid.length;
  const omegaAll = computeQuoteWeights(valid.map((x) => x.q), T, weighting, { vegaFloor: options.vegaFloor ?? 0.1, minSpread: options.minSpread ?? 0.005 });
  let omegaSum = 0;
  for (const w of omegaAll) omegaSum += w;
  return {
    k: Float64Array.from(valid, (x) => x.q.k),
    iv: Float64Array.from(valid, (x) => x.q.iv),
    v: Float64Array.from(valid, (x) => x.q.iv * x.q.iv),
    omega: Float64Array.from(omegaAll, (w) => (w * n) / omegaSum),
    index: valid.map((x) => x.i),
  };
}

/** What the fit of one expiry gave. */
interface SviFit {
  readonly params: SviParams;
  /** The parameters before the arbitrage penalty rounds, or null (flat smile). */
  readonly rawParams: SviParams | null;
  /** Scale of the soft-L1 loss, weighted vol points, or null without the robust refit. */
  readonly robustScaleVolPts: number | null;
  /** What was done, for `method`. */
  readonly notes: readonly string[];
  readonly iterations: number;
}

/** One quote: a flat smile through it (b = 0). */
function flatSviFit(all: Prepared, T: number): SviFit {
  const iv0 = all.iv[0] as number;
  const params = { a: iv0 * iv0 * T, b: 0, rho: 0, m: all.k[0] as number, sigma: 0.1 };
  return { params, rawParams: null, robustScaleVolPts: null, notes: ['flat smile through the single quote (b = 0)'], iterations: 0 };
}

/**
 * Two quotes or more: the quasi-explicit fit polished by least squares, the robust refit (5 parameters, >= 10
 * quotes), then penalty rounds while butterfly or calendar arbitrage remains.
 */
function shapedSviFit(all: Prepared, T: number, mode: Exclude<SviFitMode, 'flat'>, options: SviCalibrationOptions): SviFit {
  const shape = sparseShape(all, T, options.prior);
  const ctx = makeContext(all, T, mode, shape);
  const qe = quasiExplicit(ctx, options.previous ? [options.previous] : [], options.warm === true && options.previous !== undefined);
  const lm = polish(ctx, qe.params, { lambda: 0 });
  const robust = robustRefit(ctx, lm.params, all, T, mode, options);
  const raw = robust.params;
  const repaired = repairArbitrage(ctx, raw, all, robust.scale, options);
  const notes = [describeMode(mode, shape)];
  const robustScaleVolPts = robust.scale === null ? null : 100 * robust.scale;
  if (robustScaleVolPts !== null) notes.push(`soft-L1 robust loss, scale ${robustScaleVolPts.toFixed(2)} weighted vol pts`);
  if (repaired.penalty) notes.push(options.calendarFloor ? 'butterfly/calendar penalty applied' : 'butterfly penalty on negative g(k) applied');
  const iterations = qe.iterations + lm.iterations + robust.iterations + repaired.iterations;
  return { params: repaired.params, rawParams: raw, robustScaleVolPts, notes, iterations };
}

/**
 * Robust refit (>= 10 quotes, 5-parameter mode): soft-L1 loss whose scale is a multiple of the MAD of the
 * least-squares residuals, so that outliers have bounded influence. Unlike hard trimming this keeps the fit a
 * continuous function of the quotes. Otherwise `p` as is, with a null scale.
 */
function robustRefit(ctx: Context, p: SviParams, data: Prepared, T: number, mode: SviFitMode, options: SviCalibrationOptions): { params: SviParams; scale: number | null; iterations: number } {
  if (!(mode === 'svi-5p' && data.k.length >= 10 && (options.robust ?? true))) return { params: p, scale: null, iterations: 0 };
  const res = residualsVolPts(p, data, T).map((e, t) => (e / 100) * Math.sqrt(data.omega[t] as number));
  const med = median(res);
  const mad = 1.4826 * median(res.map((e) => Math.abs(e - med)));
  const scale = Math.max((options.outlierSigmas ?? 3) * mad, (options.outlierFloorVolPts ?? 0.5) / 100);
  const rb = polish(ctx, p, { lambda: 0, lossScale: scale });
  return { params: rb.params, scale, iterations: rb.iterations };
}

/**
 * Up to 6 penalty rounds (lambda 1, 10, ...) while butterfly arbitrage, calendar arbitrage against the floor, or a
 * crossing of the ceiling remains; the penalty points are a coarse grid plus every violating check-grid point found so far.
 */
function repairArbitrage(ctx: Context, start: SviParams, data: Prepared, robustScale: number | null, options: SviCalibrationOptions): { params: SviParams; penalty: boolean; iterations: number } {
  const floor = options.calendarFloor;
  let p = start;
  let iterations = 0;
  const gridOf = (q: SviParams): readonly number[] => options.kGrid ?? defaultSviCheckGrid(q);
  let chk = butterflyArbitrageFree(p, gridOf(p));
  let cal = floor ? calendarViolations(p, floor, gridOf(p)) : [];
  const ceiling = options.calendarCeiling;
  const ceilGrid = ceiling ? ceiling.kGrid.filter((k) => Number.isFinite(ceiling.w(k)) && ceiling.w(k) > 0) : [];
  const ceilViolations = (q: SviParams): number[] => (ceiling ? ceilGrid.filter((k) => sviTotalVariance(q, k) > ceiling.w(k)) : []);
  let ceil = ceilViolations(p);
  let penalty = false;
  // Penalty points: a coarse grid plus every violating check-grid point found so far.
  const penPts = options.kGrid ? [...options.kGrid] : penaltyGrid(p, data);
  const calPts = floor ? [...penPts] : [];
  for (let round = 0, lambda = 1; (!chk.arbitrageFree || cal.length > 0 || ceil.length > 0) && round < 6; round++, lambda *= 10) {
    penalty = true;
    for (const k of thin(chk.violations, 40)) penPts.push(k);
    for (const k of thin(cal, 40)) calPts.push(k);
    const pen = polish(ctx, p, {
      lambda,
      bfGrid: penPts,
      calGrid: calPts,
      floor,
      lossScale: robustScale ?? undefined,
      ...(ceiling ? { ceiling: { w: ceilGrid.map((k) => ceiling.w(k)), k: ceilGrid } } : {}),
    });
    iterations += pen.iterations;
    p = pen.params;
    chk = butterflyArbitrageFree(p, gridOf(p));
    cal = floor ? calendarViolations(p, floor, gridOf(p)) : [];
    ceil = ceilViolations(p);
  }
  return { params: p, penalty, iterations };
}

/**
 * The fit's checks: arbitrage left (butterfly; calendar against the floor), errors against the quotes (RMSE, max,
 * before the penalty), outliers (weighted residual over 3 robust scales), and the ATM check; warnings in that order.
 */
function assessSviFit(all: Prepared, T: number, fit: SviFit, options: SviCalibrationOptions) {
  const { params, rawParams, robustScaleVolPts } = fit;
  const warnings: string[] = [];
  const check = butterflyArbitrageFree(params, options.kGrid ?? defaultSviCheckGrid(params));
  if (!check.arbitrageFree) warnings.push(`butterfly arbitrage remains: min g = ${check.minG.toExponential(3)} at k = ${check.kAtMinG.toFixed(4)}`);
  let calendarFree: boolean | null = null;
  if (options.calendarFloor) {
    const cv = calendarViolations(params, options.calendarFloor, options.kGrid ?? defaultSviCheckGrid(params));
    calendarFree = cv.length === 0;
    if (!calendarFree) warnings.push(`calendar arbitrage vs the earlier expiry remains at ${cv.length} grid points (first k = ${(cv[0] as number).toFixed(4)})`);
  }
  const res = residualsVolPts(params, all, T);
  const rmse = Math.sqrt(res.reduce((s, e) => s + e * e, 0) / res.length);
  const maxErr = res.reduce((s, e) => Math.max(s, Math.abs(e)), 0);
  const resRaw = rawParams ? residualsVolPts(rawParams, all, T) : res;
  const rawRmse = Math.sqrt(resRaw.reduce((s, e) => s + e * e, 0) / resRaw.length);
  const outliers =
    robustScaleVolPts === null
      ? []
      : res
          .map((e, t) => ({ e: Math.abs(e) * Math.sqrt(all.omega[t] as number), i: all.index[t] as number }))
          .filter((x) => x.e > 3 * robustScaleVolPts)
          .map((x) => x.i)
          .sort((x, y) => x - y);
  const atmMarketIv = marketAtmIv(all.k, all.iv);
  const modelAtm = Math.sqrt(Math.max(sviTotalVariance(params, 0), 0) / T);
  const atmErr = atmMarketIv === null ? null : 100 * (modelAtm - atmMarketIv);
  if (atmErr !== null && Math.abs(atmErr) > Math.max(1, 3 * rmse)) {
    warnings.push(`ATM check: fitted ATM IV ${(100 * modelAtm).toFixed(2)} vs market ${(100 * atmMarketIv!).toFixed(2)} vol pts`);
  }
  return {
    rmseVolPts: rmse,
    maxErrorVolPts: maxErr,
    unconstrainedRmseVolPts: Number.isFinite(rawRmse) ? rawRmse : rmse,
    outliers,
    butterflyFree: check.arbitrageFree,
    calendarFree,
    minG: check.minG,
    kAtMinG: check.kAtMinG,
    atm: { marketIv: atmMarketIv, modelIv: modelAtm, errorVolPts: atmErr },
    warnings,
  };
}

// ---------------------------------------------------------------------------------------------
// Shapes for sparse fits

interface Shape {
  readonly m: number;
  readonly sigma: number;
  readonly b: number;
  readonly rho: number;
  readonly fromPrior: boolean;
}

/** ATM total variance estimate: linear interpolation of w at k = 0, or the nearest quote's. */
function atmTotalVariance(d: Prepared, T: number): number {
  const iv = marketAtmIv(d.k, d.iv);
  if (iv !== null) return iv * iv * T;
  const k = d.k;
  const j = Math.abs(k[0] as number) < Math.abs(k[k.length - 1] as number) ? 0 : k.length - 1;
  return (d.v[j] as number) * T;
}

function sparseShape(d: Prepared, T: number, prior: SviParams | undefined): Shape {
  const s = Math.sqrt(atmTotalVariance(d, T));
  if (prior) {
    const wp = sviTotalVariance(prior, 0);
    if (wp > 0 && Number.isFinite(wp) && prior.sigma > 0 && prior.b >= 0 && Math.abs(prior.rho) < 1) {
      const sc = s / Math.sqrt(wp);
      return { m: prior.m * sc, sigma: prior.sigma * sc, b: prior.b * sc, rho: prior.rho, fromPrior: true };
    }
  }
  return { m: 0, sigma: DEFAULT_SHAPE.sigmaOverS * s, b: DEFAULT_SHAPE.bOverS * s, rho: 0, fromPrior: false };
}

function describeMode(mode: SviFitMode, sh: Shape): string {
  const src = sh.fromPrior ? 'rescaled from the prior (neighbouring expiry)' : 'default shape';
  switch (mode) {
    case 'svi-5p':
      return 'raw SVI, all 5 parameters free (quasi-explicit grid + Nelder-Mead, then LM)';
    case 'svi-4p':
      return `raw SVI, sigma fixed at ${sh.sigma.toPrecision(4)} (${src}); a, b, rho, m fitted`;
    case 'svi-3p':
      return `raw SVI, m = ${sh.m.toPrecision(4)} and sigma = ${sh.sigma.toPrecision(4)} fixed (${src}); a, b, rho fitted`;
    case 'svi-2p':
      return `raw SVI, m = ${sh.m.toPrecision(4)}, sigma = ${sh.sigma.toPrecision(4)}, b = ${sh.b.toPrecision(4)} fixed (${src}); a, rho fitted`;
    default:
      return 'flat';
  }
}

// ---------------------------------------------------------------------------------------------
// Stage 1: quasi-explicit (Zeliade 2009)

interface Context {
  readonly d: Prepared;
  readonly T: number;
  readonly mode: Exclude<SviFitMode, 'flat'>;
  readonly shape: Shape;
  readonly mLo: number;
  readonly mHi: number;
  readonly sLo: number;
  readonly sHi: number;
  /** Variance floor (IV^2 units) for w >= floor·T. */
  readonly vFloor: number;
  readonly vMax: number;
  /** w-space weights lambda_i = omega_i / (4 v_i) (IV-residual approximation). */
  readonly lam: Float64Array;
}

function makeContext(d: Prepared, T: number, mode: Exclude<SviFitMode, 'flat'>, shape: Shape): Context {
  const kMin = d.k[0] as number;
  const kMax = d.k[d.k.length - 1] as number;
  const span = Math.max(kMax - kMin, 1e-6);
  const s = Math.sqrt(atmTotalVariance(d, T));
  let vMin = Number.POSITIVE_INFINITY;
  let vMax = 0;
  for (const v of d.v) {
    vMin = Math.min(vMin, v);
    vMax = Math.max(vMax, v);
  }
  const lam = new Float64Array(d.k.length);
  for (let i = 0; i < lam.length; i++) lam[i] = (d.omega[i] as number) / (4 * (d.v[i] as number));
  return {
    d,
    T,
    mode,
    shape,
    // Wide boxes: on real chains the best raw-SVI fit of a long expiry can be a near-parabola (sigma several
    // times the quoted span, large negative a, e.g. Deribit 26MAR27 of 2026-05-26: sigma 4.5, span 1.6);
    // narrower boxes cost up to 0.1 vol pt against the unconstrained optimum (test/calibration/referenceGap).
    mLo: kMin - span,
    mHi: kMax + span,
    sLo: Math.max(1e-4, 0.01 * s),
    sHi: Math.max(4 * span, 4 * s),
    vFloor: 0.0625 * vMin,
    vMax,
    lam,
  };
}

interface Inner {
  /** a, d, c in variance units (divided by T). */
  readonly x: [number, number, number];
  readonly sse: number;
}

/**
 * Constrained weighted linear least squares for (a, d, c) at fixed (m, sigma), variance units
 * (w/T): a 3-variable convex QP under the 7 linear constraints of the module docstring.
 * Solved in the variables (a, p, q), p = (c + d)/2, q = (c - d)/2, where w/T = a + p·(z + y) + q·(z - y) with
 * z = sqrt(y^2 + 1): the same problem after a linear change of variables, but well conditioned when every quote
 * lies on one side of m (there the columns y and z of the (a, d, c) form are nearly equal, while (z + y)(z - y) = 1
 * keeps these two apart), and its constraints are bounds: |rho| <= 1 is p, q >= 0, the Lee bound 2p, 2q <= L,
 * w >= floor is a + 2p, a + 2q >= floor. Solved exactly by enumerating the active sets (lm.ts solveQp3), or, with
 * `fixC` (2-parameter mode: c = p + q fixed), when H is ill-conditioned (relative determinant < 1e-8, e.g. sigma
 * large against the quotes' spread: 1, z + y and z - y nearly dependent) and in degenerate cases, by the primal
 * active-set method (Nocedal-Wright 2006, Alg. 16.3) from a strictly feasible start.
 */
function innerFit(ctx: Context, m: number, sigma: number, fixC?: number): Inner {
  const { d, lam, T } = ctx;
  let h00 = 0, h01 = 0, h02 = 0, h11 = 0, h22 = 0, g0 = 0, g1 = 0, g2 = 0, c0 = 0;
  const n = d.k.length;
  for (let i = 0; i < n; i++) {
    const y = ((d.k[i] as number) - m) / sigma;
    const z = Math.sqrt(y * y + 1);
    // s = z + y and t = z - y = 1/s, each computed without cancellation.
    const s = y >= 0 ? z + y : 1 / (z - y);
    const t = y >= 0 ? 1 / (z + y) : z - y;
    const l = lam[i] as number;
    const v = d.v[i] as number;
    const ls = l * s;
    const lt = l * t;
    h00 += l;
    h01 += ls;
    h02 += lt;
    h11 += ls * s;
    h22 += lt * t;
    g0 += l * v;
    g1 += ls * v;
    g2 += lt * v;
    c0 += l * v * v;
  }
  const h12 = h00; // sum of lambda s t, s t = 1
  const ridge = 1e-10 * ((h00 + h11 + h22) / 3) + 1e-300;
  const H = [
    [h00 + ridge, h01, h02],
    [h01, h11 + ridge, h12],
    [h02, h12, h22 + ridge],
  ];
  const g = [g0, g1, g2];
  const L = (LEE_MAX_WING_SLOPE * sigma) / T; // c + |d| <= 2 sigma / T (variance units)
  const bv = [0, 0, L, L, -ctx.vFloor, -ctx.vFloor, ctx.vMax];
  const cFix = fixC !== undefined ? Math.min(fixC / T, 0.999 * L) : undefined;
  let x: number[] | null = cFix === undefined ? solveQp3(H, g, INNER_A, bv) : null;
  if (x === null) {
    const c = cFix ?? L / 4;
    const x0 = [(ctx.vFloor + ctx.vMax) / 2, c / 2, c / 2];
    x = solveQpActiveSet(H, g, INNER_A, bv, cFix !== undefined ? [[0, 1, 1]] : [], cFix !== undefined ? [cFix] : [], x0).x;
  }
  let sse = c0;
  for (let r = 0; r < 3; r++) {
    const Hr = H[r] as number[];
    sse += (x[r] as number) * ((Hr[0] as number) * (x[0] as number) + (Hr[1] as number) * (x[1] as number) + (Hr[2] as number) * (x[2] as number)) - 2 * (g[r] as number) * (x[r] as number);
  }
  const [a, p, q] = x as [number, number, number];
  return { x: [a, p - q, p + q], sse: Math.max(sse, 0) };
}

/** Inequality rows A x <= b of the inner problem in x = (a, p, q), variance units (innerFit):
 * -q <= 0, -p <= 0 (|rho| <= 1: |d| <= c); 2p <= L, 2q <= L (Lee: c + |d| <= L); -a - 2q <= -floor and
 * -a - 2p <= -floor (w >= floor: a + c -|d| >= floor); a <= vMax. */
const INNER_A: readonly (readonly number[])[] = [
  [0, 0, -1],
  [0, -1, 0],
  [0, 2, 0],
  [0, 0, 2],
  [-1, 0, -2],
  [-1, -2, 0],
  [1, 0, 0],
];

function innerToParams(ctx: Context, m: number, sigma: number, x: readonly [number, number, number]): SviParams {
  const [a, d, c] = x;
  const b = (c * ctx.T) / sigma;
  const rho = c > 0 ? Math.max(-RHO_MAX, Math.min(RHO_MAX, d / c)) : 0;
  return { a: a * ctx.T, b: Math.max(b, 0), rho, m, sigma };
}

const sigmoid = (u: number): number => 1 / (1 + Math.exp(-u));
const logit = (p: number): number => Math.log(p / (1 - p));

/**
 * Outer search of the quasi-explicit method (Zeliade 2009): (m, sigma) by Nelder-Mead over the inner linear
 * least-squares fit of (a, c, d). Cold: a 9 x 8 grid, then Nelder-Mead from the 3 best of its local minima (points
 * no worse than their 8 neighbours) and from each of `extraStarts`. `warmOnly` (with extra starts): Nelder-Mead from the extra starts alone.
 */
function quasiExplicit(ctx: Context, extraStarts: readonly SviParams[], warmOnly = false): { params: SviParams; iterations: number } {
  const { mode, shape } = ctx;
  if (mode === 'svi-2p' || mode === 'svi-3p') {
    const fixC = mode === 'svi-2p' ? shape.b * shape.sigma : undefined;
    const r = innerFit(ctx, shape.m, shape.sigma, fixC);
    return { params: innerToParams(ctx, shape.m, shape.sigma, r.x), iterations: 0 };
  }
  const lnLo = Math.log(ctx.sLo);
  const lnHi = Math.log(ctx.sHi);
  // Starts are kept inside [1 %, 99 %] of each box: a warm start on the box's edge (e.g. sigma at its floor)
  // would otherwise map to a logit of +-20, where the sigmoid is flat and the simplex cannot move.
  const clampP = (p: number): number => Math.min(0.99, Math.max(0.01, p));
  const toM = (u: number): number => ctx.mLo + (ctx.mHi - ctx.mLo) * sigmoid(u);
  const toS = (v: number): number => Math.exp(lnLo + (lnHi - lnLo) * sigmoid(v));
  const fromM = (m: number): number => logit(clampP((m - ctx.mLo) / (ctx.mHi - ctx.mLo)));
  const fromS = (s: number): number => logit(clampP((Math.log(s) - lnLo) / (lnHi - lnLo)));
  let iterations = 0;
  const warmStarts = warmOnly ? extraStarts.filter((p) => Number.isFinite(p.m) && p.sigma > 0) : [];
  if (mode === 'svi-4p') {
    const sigma = Math.min(Math.max(shape.sigma, ctx.sLo), ctx.sHi);
    const f = (x: readonly number[]): number => innerFit(ctx, toM(x[0]!), sigma).sse;
    let bestU = 0;
    let bestF = Number.POSITIVE_INFINITY;
    for (const p of warmStarts) {
      const u = fromM(Math.min(Math.max(p.m, ctx.mLo), ctx.mHi));
      const fu = f([u]);
      if (fu < bestF) {
        bestF = fu;
        bestU = u;
      }
    }
    for (let i = 0; i < (warmStarts.length > 0 ? 0 : 11); i++) {
      const u = fromM(ctx.mLo + ((ctx.mHi - ctx.mLo) * (i + 0.5)) / 11);
      const fu = f([u]);
      if (fu < bestF) {
        bestF = fu;
        bestU = u;
      }
    }
    const nm = nelderMead(f, [bestU], { initialStep: 0.3, maxEvaluations: 200 });
    iterations += nm.iterations;
    const m = toM(nm.x[0]!);
    return { params: innerToParams(ctx, m, sigma, innerFit(ctx, m, sigma).x), iterations };
  }
  // Full 5-parameter mode: outer (m, sigma) on a grid, then Nelder-Mead from the best points.
  const f = (x: readonly number[]): number => innerFit(ctx, toM(x[0]!), toS(x[1]!)).sse;
  const NM = 9;
  const NS = 8;
  const cand: { x: number[]; f: number }[] = [];
  for (let i = 0; i < (warmStarts.length > 0 ? 0 : NM); i++) {
    for (let j = 0; j < NS; j++) {
      const x = [fromM(ctx.mLo + ((ctx.mHi - ctx.mLo) * (i + 0.5)) / NM), fromS(Math.exp(lnLo + ((lnHi - lnLo) * (j + 0.5)) / NS))];
      cand.push({ x, f: f(x) });
    }
  }
  // Starts: the grid's local minima (no better point among the 8 neighbours), best first, at most 3.
  const starts = gridLocalMinima(cand, NS, 3);
  for (const p of extraStarts) {
    if (Number.isFinite(p.m) && p.sigma > 0) starts.push([fromM(Math.min(Math.max(p.m, ctx.mLo), ctx.mHi)), fromS(Math.min(Math.max(p.sigma, ctx.sLo), ctx.sHi))]);
  }
  let best: { x: number[]; f: number } | null = null;
  for (const s of starts) {
    // a warm start is already near the optimum: a smaller first simplex
    const nm = nelderMead(f, s, { initialStep: warmStarts.length > 0 ? 0.1 : 0.4, maxEvaluations: 160, fTol: 1e-7, xTol: 1e-4 });
    iterations += nm.iterations;
    if (best === null || nm.f < best.f * (1 - 1e-12)) best = { x: nm.x, f: nm.f };
  }
  const b = best as { x: number[]; f: number };
  const m = toM(b.x[0]!);
  const sigma = toS(b.x[1]!);
  return { params: innerToParams(ctx, m, sigma, innerFit(ctx, m, sigma).x), iterations };
}

// ---------------------------------------------------------------------------------------------
// Stage 2: LM polish on IV residuals (+ butterfly penalty)

/** Free raw-parameter indices per mode, in the order [a, b, rho, m, sigma]. */
function freeIndices(mode: Exclude<SviFitMode, 'flat'>): number[] {
  switch (mode) {
    case 'svi-5p':
      return [0, 1, 2, 3, 4];
    case 'svi-4p':
      return [0, 1, 2, 3];
    case 'svi-3p':
      return [0, 1, 2];
    default:
      return [0, 2];
  }
}

/** Coarse guard grid of the penalty rounds (violating check-grid points are added to it round by round). */
function penaltyGrid(p: SviParams, d: Prepared): number[] {
  const pts: number[] = [];
  for (let i = 0; i <= 60; i++) pts.push(-3 + (6 * i) / 60);
  const s = Math.max(p.sigma, 1e-4);
  for (let i = 0; i <= 40; i++) pts.push(p.m - 12 * s + (24 * s * i) / 40);
  const kMin = d.k[0] as number;
  const kMax = d.k[d.k.length - 1] as number;
  for (let i = 0; i <= 20; i++) pts.push(kMin + ((kMax - kMin) * i) / 20);
  return pts.sort((x, y) => x - y);
}

/** Penalty and loss settings of {@link polish}. */
interface PolishOptions {
  /** Penalty weight (0: no penalty rows). */
  readonly lambda: number;
  /** Butterfly penalty points (hinge on g < 1e-4). */
  readonly bfGrid?: readonly number[];
  /** Calendar penalty points (hinge on w < w_floor + margin), used with `floor`. */
  readonly calGrid?: readonly number[];
  readonly floor?: SviParams;
  /** Calendar ceiling points and values (hinge on w > w_ceiling - margin). */
  readonly ceiling?: { readonly k: readonly number[]; readonly w: readonly number[] };
  /** Soft-L1 scale of the IV residuals (undefined: plain least squares). */
  readonly lossScale?: number;
}

/** Raw SVI parameters from the vector [a, b, rho, m, sigma]. */
function paramsOfVector(p: readonly number[]): SviParams {
  return { a: p[0]!, b: p[1]!, rho: p[2]!, m: p[3]!, sigma: p[4]! };
}

/** The full raw vector [a, b, rho, m, sigma]: the free entries (indices `free`, in order) from x, the others from `base`. */
function fullVector(base: readonly number[], free: readonly number[], x: readonly number[]): number[] {
  const p = [...base];
  free.forEach((j, t) => {
    p[j] = x[t]!;
  });
  return p;
}

/**
 * The free entries of x projected on the polish's feasible set: sigma in [sLo, sHi], m in [mLo, mHi], |rho| <= RHO_MAX,
 * b in [0, Lee's bound / (1 + |rho|)], and a raised so that the minimum total variance is at least `floorW`.
 */
function projectFree(ctx: Context, base: readonly number[], free: readonly number[], floorW: number, x: number[]): number[] {
  const p = fullVector(base, free, x);
  p[4] = Math.min(Math.max(p[4]!, ctx.sLo), ctx.sHi);
  p[3] = Math.min(Math.max(p[3]!, ctx.mLo), ctx.mHi);
  p[2] = Math.min(Math.max(p[2]!, -RHO_MAX), RHO_MAX);
  p[1] = Math.min(Math.max(p[1]!, 0), LEE_MAX_WING_SLOPE / (1 + Math.abs(p[2]!)));
  const aMin = floorW - p[1]! * p[4]! * Math.sqrt(1 - p[2]! * p[2]!);
  if (p[0]! < aMin) p[0] = aMin;
  return free.map((j) => p[j]!);
}

/** soft-L1 transform of a residual (r~^2 = 2c^2 (sqrt(1 + (r/c)^2) - 1), c the loss scale); the identity without one. */
function softL1Value(r: number, lossScale: number | undefined): number {
  if (lossScale === undefined) return r;
  const u = r / lossScale;
  const q = Math.sqrt(1 + u * u);
  return Math.sign(r) * lossScale * Math.sqrt((2 * u * u) / (q + 1));
}

/** The derivative d r~ / d r of {@link softL1Value}; 1 without a loss scale. */
function softL1Slope(r: number, lossScale: number | undefined): number {
  if (lossScale === undefined) return 1;
  const u = r / lossScale;
  const q = Math.sqrt(1 + u * u);
  const rt = Math.sign(r) * lossScale * Math.sqrt((2 * u * u) / (q + 1));
  return rt === 0 ? 1 : r / (rt * q);
}

/** The penalty rows of {@link polish}: `count` rows, row j at the parameters p. */
interface PenaltyRows {
  readonly count: number;
  readonly row: (p: SviParams, j: number) => number;
}

/**
 * The penalty rows of the polish (none when lambda is 0): butterfly rows (hinge on g < 1e-4 on the guard grid), then
 * calendar floor rows (hinge on w < w_floor + margin), then ceiling rows (hinge on w > w_ceiling - margin), the
 * calendar rows in IV-equivalent units, each scaled by sqrt(lambda).
 */
function polishPenalties(start: SviParams, d: Prepared, T: number, po: PolishOptions): PenaltyRows {
  const { lambda, floor } = po;
  const gridArr = lambda > 0 ? (po.bfGrid ?? penaltyGrid(start, d)) : [];
  const calArr = lambda > 0 && floor ? (po.calGrid ?? gridArr) : [];
  const calFloor = calArr.map((k) => sviTotalVariance(floor as SviParams, k));
  const calScale = calFloor.map((w) => 1 / (2 * Math.sqrt(Math.max(w, 1e-12) * T)));
  // Target margin of 1e-4 in IV terms (0.01 vol point): w_floor + 2·1e-4·sqrt(w_floor T).
  const calMargin = calFloor.map((w) => 2e-4 * Math.sqrt(Math.max(w, 0) * T));
  const sl = Math.sqrt(lambda);
  const gTarget = 1e-4;
  const nBf = gridArr.length;
  const nCal = calArr.length;
  const ceilK = lambda > 0 && po.ceiling ? po.ceiling.k : [];
  /** Penalty row j (butterfly rows, then calendar floor rows, then ceiling rows) at p. */
  const row = (p: SviParams, j: number): number => {
    if (j < nBf) {
      const gk = gInline(p, gridArr[j] as number);
      return sl * Math.max(0, gTarget - (Number.isFinite(gk) ? gk : -10));
    }
    if (j < nBf + nCal) {
      // Calendar rows in IV-equivalent units: (w_floor + margin - w) / (2 sqrt(w_floor T)).
      const c = j - nBf;
      return sl * (calScale[c] as number) * Math.max(0, (calFloor[c] as number) + (calMargin[c] as number) - wInline(p, calArr[c] as number));
    }
    // Ceiling rows, same units: (w - w_ceiling + margin) / (2 sqrt(w_ceiling T)).
    const c = j - nBf - nCal;
    const wc = po.ceiling!.w[c] as number;
    return (sl * Math.max(0, wInline(p, ceilK[c] as number) - wc + 2e-4 * Math.sqrt(wc * T))) / (2 * Math.sqrt(wc * T));
  };
  return { count: nBf + nCal + ceilK.length, row };
}

/** What the residuals and the Jacobian of {@link polish} share: the data, the free indices and the penalty rows. */
interface PolishProblem {
  readonly d: Prepared;
  readonly T: number;
  /** sqrt(omega_i), the IV rows' weights. */
  readonly sqrtOm: readonly number[];
  readonly base: readonly number[];
  readonly free: readonly number[];
  readonly pen: PenaltyRows;
  readonly lossScale: number | undefined;
}

/** The residual vector at the free parameters x: the soft-L1 weighted IV residuals, then the penalty rows. */
function polishResiduals(pb: PolishProblem, x: readonly number[]): number[] {
  const { d, T, sqrtOm, pen } = pb;
  const nq = d.k.length;
  const p = paramsOfVector(fullVector(pb.base, pb.free, x));
  const out = new Array<number>(nq + pen.count);
  for (let i = 0; i < nq; i++) {
    const w = wInline(p, d.k[i] as number);
    out[i] = softL1Value(sqrtOm[i]! * (Math.sqrt(Math.max(w, 1e-300) / T) - (d.iv[i] as number)), pb.lossScale);
  }
  for (let j = 0; j < pen.count; j++) out[nq + j] = pen.row(p, j);
  return out;
}

/**
 * Analytic Jacobian of the IV rows at xv (r: the residuals there), one column per free parameter:
 * d r_i / d p = sqrt(omega_i) / (2 sqrt(w T)) · dw/dp · d r~/d r, dw/da = 1, dw/db = rho x + R, dw/drho = b x,
 * dw/dm = -b (rho + x/R), dw/dsigma = b sigma / R, x = k - m, R = sqrt(x^2 + sigma^2). Penalty rows by forward
 * differences ({@link addPenaltyJacobian}).
 */
function polishJacobian(pb: PolishProblem, xv: readonly number[], r: readonly number[]): number[][] {
  const { d, T, sqrtOm, free } = pb;
  const nq = d.k.length;
  const p = paramsOfVector(fullVector(pb.base, free, xv));
  const cols = free.map(() => new Array<number>(r.length).fill(0));
  for (let i = 0; i < nq; i++) {
    const x = (d.k[i] as number) - p.m;
    const R = Math.sqrt(x * x + p.sigma * p.sigma);
    const w = p.a + p.b * (p.rho * x + R);
    const wc = Math.max(w, 1e-300);
    const dr = softL1Slope(sqrtOm[i]! * (Math.sqrt(wc / T) - (d.iv[i] as number)), pb.lossScale);
    const f = w > 0 ? (sqrtOm[i]! * dr) / (2 * Math.sqrt(wc * T)) : 0;
    for (let t = 0; t < free.length; t++) {
      const j = free[t] as number;
      const dw = j === 0 ? 1 : j === 1 ? p.rho * x + R : j === 2 ? p.b * x : j === 3 ? -p.b * (p.rho + x / R) : (p.b * p.sigma) / R;
      (cols[t] as number[])[i] = f * dw;
    }
  }
  addPenaltyJacobian(pb, xv, r, cols);
  return cols;
}

/**
 * The penalty rows' Jacobian entries (into cols) by forward differences, only those active at xv (a hinge row that is
 * zero at xv has the zero one-sided derivative; the step h moves g or w by ~1e-7 relative, so only a row on its very
 * threshold could turn on, and the LM's next Jacobian sees it then): a handful of rows instead of every guard point
 * five times.
 */
function addPenaltyJacobian(pb: PolishProblem, xv: readonly number[], r: readonly number[], cols: number[][]): void {
  const nq = pb.d.k.length;
  const active: number[] = [];
  for (let g = 0; g < pb.pen.count; g++) if ((r[nq + g] as number) > 0) active.push(g);
  if (active.length > 0) {
    pb.free.forEach((j, t) => {
      const xp = [...xv];
      const h = 1e-7 * Math.max(Math.abs(xp[t] as number), 1e-4);
      xp[t] = (xp[t] as number) + h;
      const pp = paramsOfVector(fullVector(pb.base, pb.free, xp));
      for (const g of active) (cols[t] as number[])[nq + g] = (pb.pen.row(pp, g) - (r[nq + g] as number)) / h;
    });
  }
}

/**
 * Stage 2 of the fit: projected Levenberg-Marquardt (lm.ts, geodesic acceleration) of the free raw parameters of
 * `ctx.mode` from `start`, on the IV residuals (soft-L1 with `po.lossScale`) plus the penalty rows of
 * {@link polishPenalties}; at most 200 iterations with penalties, 100 without.
 */
function polish(ctx: Context, start: SviParams, po: PolishOptions): { params: SviParams; iterations: number } {
  const { lambda, lossScale } = po;
  const free = freeIndices(ctx.mode);
  const base = [start.a, start.b, start.rho, start.m, start.sigma];
  const { d, T } = ctx;
  const sqrtOm = Array.from(d.omega, (o) => Math.sqrt(o));
  const floorW = ctx.vFloor * T;
  const pb: PolishProblem = { d, T, sqrtOm, base, free, pen: polishPenalties(start, d, T, po), lossScale };
  const boxLo = [Number.NEGATIVE_INFINITY, 0, -RHO_MAX, ctx.mLo, ctx.sLo];
  const boxHi = [Number.POSITIVE_INFINITY, LEE_MAX_WING_SLOPE, RHO_MAX, ctx.mHi, ctx.sHi];
  const lm = levenbergMarquardt((x) => polishResiduals(pb, x), free.map((j) => base[j]!), {
    project: (x) => projectFree(ctx, base, free, floorW, x),
    jacobian: (xv, r) => polishJacobian(pb, xv, r),
    lower: free.map((j) => boxLo[j]!),
    upper: free.map((j) => boxHi[j]!),
    maxIterations: lambda > 0 ? 200 : 100,
    geodesicAcceleration: true,
  });
  return { params: paramsOfVector(fullVector(base, free, lm.x)), iterations: lm.iterations };
}

// ---------------------------------------------------------------------------------------------
// Helpers

function residualsVolPts(p: SviParams, d: Prepared, T: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < d.k.length; i++) {
    const w = sviTotalVariance(p, d.k[i] as number);
    out.push(100 * (Math.sqrt(Math.max(w, 0) / T) - (d.iv[i] as number)));
  }
  return out;
}

/** At most `n` evenly spaced elements of `xs` (first and last kept). */
function thin(xs: readonly number[], n: number): number[] {
  if (xs.length <= n) return [...xs];
  return Array.from({ length: n }, (_, i) => xs[Math.round((i * (xs.length - 1)) / (n - 1))] as number);
}

/** Raw SVI w(k), inlined copy of sviTotalVariance for the LM hot loops (same formula, eq. (3.1)). */
function wInline(p: SviParams, k: number): number {
  const x = k - p.m;
  return p.a + p.b * (p.rho * x + Math.sqrt(x * x + p.sigma * p.sigma));
}

/** Gatheral-Jacquier g(k), inlined copy of sviG for the LM hot loops (eq. (2.1)); -Infinity when w <= 0. */
function gInline(p: SviParams, k: number): number {
  const x = k - p.m;
  const s2 = p.sigma * p.sigma;
  const R2 = x * x + s2;
  const R = Math.sqrt(R2);
  const w = p.a + p.b * (p.rho * x + R);
  if (!(w > 0)) return Number.NEGATIVE_INFINITY;
  const w1 = p.b * (p.rho + x / R);
  const w2 = (p.b * s2) / (R2 * R);
  const t = 1 - (k * w1) / (2 * w);
  return t * t - ((w1 * w1) / 4) * (1 / w + 0.25) + w2 / 2;
}

/** Grid points where w(k) < w_floor(k) (calendar-spread arbitrage against the earlier expiry). */
function calendarViolations(p: SviParams, floor: SviParams, grid: readonly number[]): number[] {
  return grid.filter((k) => !(sviTotalVariance(p, k) >= sviTotalVariance(floor, k)));
}

// ---------------------------------------------------------------------------------------------
// Whole surface

/** One listed expiry's input to {@link calibrateSviSurface}. */
export interface SviExpiryInput {
  /** Expiry, Unix seconds. */
  readonly expirationTimestamp: number;
  /** Years ACT/365, > 0. */
  readonly T: number;
  /** The expiry's forward, quote currency. */
  readonly forward: number;
  /** Quotes with k = ln(K/forward). */
  readonly quotes: readonly SviQuote[];
}

/** Options of {@link calibrateSviSurface}: per-expiry options plus warm starts and the calendar switch. */
export interface SviSurfaceOptions extends Omit<SviCalibrationOptions, 'previous' | 'prior' | 'calendarFloor'> {
  /** Warm starts by expirationTimestamp (e.g. the previous snapshot's fits). Optional. */
  readonly previous?: ReadonlyMap<number, SviParams>;
  /** Keep each slice above the previous one (calendar floor). Default true. */
  readonly calendar?: boolean;
}

/** One fitted expiry of a surface. */
export type SviSliceFit = SviCalibrationResult & { readonly expirationTimestamp: number; readonly forward: number };

/** Result of {@link calibrateSviSurface}. */
export interface SviSurfaceFit {
  /** The surface of the fitted slices, or null when no expiry could be fitted. */
  readonly surface: VolSurface | null;
  /** Fits sorted by T ascending. */
  readonly fits: readonly SviSliceFit[];
  /** Expiries not fitted (T <= 0 or no valid quote), with the reason. */
  readonly skipped: readonly { readonly expirationTimestamp: number; readonly reason: string }[];
}

/**
 * Calibrates every expiry of a chain in increasing T (Gatheral-Jacquier 2014 sec. 5 suggests fitting
 * slices in turn with the previous one as a calendar constraint): each slice gets the previous fit as
 * `calendarFloor` (unless `calendar: false`) and the latest 5-parameter fit as `prior` (the shape of a
 * sparse expiry). Never throws on a bad expiry: it is listed in `skipped`.
 */
export function calibrateSviSurface(expiries: readonly SviExpiryInput[], options: SviSurfaceOptions = {}): SviSurfaceFit {
  const { previous, calendar, ...perExpiry } = options;
  const sorted = [...expiries].sort((a, b) => a.T - b.T || a.expirationTimestamp - b.expirationTimestamp);
  const fits: SviSliceFit[] = [];
  const skipped: { expirationTimestamp: number; reason: string }[] = [];
  let last: SviParams | undefined;
  let lastFull: SviParams | undefined;
  for (const e of sorted) {
    if (!(e.T > 0) || !(e.forward > 0)) {
      skipped.push({ expirationTimestamp: e.expirationTimestamp, reason: `T = ${e.T}, forward = ${e.forward}` });
      continue;
    }
    if (fits.length > 0 && (fits[fits.length - 1] as SviSliceFit).T === e.T) {
      skipped.push({ expirationTimestamp: e.expirationTimestamp, reason: 'duplicate T' });
      continue;
    }
    let r: SviCalibrationResult;
    try {
      r = calibrateSvi(e.quotes, e.T, {
        ...perExpiry,
        ...(previous?.get(e.expirationTimestamp) ? { previous: previous.get(e.expirationTimestamp) as SviParams } : {}),
        ...(lastFull ? { prior: lastFull } : {}),
        ...((calendar ?? true) && last ? { calendarFloor: last } : {}),
      });
    } catch (err) {
      skipped.push({ expirationTimestamp: e.expirationTimestamp, reason: err instanceof Error ? err.message : String(err) });
      continue;
    }
    fits.push({ ...r, expirationTimestamp: e.expirationTimestamp, forward: e.forward });
    last = r.params;
    if (r.mode === 'svi-5p') lastFull = r.params;
  }
  const surface =
    fits.length === 0 ? null : new VolSurface(fits.map((f) => ({ expirationTimestamp: f.expirationTimestamp, T: f.T, forward: f.forward, params: f.params })));
  return { surface, fits, skipped };
}
