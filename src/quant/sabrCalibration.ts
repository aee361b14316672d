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
  const prep = (keep: readonly boolean[]): Prepared => {
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
      index: idx.map((j) => (valid[j] as { i: number }).i),
    };
    idx.forEach((j, t) => {
      const q = (valid[j] as { q: SviQuote }).q;
      out.k[t] = q.k;
      out.K[t] = F * Math.exp(q.k);
      out.iv[t] = q.iv;
      out.sqrtOmega[t] = Math.sqrt(((omegaAll[j] as number) * idx.length) / sum);
    });
    return out;
  };
  const all = prep(valid.map(() => true));
  const n = all.k.length;
  const minFull = Math.max(3, options.minQuotesFull ?? 5);
  const mode: SabrFitMode = n === 1 ? 'sabr-1p' : n === 2 ? 'sabr-2p' : n < minFull ? 'sabr-3p-ridge' : 'sabr-3p';
  const marketAtm = marketAtmIv(all.k, all.iv);
  const atmGuess = marketAtm ?? nearestIv(all);
  const fPow = Math.pow(F, 1 - beta);
  const alphaLo = 1e-6 * fPow;
  const alphaHi = 20 * fPow;
  const shape = sparseShape(T, nuMax, options.prior, options.priorT);
  const warnings: string[] = [];
  const notes: string[] = [];
  let iterations = 0;
  let repairFailed = false;

  const free = mode === 'sabr-1p' ? [0] : mode === 'sabr-2p' ? [0, 1] : [0, 1, 2];
  const ridge = mode === 'sabr-3p-ridge' ? 1e-3 : 0;
  const toParams = (p: readonly number[]): SabrParams => ({ alpha: p[0] as number, beta, rho: p[1] as number, nu: p[2] as number });
  const vol = (p: SabrParams, K: number): number => sabrImpliedVolUnchecked(p, F, K, T, formula);
  const checkOpts = (d: Prepared): DensityCheckOptions => ({ kMin: d.k[0], kMax: d.k[d.k.length - 1], ...options.densityCheck });

  const fit = (d: Prepared, starts: readonly (readonly number[])[], lambda: number, penaltyStrikes: readonly number[]): { x: number[]; cost: number } => {
    const sl = Math.sqrt(lambda);
    const sStd = atmGuess * Math.sqrt(T);
    const residuals = (base: readonly number[]) => (x: readonly number[]): number[] => {
      const p = [...base];
      free.forEach((j, t) => {
        p[j] = x[t] as number;
      });
      const sp = toParams(p);
      const out: number[] = [];
      for (let i = 0; i < d.k.length; i++) out.push((d.sqrtOmega[i] as number) * (vol(sp, d.K[i] as number) - (d.iv[i] as number)));
      if (ridge > 0) {
        out.push(ridge * ((p[1] as number) - shape.rho));
        out.push(ridge * Math.log((p[2] as number) / shape.nu));
      }
      if (lambda > 0) {
        for (const h of smileArbitragePenalties((K) => vol(sp, K), F, T, penaltyStrikes, sStd)) out.push(sl * h);
      }
      return out;
    };
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
      const lm = levenbergMarquardt(residuals(base), free.map((j) => s[j] as number), { project, maxIterations: lambda > 0 ? 150 : 200 });
      iterations += lm.iterations;
      const p = [...base];
      free.forEach((j, t) => {
        p[j] = lm.x[t] as number;
      });
      if (best === null || lm.cost < best.cost * (1 - 1e-12)) best = { x: p, cost: lm.cost };
    }
    return best as { x: number[]; cost: number };
  };

  const startPoints = (d: Prepared, extra: readonly (readonly number[])[]): number[][] => {
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
        const sp = toParams(x);
        let f = 0;
        for (let i = 0; i < d.k.length; i++) {
          const r = (d.sqrtOmega[i] as number) * (vol(sp, d.K[i] as number) - (d.iv[i] as number));
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
  };

  const extraStarts: number[][] = [];
  if (options.previous && sabrParamViolations({ ...options.previous, beta }).length === 0) {
    const p = options.previous;
    extraStarts.push([p.alpha, Math.max(-RHO_MAX, Math.min(RHO_MAX, p.rho)), Math.min(Math.max(p.nu, NU_MIN), nuMax)]);
  }

  /** The fit of `d` with its butterfly repair, and the density check of the returned point on d's grid. */
  const fitAndRepair = (d: Prepared, extra: readonly (readonly number[])[]): { x: number[]; x0: number[]; penalty: boolean; check: ReturnType<typeof checkSmileDensity> } => {
    const x0 = fit(d, startPoints(d, extra), 0, []).x;
    const chk0 = checkSmileDensity((K) => vol(toParams(x0), K), F, T, checkOpts(d));
    if (chk0.arbitrageFree || !(options.repairArbitrage ?? true)) return { x: x0, x0, penalty: false, check: chk0 };
    // Constrained refit: the first penalty weight that gives an arbitrage-free smile wins; if none
    // does, the unpenalized fit is kept and reported as not arbitrage-free (the caller rejects it).
    // Penalty grid: the check's grid (explicit strikes, or the default one built on a 15 % higher ATM vol
    // so that it reaches beyond the check grid of any nearby refit), 161 points.
    const penaltyGrid = (xc: readonly number[]): readonly number[] => {
      if (options.densityCheck?.strikes) return options.densityCheck.strikes;
      const s = vol(toParams(xc), F);
      return defaultDensityCheckStrikes(F, T, 1.15 * (s > 0 && Number.isFinite(s) ? s : atmGuess), { ...checkOpts(d), points: 161 });
    };
    let x = x0;
    for (let lambda = 1; lambda <= 1e4; lambda *= 10) {
      x = fit(d, [x], lambda, penaltyGrid(x)).x;
      const chk = checkSmileDensity((K) => vol(toParams(x), K), F, T, checkOpts(d));
      if (chk.arbitrageFree) return { x, x0, penalty: true, check: chk };
    }
    repairFailed = true;
    return { x: x0, x0, penalty: false, check: chk0 };
  };

  let used = all;
  let res = fitAndRepair(all, extraStarts);
  let x = res.x;
  const maxFrac = options.maxOutlierFraction ?? 0.1;
  if (mode === 'sabr-3p' && n >= 10 && maxFrac > 0) {
    const r = residualsVolPts(toParams(x), all, vol).map((e, t) => e * (all.sqrtOmega[t] as number));
    const med = median(r);
    const mad = 1.4826 * median(r.map((e) => Math.abs(e - med)));
    const thr = Math.max((options.outlierSigmas ?? 4) * mad, options.outlierFloorVolPts ?? 1);
    const trim = r
      .map((e, t) => ({ e: Math.abs(e - med), t }))
      .filter((o) => o.e > thr)
      .sort((a, b) => b.e - a.e || a.t - b.t)
      .slice(0, Math.floor(maxFrac * n));
    if (trim.length > 0) {
      const keep = valid.map(() => true);
      for (const o of trim) keep[o.t] = false;
      used = prep(keep);
      for (const o of trim) dropped.push(all.index[o.t] as number);
      res = fitAndRepair(used, [...extraStarts, x]);
      x = res.x;
      notes.push(`trimmed ${trim.length} outlier${trim.length > 1 ? 's' : ''} (> ${thr.toFixed(2)} weighted vol pts from the median residual) and refitted`);
    }
  }
  const params = toParams(x);
  const describe = shape.fromPrior ? 'the prior (neighbouring expiry)' : 'the default shape';
  switch (mode) {
    case 'sabr-1p':
      notes.unshift(`alpha fitted; rho = ${shape.rho.toFixed(3)} and nu = ${shape.nu.toPrecision(4)} fixed from ${describe}`);
      break;
    case 'sabr-2p':
      notes.unshift(`alpha and rho fitted; nu = ${shape.nu.toPrecision(4)} fixed from ${describe}`);
      break;
    case 'sabr-3p-ridge':
      notes.unshift(`alpha, rho, nu fitted with a weak ridge towards ${describe} (${n} quotes)`);
      break;
    default:
      notes.unshift('alpha, rho, nu fitted (grid of starts, projected LM)');
  }
  if (res.penalty) notes.push('density penalty applied (butterfly repair)');
  if (repairFailed && !res.penalty) notes.push('butterfly repair by density penalty failed; unpenalized fit kept');

  // the check of the returned point on the grid of the quotes used (done once, in fitAndRepair)
  const chk = res.check;
  if (!chk.arbitrageFree) warnings.push(`butterfly arbitrage remains: min density ${chk.minDensity.toExponential(3)} at K = ${chk.atStrike.toPrecision(6)}`);
  const resUsed = residualsVolPts(params, used, vol);
  const resAll = residualsVolPts(params, all, vol);
  const rmse = Math.sqrt(resUsed.reduce((s, e) => s + e * e, 0) / resUsed.length);
  const rmseAll = Math.sqrt(resAll.reduce((s, e) => s + e * e, 0) / resAll.length);
  const resRaw = residualsVolPts(toParams(res.x0), all, vol);
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
  dropped.sort((a, b) => a - b);
  return {
    params,
    formula,
    F,
    T,
    rmseVolPts: rmse,
    maxErrorVolPts: maxErr,
    rmseAllVolPts: rmseAll,
    unconstrainedRmseVolPts: Number.isFinite(rawRmse) ? rawRmse : rmseAll,
    within10Delta: errorStats(resCore),
    quotesUsed: used.k.length,
    quotesDropped: dropped,
    arbitrageFree: chk.arbitrageFree,
    minDensity: chk.minDensity,
    kAtMinDensity: Number.isFinite(chk.atStrike) ? Math.log(chk.atStrike / F) : Number.NaN,
    mode,
    method: `${mode}: SABR beta = ${beta} (${formula === 'hagan2002' ? 'Hagan et al. 2002 eq. (2.17)' : 'Obloj 2008'}); ${notes.join('; ')}`,
    weighting,
    iterations,
    atm: { marketIv: marketAtm, modelIv: modelAtm, errorVolPts: atmErr },
    warnings,
  };
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
