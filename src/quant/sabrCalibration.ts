/**
 * Calibration of SABR (beta fixed) to one expiry's implied volatilities (mark IVs), robust on real chains.
 * The result has the same diagnostics as calibrateSvi (sviCalibration.ts) so that the streams can treat
 * every model alike.
 *
 * Pipeline (each step cites its source):
 * 1. Formula: Hagan, Kumar, Lesniewski, Woodward, "Managing Smile Risk", Wilmott 2002, eq. (2.17a)-(2.17c)
 *    (or Obloj 2008's correction, identical for beta = 1), see sabr.ts.
 * 2. Starting points: a deterministic grid of (rho, nu), rho in {-0.6, -0.2, 0.2, 0.6} and
 *    nu·sqrt(T) in {0.1, 0.25, 0.6, 1.5} (clipped to the bounds), with alpha from the market ATM vol by
 *    Hagan's eq. (2.18) solved for alpha (G. West, "Calibration of the SABR model in illiquid markets",
 *    Applied Mathematical Finance 12(4), 2005, sec. 2); the grid's local minima (no better point among the 8
 *    neighbours: adjacent grid points lie in one basin), the 3 best by weighted squared error, plus the
 *    warm start (`previous`) and the prior's shape, are each polished by projected Levenberg-Marquardt
 *    (lm.ts; Madsen-Nielsen-Tingleff 2004) on the weighted IV residuals; the lowest cost wins.
 *    Bounds (projection): alpha in [1e-6, 20]·F^(1-beta), |rho| <= 0.999, nu in [1e-4, nuMax].
 * 3. Weights (as calibrateSvi): `vega` (default; Black vega per unit forward relative to the largest,
 *    floored at vegaFloor = 0.03), `spread` (1 / bid-ask IV spread), `uniform`, or `auto` (spread when at
 *    least half of the quotes have a two-sided IV market, else vega). Vega-weighted IV errors approximate
 *    price errors (as QuantLib's SABRInterpolation with vegaWeighted = true).
 * 4. Outliers (>= 10 quotes): weighted residuals beyond max(outlierSigmas · 1.4826·MAD, floor) are
 *    dropped (at most maxOutlierFraction) and the fit is redone once (Hampel et al., "Robust Statistics", 1986).
 * 5. Sparse expiries degrade without failing: 1 quote -> alpha only (rho, nu fixed at the shape),
 *    2 quotes -> alpha and rho (nu fixed), 3..minQuotesFull-1 quotes -> all three with a weak ridge towards
 *    the shape (a deviation of 1 in rho or of a factor e in nu costs as much as a 0.1 vol-point error),
 *    >= minQuotesFull -> all three free. The shape is the prior (a neighbouring expiry's fit; its nu is
 *    rescaled by sqrt(priorT/T), which keeps nu^2 T, the size of the vol-of-vol term of eq. (2.17a), the
 *    same) or a default (rho = 0, nu·sqrt(T) = DEFAULT_NU_SQRT_T).
 * 6. Butterfly arbitrage: the density check of smileArbitrage.ts (Breeden-Litzenberger on Black-76 call
 *    prices) on a strike grid covering the quotes and 4 ATM standard deviations. If it fails and
 *    `repairArbitrage` (default true), LM is re-run with hinge penalties on negative density (weight raised
 *    ×10 from 1 to 1e4); the first arbitrage-free refit is kept. If none is, the UNPENALIZED fit is
 *    returned and the violation reported (`arbitrageFree: false`, `minDensity`, a warning), never
 *    hidden, so the caller can reject it and keep its last good fit (issue 4: repair or reject).
 * 7. ATM sanity check: fitted vs market ATM vol (linear interpolation of the quotes at k = 0); a gap larger
 *    than max(1 vol pt, 3 RMSE) is a warning.
 *
 * Deterministic: no randomness.
 */
import { gridLocalMinima, levenbergMarquardt } from './lm.js';
import { sabrAlphaFromAtmVol, sabrImpliedVolUnchecked, sabrParamViolations, type SabrFormula, type SabrParams } from './sabr.js';
import { checkSmileDensity, defaultDensityCheckStrikes, smileArbitragePenalties, type DensityCheckOptions } from './smileArbitrage.js';
import { strikeFromDelta, strikeFromDeltaFlat } from './strikeFromDelta.js';
import {
  computeQuoteWeights,
  marketAtmIv,
  median,
  resolveWeighting,
  validSortedQuotes,
  type SviQuote,
  type SviWeighting,
} from './quoteWeights.js';
import { errorStats } from './vannaVolga.js';

/**
 * Default shape of sparse fits: nu·sqrt(T) (dimensionless) and rho. nu·sqrt(T) = 0.65 is the median of
 * the full (>= 19-quote) beta = 1 fits of the three recorded Deribit BTC chains (adapters/replay/chains.ts;
 * 29 expiries from 2 hours to 0.8 years, range 0.47..1.07, nearly flat in T); rho = 0 is neutral (those
 * BTC fits have rho from -0.78 to +0.05, median about -0.3, but other underlyings need not share the sign).
 */
export const DEFAULT_NU_SQRT_T = 0.65;
export const DEFAULT_RHO = 0;

/** Options of {@link calibrateSabr}. */
export interface SabrCalibrationOptions {
  /** CEV exponent, fixed, in [0, 1]. Default 1 (lognormal SABR, decisions.md/issue 4). */
  readonly beta?: number;
  /** Implied-vol expansion, default 'hagan2002' (identical to 'obloj2008' for beta = 1). */
  readonly formula?: SabrFormula;
  /** Weighting scheme, default `vega` (see the module docstring). Vega rather than calibrateSvi's `auto`:
   * on the recorded chains, inverse-spread weights let the wide-spread far wings pull a 3-parameter fit
   * away from the 10-delta region (e.g. 1.22 vs 0.27 vol pts RMSE inside the 10-delta strikes on the
   * 2026-05-26 BTC 26JUN26 expiry). */
  readonly weighting?: SviWeighting;
  /** Floor of relative vega weights, default 0.03 (calibrateSvi uses 0.1): Deribit's far-wing marks are
   * flat plateaus with jumps (e.g. 86.40 % for every 29MAY26 put from 54000 to 58000, then 90-114 %),
   * which 3 SABR parameters cannot follow; a 0.03 floor keeps them from dragging the near-the-money fit
   * (measured on the two 2026 recorded chains: RMSE over the quotes between the 10-delta strikes at most
   * 1.1 vol pts with 0.03, 1.6 with 0.1; on the 2020 chain's 26-hour expiry 2.9 vs 5.1). */
  readonly vegaFloor?: number;
  /** Floor of the bid-ask IV spread (fraction) for `spread` weights, default 0.005. */
  readonly minSpread?: number;
  /** Warm start: a previous fit of (nearly) the same expiry; adds one starting point. */
  readonly previous?: SabrParams;
  /**
   * With a usable `previous`: the full (3-parameter) fit starts from it alone, no grid of starts (the incremental
   * refit of a slice whose quotes moved a little, issue 12 item 1; the caller's periodic cold fit is the safety
   * net). Default false.
   */
  readonly warm?: boolean;
  /** Shape prior for sparse expiries (a neighbouring expiry's fit) and its expiry in years. */
  readonly prior?: SabrParams;
  readonly priorT?: number;
  /** Outlier rule: weighted residuals beyond this many robust sigmas are trimmed. Default 4. */
  readonly outlierSigmas?: number;
  /** Residuals below this many vol points are never outliers. Default 1. */
  readonly outlierFloorVolPts?: number;
  /** At most this fraction of the quotes is trimmed. Default 0.1; 0 disables trimming. */
  readonly maxOutlierFraction?: number;
  /** Minimum number of quotes for the unregularized 3-parameter fit. Default 5 (>= 3). */
  readonly minQuotesFull?: number;
  /** Upper bound of nu (per sqrt(year)). Default 50. */
  readonly nuMax?: number;
  /** Density-check grid and tolerance (default: the quotes' range and 4 ATM standard deviations). */
  readonly densityCheck?: DensityCheckOptions;
  /** Refit with density penalties when the check fails. Default true. */
  readonly repairArbitrage?: boolean;
}

/** Fit mode: which parameters were free. */
export type SabrFitMode = 'sabr-1p' | 'sabr-2p' | 'sabr-3p-ridge' | 'sabr-3p';

/** Result of {@link calibrateSabr}. */
export interface SabrCalibrationResult {
  /** Fitted parameters (beta as given). */
  readonly params: SabrParams;
  /** Formula the parameters belong to. */
  readonly formula: SabrFormula;
  /** Forward and expiry used. */
  readonly F: number;
  readonly T: number;
  /** RMSE of fitted IV minus quote IV over the quotes used, vol points (|iv error| · 100). */
  readonly rmseVolPts: number;
  /** Largest |fitted IV - quote IV| over the quotes used, vol points. */
  readonly maxErrorVolPts: number;
  /** RMSE over every valid input quote, trimmed outliers included, vol points. */
  readonly rmseAllVolPts: number;
  /** RMSE (vol points) over all valid quotes of the unpenalized fit (before the density repair): the
   * unconstrained optimum of this weighting; equals `rmseAllVolPts` when no repair was needed. */
  readonly unconstrainedRmseVolPts: number;
  /** Fit over the quotes used that lie between the fitted smile's 10-delta strikes (call delta 0.90 and
   * 0.10, forward Black delta): RMSE and max error in vol points, and their number. */
  readonly within10Delta: { readonly rmseVolPts: number; readonly maxErrorVolPts: number; readonly quotes: number };
  /** Number of quotes used in the final fit. */
  readonly quotesUsed: number;
  /** Indices (into the input array) of quotes dropped: invalid inputs and trimmed outliers. */
  readonly quotesDropped: readonly number[];
  /** Density check (smileArbitrage.ts) of the fitted smile. */
  readonly arbitrageFree: boolean;
  readonly minDensity: number;
  readonly kAtMinDensity: number;
  /** Fit mode and a human-readable account of what was done. */
  readonly mode: SabrFitMode;
  readonly method: string;
  /** Weighting actually used. */
  readonly weighting: Exclude<SviWeighting, 'auto'>;
  /** Levenberg-Marquardt iterations, summed over all starts and passes. */
  readonly iterations: number;
  /** ATM (k = 0) check: market IV (interpolated; null outside the quotes), model IV, gap in vol pts. */
  readonly atm: { readonly marketIv: number | null; readonly modelIv: number; readonly errorVolPts: number | null };
  readonly warnings: readonly string[];
}

const RHO_MAX = 0.999;
const NU_MIN = 1e-4;

interface Prepared {
  readonly k: Float64Array;
  readonly K: Float64Array;
  readonly iv: Float64Array;
  readonly sqrtOmega: Float64Array;
  /**
   * The quotes with a price band (SviQuote.ivBand): index t into these arrays, the band [lo, hi] and the band the
   * penalty holds, [a, b] ({@link narrowedBand}); empty when none has one (the common case: nothing to check).
   */
  readonly bands: ReadonlyArray<{ readonly t: number; readonly lo: number; readonly hi: number; readonly a: number; readonly b: number }>;
  /** Input indices. */
  readonly index: number[];
}

interface Shape {
  readonly rho: number;
  readonly nu: number;
  readonly fromPrior: boolean;
}

/**
 * Calibrates SABR (beta fixed) to one expiry. Deterministic for given inputs and options.
 * @param quotes the expiry's quotes: k = ln(K/F) against the forward F, mark IV fraction (bid/ask IVs
 *   optional, for `spread` weighting). Quotes with non-finite k, iv <= 0 or a non-positive weight are
 *   dropped (listed in quotesDropped).
 * @param F the expiry's forward (> 0), needed for beta < 1 (for beta = 1 the smile depends on k only)
 * @param T years ACT/365 (> 0)
 * @throws RangeError when F or T are not finite and > 0, beta is outside [0, 1], or no valid quote remains
 */
export function calibrateSabr(quotes: readonly SviQuote[], F: number, T: number, options: SabrCalibrationOptions = {}): SabrCalibrationResult {
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`calibrateSabr: F must be finite > 0, got ${F}`);
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`calibrateSabr: T must be finite > 0, got ${T}`);
  const beta = options.beta ?? 1;
  if (!(beta >= 0 && beta <= 1)) throw new RangeError(`calibrateSabr: beta must be in [0, 1], got ${beta}`);
  const formula = options.formula ?? 'hagan2002';
  const nuMax = options.nuMax ?? 50;
  const { valid, dropped } = validSortedQuotes(quotes, 'calibrateSabr');

  // Weights as calibrateSvi's (quoteWeights.ts), with SABR's own vega floor (see SabrCalibrationOptions.vegaFloor).
  const weighting = resolveWeighting(options.weighting ?? 'vega', valid.map((x) => x.q));
  const omegaAll = computeQuoteWeights(valid.map((x) => x.q), T, weighting, { vegaFloor: options.vegaFloor ?? 0.03, minSpread: options.minSpread ?? 0.005 });
  const all = prepareSabrQuotes(valid, omegaAll, F, valid.map(() => true));
  const n = all.k.length;
  const minFull = Math.max(3, options.minQuotesFull ?? 5);
  const mode: SabrFitMode = n === 1 ? 'sabr-1p' : n === 2 ? 'sabr-2p' : n < minFull ? 'sabr-3p-ridge' : 'sabr-3p';
  const marketAtm = marketAtmIv(all.k, all.iv);
  const shape = sparseShape(T, nuMax, options.prior, options.priorT);
  const fitter = new SabrFitter({ F, T, beta, formula, nuMax, mode, atmGuess: marketAtm ?? nearestIv(all), shape, options });
  const notes: string[] = [];
  const extraStarts = previousStart(options, beta, nuMax);

  let used = all;
  let res: SabrFitOutcome = fitter.fitAndRepair(all, extraStarts);
  const outliers = mode === 'sabr-3p' && n >= 10 ? outliersToTrim(fitter, res.x, all, options) : null;
  if (outliers) {
    const keep = valid.map(() => true);
    for (const o of outliers.trim) keep[o.t] = false;
    used = prepareSabrQuotes(valid, omegaAll, F, keep);
    for (const o of outliers.trim) dropped.push(all.index[o.t] as number);
    res = fitter.fitAndRepair(used, [...extraStarts, res.x]);
    notes.push(`trimmed ${outliers.trim.length} outlier${outliers.trim.length > 1 ? 's' : ''} (> ${outliers.thr.toFixed(2)} weighted vol pts from the median residual) and refitted`);
  }
  const banded = fitter.honourBands(used, res);
  res = banded;
  const params = fitter.toParams(res.x);
  notes.unshift(describeSabrMode(mode, shape, n));
  if (banded.bandLambda > 0) notes.push(`no-bid price bands honoured (band weight ${banded.bandLambda.toExponential(0)})`);
  if (res.penalty) notes.push('density penalty applied (butterfly repair)');
  if (fitter.repairFailed && !res.penalty) notes.push('butterfly repair by density penalty failed; unpenalized fit kept');

  const a = assessSabrFit(fitter, params, res, used, all, marketAtm);
  dropped.sort((x, y) => x - y);
  return {
    params,
    formula,
    F,
    T,
    rmseVolPts: a.rmse,
    maxErrorVolPts: a.maxErr,
    rmseAllVolPts: a.rmseAll,
    unconstrainedRmseVolPts: Number.isFinite(a.rawRmse) ? a.rawRmse : a.rmseAll,
    within10Delta: errorStats(a.resCore),
    quotesUsed: used.k.length,
    quotesDropped: dropped,
    arbitrageFree: res.check.arbitrageFree,
    minDensity: res.check.minDensity,
    kAtMinDensity: Number.isFinite(res.check.atStrike) ? Math.log(res.check.atStrike / F) : Number.NaN,
    mode,
    method: `${mode}: SABR beta = ${beta} (${formula === 'hagan2002' ? 'Hagan et al. 2002 eq. (2.17)' : 'Obloj 2008'}); ${notes.join('; ')}`,
    weighting,
    iterations: fitter.iterations,
    atm: { marketIv: marketAtm, modelIv: a.modelAtm, errorVolPts: a.atmErr },
    warnings: banded.bandsLeft > 0 ? [...a.warnings, `no-bid price band not honoured at ${banded.bandsLeft} quote${banded.bandsLeft > 1 ? 's' : ''} (outside its SviQuote.ivBand)`] : a.warnings,
  };
}

/** The quotes kept (`keep`, by index into `valid`) as arrays, their strikes K = F e^k, and their weights' square roots (weights of mean 1). */
function prepareSabrQuotes(valid: ReturnType<typeof validSortedQuotes>['valid'], omegaAll: readonly number[], F: number, keep: readonly boolean[]): Prepared {
  const idx: number[] = [];
  keep.forEach((kp, j) => {
    if (kp) idx.push(j);
  });
  let sum = 0;
  for (const j of idx) sum += omegaAll[j] as number;
  const out: Prepared = {
    k: new Float64Array(idx.length),
    K: new Float64Array(idx.length),
    iv: new Float64Array(idx.length),
    sqrtOmega: new Float64Array(idx.length),
    bands: [],
    index: idx.map((j) => (valid[j] as { i: number }).i),
  };
  idx.forEach((j, t) => {
    const q = (valid[j] as { q: SviQuote }).q;
    out.k[t] = q.k;
    out.K[t] = F * Math.exp(q.k);
    out.iv[t] = q.iv;
    out.sqrtOmega[t] = Math.sqrt(((omegaAll[j] as number) * idx.length) / sum);
    if (q.ivBand && q.ivBand.lo < q.ivBand.hi) {
      const [a, b] = narrowedBand(q.ivBand.lo, q.ivBand.hi, q.iv);
      (out.bands as Array<Prepared['bands'][number]>).push({ t, lo: q.ivBand.lo, hi: q.ivBand.hi, a, b });
    }
  });
  return out;
}

/** The previous parameters as an extra start (rho and nu clipped to the bounds), when they are valid SABR parameters. */
function previousStart(options: SabrCalibrationOptions, beta: number, nuMax: number): number[][] {
  const extraStarts: number[][] = [];
  if (options.previous && sabrParamViolations({ ...options.previous, beta }).length === 0) {
    const p = options.previous;
    extraStarts.push([p.alpha, Math.max(-RHO_MAX, Math.min(RHO_MAX, p.rho)), Math.min(Math.max(p.nu, NU_MIN), nuMax)]);
  }
  return extraStarts;
}

/** What the fit of one expiry knows: the market, the formula, the mode (free parameters, ridge) and the bounds. */
interface SabrFitterSetup {
  readonly F: number;
  readonly T: number;
  readonly beta: number;
  readonly formula: SabrFormula;
  readonly nuMax: number;
  readonly mode: SabrFitMode;
  /** The market ATM vol, or the nearest quote's: the starts' and the penalty grid's scale. */
  readonly atmGuess: number;
  readonly shape: Shape;
  readonly options: SabrCalibrationOptions;
}

/** A fit and its butterfly repair: the point returned, the unpenalized one, whether the penalty was used, the density check of the point. */
interface SabrFitOutcome {
  readonly x: number[];
  readonly x0: number[];
  readonly penalty: boolean;
  readonly check: ReturnType<typeof checkSmileDensity>;
  /** The butterfly repair's penalty weight and strikes when `penalty` (kept by a later constrained refit), else 0 and none. */
  readonly lambda: number;
  readonly penaltyStrikes: readonly number[];
}

/** The projected-LM fits of one expiry (alpha, rho, nu; beta fixed), counting their iterations. */
class SabrFitter {
  readonly free: number[];
  private readonly ridge: number;
  private readonly alphaLo: number;
  private readonly alphaHi: number;
  private readonly fPow: number;
  iterations = 0;
  /** Set when a butterfly repair found no penalty weight giving an arbitrage-free smile. */
  repairFailed = false;

  constructor(readonly s: SabrFitterSetup) {
    const { mode, F, beta } = s;
    this.free = mode === 'sabr-1p' ? [0] : mode === 'sabr-2p' ? [0, 1] : [0, 1, 2];
    this.ridge = mode === 'sabr-3p-ridge' ? 1e-3 : 0;
    this.fPow = Math.pow(F, 1 - beta);
    this.alphaLo = 1e-6 * this.fPow;
    this.alphaHi = 20 * this.fPow;
  }

  toParams(p: readonly number[]): SabrParams {
    return { alpha: p[0] as number, beta: this.s.beta, rho: p[1] as number, nu: p[2] as number };
  }

  vol(p: SabrParams, K: number): number {
    return sabrImpliedVolUnchecked(p, this.s.F, K, this.s.T, this.s.formula);
  }

  private checkOpts(d: Prepared): DensityCheckOptions {
    return { kMin: d.k[0], kMax: d.k[d.k.length - 1], ...this.s.options.densityCheck };
  }

  /**
   * The weighted IV residuals of the free parameters over `base`, the ridge rows, the density penalty rows (lambda >
   * 0) and the price band rows (bandLambda > 0: sqrt(bandLambda) times how far the IV lies outside the band narrowed
   * by {@link BAND_MARGIN}, 0 inside).
   */
  private residuals(d: Prepared, lambda: number, penaltyStrikes: readonly number[], base: readonly number[], bandLambda = 0) {
    const { F, T, shape, atmGuess } = this.s;
    const { free, ridge } = this;
    const sl = Math.sqrt(lambda);
    const sStd = atmGuess * Math.sqrt(T);
    return (x: readonly number[]): number[] => {
      const p = [...base];
      free.forEach((j, t) => {
        p[j] = x[t] as number;
      });
      const sp = this.toParams(p);
      const out: number[] = [];
      for (let i = 0; i < d.k.length; i++) out.push((d.sqrtOmega[i] as number) * (this.vol(sp, d.K[i] as number) - (d.iv[i] as number)));
      if (ridge > 0) {
        out.push(ridge * ((p[1] as number) - shape.rho));
        out.push(ridge * Math.log((p[2] as number) / shape.nu));
      }
      if (lambda > 0) {
        for (const h of smileArbitragePenalties((K) => this.vol(sp, K), F, T, penaltyStrikes, sStd)) out.push(sl * h);
      }
      if (bandLambda > 0) {
        const sb = Math.sqrt(bandLambda);
        for (const { t, a, b } of d.bands) {
          const v = this.vol(sp, d.K[t] as number);
          out.push(sb * (v > b ? v - b : v < a ? a - v : 0));
        }
      }
      return out;
    };
  }

  /** The best of the projected-LM fits from each start (a later one wins only by a relative 1e-12). */
  fit(d: Prepared, starts: readonly (readonly number[])[], lambda: number, penaltyStrikes: readonly number[], bandLambda = 0): { x: number[]; cost: number } {
    const { free, alphaLo, alphaHi } = this;
    const nuMax = this.s.nuMax;
    let best: { x: number[]; cost: number } | null = null;
    for (const s of starts) {
      const base = [...s];
      const project = (x: number[]): number[] => {
        const p = [...base];
        free.forEach((j, t) => {
          p[j] = x[t] as number;
        });
        p[0] = Math.min(Math.max(p[0] as number, alphaLo), alphaHi);
        p[1] = Math.min(Math.max(p[1] as number, -RHO_MAX), RHO_MAX);
        p[2] = Math.min(Math.max(p[2] as number, NU_MIN), nuMax);
        return free.map((j) => p[j] as number);
      };
      const lm = levenbergMarquardt(this.residuals(d, lambda, penaltyStrikes, base, bandLambda), free.map((j) => s[j] as number), {
        project,
        maxIterations: lambda > 0 || bandLambda > 0 ? 150 : 200,
      });
      this.iterations += lm.iterations;
      const p = [...base];
      free.forEach((j, t) => {
        p[j] = lm.x[t] as number;
      });
      if (best === null || lm.cost < best.cost * (1 - 1e-12)) best = { x: p, cost: lm.cost };
    }
    return best as { x: number[]; cost: number };
  }

  /**
   * The starts: the shape's point (alpha from the ATM vol) and the extra ones in the sparse modes; with all three
   * free, the warm extra ones alone, or the local minima of a 4 x 4 (rho, nu) grid plus the shape's point and the extra ones.
   */
  startPoints(d: Prepared, extra: readonly (readonly number[])[]): number[][] {
    const { F, T, beta, nuMax, mode, atmGuess, shape, options } = this.s;
    const { alphaLo, alphaHi, fPow } = this;
    const alphaFor = (rho: number, nu: number): number => {
      const a = sabrAlphaFromAtmVol(atmGuess, F, T, beta, rho, nu);
      return Math.min(Math.max(Number.isFinite(a) && a > 0 ? a : atmGuess * fPow, alphaLo), alphaHi);
    };
    const clipNu = (nu: number): number => Math.min(Math.max(nu, NU_MIN), nuMax);
    if (mode !== 'sabr-3p') {
      const out = [[alphaFor(shape.rho, shape.nu), shape.rho, shape.nu]];
      for (const e of extra) out.push([e[0] as number, mode === 'sabr-1p' ? shape.rho : (e[1] as number), mode === 'sabr-3p-ridge' ? (e[2] as number) : shape.nu]);
      return out;
    }
    if (options.warm && extra.length > 0) return extra.map((e) => [...e]);
    const cand: { x: number[]; f: number }[] = [];
    for (const rho of [-0.6, -0.2, 0.2, 0.6]) {
      for (const g of [0.1, 0.25, 0.6, 1.5]) {
        const nu = clipNu(g / Math.sqrt(T));
        const x = [alphaFor(rho, nu), rho, nu];
        const sp = this.toParams(x);
        let f = 0;
        for (let i = 0; i < d.k.length; i++) {
          const r = (d.sqrtOmega[i] as number) * (this.vol(sp, d.K[i] as number) - (d.iv[i] as number));
          f += r * r;
        }
        cand.push({ x, f: Number.isFinite(f) ? f : Number.POSITIVE_INFINITY });
      }
    }
    // Starts: the 4 x 4 grid's local minima, best first, at most 3 (nu is clipped to its bounds, so on very short
    // expiries two grid columns can be the same point: it counts once).
    const out = gridLocalMinima(cand, 4, 3);
    out.push([alphaFor(shape.rho, shape.nu), shape.rho, shape.nu]);
    for (const e of extra) out.push([...e]);
    return out;
  }

  /** The fit of `d` with its butterfly repair, and the density check of the returned point on d's grid. */
  fitAndRepair(d: Prepared, extra: readonly (readonly number[])[]): SabrFitOutcome {
    const { F, T, atmGuess, options } = this.s;
    const x0 = this.fit(d, this.startPoints(d, extra), 0, []).x;
    const chk0 = checkSmileDensity((K) => this.vol(this.toParams(x0), K), F, T, this.checkOpts(d));
    if (chk0.arbitrageFree || !(options.repairArbitrage ?? true)) return { x: x0, x0, penalty: false, check: chk0, lambda: 0, penaltyStrikes: [] };
    // Constrained refit: the first penalty weight that gives an arbitrage-free smile wins; if none
    // does, the unpenalized fit is kept and reported as not arbitrage-free (the caller rejects it).
    // Penalty grid: the check's grid (explicit strikes, or the default one built on a 15 % higher ATM vol
    // so that it reaches beyond the check grid of any nearby refit), 161 points.
    const penaltyGrid = (xc: readonly number[]): readonly number[] => {
      if (options.densityCheck?.strikes) return options.densityCheck.strikes;
      const s = this.vol(this.toParams(xc), F);
      return defaultDensityCheckStrikes(F, T, 1.15 * (s > 0 && Number.isFinite(s) ? s : atmGuess), { ...this.checkOpts(d), points: 161 });
    };
    let x = x0;
    for (let lambda = 1; lambda <= 1e4; lambda *= 10) {
      const penaltyStrikes = penaltyGrid(x);
      x = this.fit(d, [x], lambda, penaltyStrikes).x;
      const chk = checkSmileDensity((K) => this.vol(this.toParams(x), K), F, T, this.checkOpts(d));
      if (chk.arbitrageFree) return { x, x0, penalty: true, check: chk, lambda, penaltyStrikes };
    }
    this.repairFailed = true;
    return { x: x0, x0, penalty: false, check: chk0, lambda: 0, penaltyStrikes: [] };
  }

  /** How many quotes of `d` the smile at `x` leaves outside their price band. */
  outsideBands(d: Prepared, x: readonly number[]): number {
    const sp = this.toParams(x);
    let n = 0;
    for (const { t, lo, hi } of d.bands) {
      const v = this.vol(sp, d.K[t] as number);
      if (v > hi || v < lo) n++;
    }
    return n;
  }

  /**
   * Price bands (issue 26; SviQuote.ivBand): when the fit leaves the band of a quote without a two-sided market, it is
   * refitted from there with hinge penalties on the distance outside the bands (narrowed by {@link BAND_MARGIN}),
   * weight raised x10 from 1e2 to 1e8, keeping the butterfly repair's density rows when `res` needed them; the first
   * refit inside every band that passes the density check (as `res`'s, when it passed) and costs at most
   * {@link BAND_MAX_COST_VOL_PTS} of RMSE against the marks over the quotes fitted wins. None: `res` is kept,
   * `bandsLeft` counts the quotes outside (reported as a warning).
   */
  honourBands(d: Prepared, res: SabrFitOutcome): SabrFitOutcome & { readonly bandLambda: number; readonly bandsLeft: number } {
    const left = this.outsideBands(d, res.x);
    if (left === 0) return { ...res, bandLambda: 0, bandsLeft: 0 };
    const { F, T } = this.s;
    const rmse = (x: readonly number[]): number => errorStats(residualsVolPts(this.toParams(x), d, (p, K) => this.vol(p, K))).rmseVolPts;
    const ceiling = rmse(res.x) + BAND_MAX_COST_VOL_PTS;
    let x = res.x;
    for (let bandLambda = 1e2; bandLambda <= 1e8; bandLambda *= 10) {
      x = this.fit(d, [x], res.lambda, res.penaltyStrikes, bandLambda).x;
      if (this.outsideBands(d, x) > 0) continue;
      if (!(rmse(x) <= ceiling)) break;
      const check = checkSmileDensity((K) => this.vol(this.toParams(x), K), F, T, this.checkOpts(d));
      if (check.arbitrageFree || !res.check.arbitrageFree) return { ...res, x, check, bandLambda, bandsLeft: 0 };
    }
    return { ...res, bandLambda: 0, bandsLeft: left };
  }
}

/**
 * Most a price band may cost (vol points of RMSE against the marks over the quotes fitted), as a repair (issue 26:
 * "where arbitrage binds, the repair cost is reported and under 0.5 vp"); beyond it the band is not honoured and a
 * warning says so.
 */
const BAND_MAX_COST_VOL_PTS = 0.5;

/**
 * Fraction of a price band's half-widths kept free on each side of the mark by the band penalty: the penalty holds the
 * IV inside [lo + m (iv - lo), hi - m (hi - iv)] (m = 0.01, iv the mark), so that a fit it moves lands inside the band
 * itself, not on its edge.
 */
const BAND_MARGIN = 0.01;

/** A band [lo, hi] narrowed towards the mark `iv` by {@link BAND_MARGIN} of each side's width (unchanged where infinite or the mark lies outside). */
function narrowedBand(lo: number, hi: number, iv: number): [number, number] {
  const a = Number.isFinite(lo) && iv > lo ? lo + BAND_MARGIN * (iv - lo) : lo;
  const b = Number.isFinite(hi) && iv < hi ? hi - BAND_MARGIN * (hi - iv) : hi;
  return [a, b];
}

/**
 * With all three parameters free and >= 10 quotes: the quotes whose weighted residual is further than
 * max(outlierSigmas robust deviations, outlierFloorVolPts) from the median, largest first, at most maxOutlierFraction
 * of them; null when none is (or maxOutlierFraction is 0).
 */
function outliersToTrim(fitter: SabrFitter, x: readonly number[], all: Prepared, options: SabrCalibrationOptions): { trim: Array<{ e: number; t: number }>; thr: number } | null {
  const maxFrac = options.maxOutlierFraction ?? 0.1;
  if (!(maxFrac > 0)) return null;
  const n = all.k.length;
  const r = residualsVolPts(fitter.toParams(x), all, (p, K) => fitter.vol(p, K)).map((e, t) => e * (all.sqrtOmega[t] as number));
  const med = median(r);
  const mad = 1.4826 * median(r.map((e) => Math.abs(e - med)));
  const thr = Math.max((options.outlierSigmas ?? 4) * mad, options.outlierFloorVolPts ?? 1);
  const trim = r
    .map((e, t) => ({ e: Math.abs(e - med), t }))
    .filter((o) => o.e > thr)
    .sort((a, b) => b.e - a.e || a.t - b.t)
    .slice(0, Math.floor(maxFrac * n));
  return trim.length > 0 ? { trim, thr } : null;
}

/** What the fit's mode fixed or fitted, for `method`. */
function describeSabrMode(mode: SabrFitMode, shape: Shape, n: number): string {
  const describe = shape.fromPrior ? 'the prior (neighbouring expiry)' : 'the default shape';
  switch (mode) {
    case 'sabr-1p':
      return `alpha fitted; rho = ${shape.rho.toFixed(3)} and nu = ${shape.nu.toPrecision(4)} fixed from ${describe}`;
    case 'sabr-2p':
      return `alpha and rho fitted; nu = ${shape.nu.toPrecision(4)} fixed from ${describe}`;
    case 'sabr-3p-ridge':
      return `alpha, rho, nu fitted with a weak ridge towards ${describe} (${n} quotes)`;
    default:
      return 'alpha, rho, nu fitted (grid of starts, projected LM)';
  }
}

/**
 * The fit's checks: arbitrage left, errors (RMSE and max over the quotes used, RMSE over all and before the
 * penalty), the errors within the 10-delta strikes, and the ATM check; warnings in that order.
 */
function assessSabrFit(fitter: SabrFitter, params: SabrParams, res: SabrFitOutcome, used: Prepared, all: Prepared, marketAtm: number | null) {
  const { F, T, atmGuess } = fitter.s;
  const vol = (p: SabrParams, K: number): number => fitter.vol(p, K);
  const warnings: string[] = [];
  // the check of the returned point on the grid of the quotes used (done once, in fitAndRepair)
  const chk = res.check;
  if (!chk.arbitrageFree) warnings.push(`butterfly arbitrage remains: min density ${chk.minDensity.toExponential(3)} at K = ${chk.atStrike.toPrecision(6)}`);
  const resUsed = residualsVolPts(params, used, vol);
  const resAll = residualsVolPts(params, all, vol);
  const rmse = Math.sqrt(resUsed.reduce((s, e) => s + e * e, 0) / resUsed.length);
  const rmseAll = Math.sqrt(resAll.reduce((s, e) => s + e * e, 0) / resAll.length);
  const resRaw = residualsVolPts(fitter.toParams(res.x0), all, vol);
  const rawRmse = Math.sqrt(resRaw.reduce((s, e) => s + e * e, 0) / resRaw.length);
  const maxErr = resUsed.reduce((s, e) => Math.max(s, Math.abs(e)), 0);
  const smile = (K: number): number => vol(params, K);
  const k10 = (delta: number): number => {
    try {
      return Math.log(strikeFromDelta(delta, F, T, smile) / F);
    } catch {
      const a = smile(F) > 0 ? smile(F) : atmGuess;
      return Math.log(strikeFromDeltaFlat(delta, F, T, a) / F);
    }
  };
  const kLo10 = k10(0.9);
  const kHi10 = k10(0.1);
  const resCore: number[] = [];
  for (let i = 0; i < used.k.length; i++) if ((used.k[i] as number) >= kLo10 && (used.k[i] as number) <= kHi10) resCore.push(resUsed[i] as number);
  const modelAtm = vol(params, F);
  const atmErr = marketAtm === null ? null : 100 * (modelAtm - marketAtm);
  if (atmErr !== null && Math.abs(atmErr) > Math.max(1, 3 * rmse)) {
    warnings.push(`ATM check: fitted ATM IV ${(100 * modelAtm).toFixed(2)} vs market ${(100 * (marketAtm as number)).toFixed(2)} vol pts`);
  }
  if (!(modelAtm > 0 && Number.isFinite(modelAtm))) warnings.push('fitted ATM vol is not positive: parameters outside the expansion domain');
  return { rmse, maxErr, rmseAll, rawRmse, resCore, modelAtm, atmErr, warnings };
}

// ---------------------------------------------------------------------------------------------
// Helpers

function sparseShape(T: number, nuMax: number, prior: SabrParams | undefined, priorT: number | undefined): Shape {
  if (prior && Math.abs(prior.rho) < 1 && prior.nu > 0 && Number.isFinite(prior.nu)) {
    const sc = priorT !== undefined && priorT > 0 && Number.isFinite(priorT) ? Math.sqrt(priorT / T) : 1;
    return { rho: Math.max(-RHO_MAX, Math.min(RHO_MAX, prior.rho)), nu: Math.min(Math.max(prior.nu * sc, NU_MIN), nuMax), fromPrior: true };
  }
  return { rho: DEFAULT_RHO, nu: Math.min(Math.max(DEFAULT_NU_SQRT_T / Math.sqrt(T), NU_MIN), nuMax), fromPrior: false };
}

function residualsVolPts(p: SabrParams, d: Prepared, vol: (p: SabrParams, K: number) => number): number[] {
  const out: number[] = [];
  for (let i = 0; i < d.k.length; i++) out.push(100 * (vol(p, d.K[i] as number) - (d.iv[i] as number)));
  return out;
}

function nearestIv(d: Prepared): number {
  let j = 0;
  for (let i = 1; i < d.k.length; i++) if (Math.abs(d.k[i] as number) < Math.abs(d.k[j] as number)) j = i;
  return d.iv[j] as number;
}
