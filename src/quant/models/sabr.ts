/**
 * SABR as a served model: Hagan, Kumar, Lesniewski, Woodward, "Managing smile risk", Wilmott 2002, eq. (2.17a)-(2.17c)
 * (src/quant/sabr.ts) between the wing junctions kWingL < 0 < kWingR, and beyond them total variance continued
 * LINEARLY in k with the slope of the SABR smile at the junction (C1), the junction chosen where that outward slope lies
 * in [0, 1.8] (our wing rule: the lognormal Hagan expansion grows faster than 2|k| far out, beyond Roger Lee's moment
 * bound, R. Lee, "The moment formula for implied volatility at extreme strikes", Mathematical Finance 14(3), 2004).
 * Fitted by src/quant/sabrCalibration.ts. Stored: alpha, beta, rho, nu, kWingL, kWingR (junctions optional in older
 * documents: recomputed by {@link sabrWingJunctions}).
 */
import { sabrImpliedVolUnchecked, sabrParamViolations, type SabrParams } from '../sabr.js';
import { calibrateSabr } from '../sabrCalibration.js';
import { checkSmileDensity } from '../smileArbitrage.js';
import { VV_MAX_WING_SLOPE } from '../vannaVolga.js';
import { finiteOrNull, halfSpreadObjectiveWeights, noBidPriceBands, servedGrid, toCalibrationQuotes } from './fitKit.js';
import { need, usableStart, type FitContext, type SliceFit, type SliceFitOptions, type SliceInput, type SmileModel } from './types.js';

/** Largest outward slope dw/dk of a linear wing: 90 % of Lee's bound 2 (as VV_MAX_WING_SLOPE). */
export const MAX_WING_SLOPE = VV_MAX_WING_SLOPE;
/** Default half-width of the SABR core in ATM total standard deviations (the calibration's density-check grid). */
export const SABR_CORE_STD = 4;

/**
 * Wing junctions of a SABR smile: start from the range its calibration checked for butterfly arbitrage,
 * [min(kMin, -s^2/2 - 4s), max(kMax, -s^2/2 + 4s)] with s = sigma_ATM sqrt(T) (smileArbitrage.ts
 * defaultDensityCheckStrikes; kMin/kMax the quoted range), and move each junction towards k = 0 (in 1 % steps
 * of its distance) until the SABR total variance there is finite and its outward slope lies in
 * [0, MAX_WING_SLOPE]. If no such point exists the junction stays at 2 % of the start and the wing slope is
 * clamped (the density check of the served smile then decides).
 * @throws RangeError on invalid SABR parameters or F, T not finite > 0
 */
export function sabrWingJunctions(p: SabrParams, F: number, T: number, kMin = 0, kMax = 0): { kWingL: number; kWingR: number } {
  const bad = sabrParamViolations(p);
  if (bad.length > 0) throw new RangeError(`invalid SABR parameters: ${bad.join('; ')}`);
  if (!(F > 0 && T > 0 && Number.isFinite(F) && Number.isFinite(T))) throw new RangeError(`sabrWingJunctions: F and T must be finite > 0, got ${F}, ${T}`);
  const core = sabrCore(p, F, T);
  const atm = core(0);
  const s = Number.isFinite(atm) && atm > 0 ? Math.sqrt(atm) : 0.5 * Math.sqrt(T);
  const find = (start: number, dir: 1 | -1): number => {
    for (let i = 0; i < 98; i++) {
      const k = start * (1 - i / 100);
      const h = 1e-5 * Math.max(1, Math.abs(k));
      const slope = (core(k + h) - core(k - h)) / (2 * h);
      const out = dir * slope;
      if (Number.isFinite(core(k)) && out >= 0 && out <= MAX_WING_SLOPE) return k;
    }
    return start * 0.02;
  };
  const lo = Math.min(Number.isFinite(kMin) ? kMin : 0, -0.5 * s * s - SABR_CORE_STD * s);
  const hi = Math.max(Number.isFinite(kMax) ? kMax : 0, -0.5 * s * s + SABR_CORE_STD * s);
  return { kWingL: find(lo, -1), kWingR: find(hi, 1) };
}

/** SABR total variance (Hagan 2002), NaN outside the expansion's domain. */
function sabrCore(p: SabrParams, F: number, T: number): (k: number) => number {
  return (k) => {
    const v = sabrImpliedVolUnchecked(p, F, F * Math.exp(k), T);
    return v > 0 && Number.isFinite(v) ? v * v * T : Number.NaN;
  };
}

/** The served SABR smile: Hagan between the junctions, linear C1 wings beyond (slope clamped to [0, MAX_WING_SLOPE]). */
export function sabrServed(p: SabrParams, F: number, T: number, kWingL: number, kWingR: number): (k: number) => number {
  const core = sabrCore(p, F, T);
  const slopeAt = (k: number): number => {
    const h = 1e-5 * Math.max(1, Math.abs(k));
    return (core(k + h) - core(k - h)) / (2 * h);
  };
  const wL = core(kWingL);
  const wR = core(kWingR);
  const sL = Math.min(0, Math.max(-MAX_WING_SLOPE, slopeAt(kWingL) || 0));
  const sR = Math.max(0, Math.min(MAX_WING_SLOPE, slopeAt(kWingR) || 0));
  return (k) => (k < kWingL ? wL + sL * (k - kWingL) : k > kWingR ? wR + sR * (k - kWingR) : core(k));
}


/** Served SABR parameters: Hagan's four and the wing junctions (log-moneyness). */
export interface SabrServedParams extends SabrParams {
  readonly kWingL: number;
  readonly kWingR: number;
}

export const sabrModel: SmileModel<SabrServedParams> = {
  name: 'SABR',
  parameterNames: ['alpha', 'beta', 'rho', 'nu', 'kWingL', 'kWingR'],
  freeParameterNames: ['alpha', 'rho', 'nu'],
  objectiveWeights: halfSpreadObjectiveWeights,
  // Refitted on any change of its quotes (issue 22): under the spread-weighted objective its optimum jumps between
  // near-equal minima with small quote moves (a 14-day simulator slice moved 0.17 to 0.18 vol pt at k = -0.3 between
  // two seconds, refits and cold fits alike; test/calibration/tracking.test.ts), which no linear prediction can bound.
  trackingGate: false,
  optionalParameterNames: ['kWingL', 'kWingR'],
  fromRecord(r, T, forward) {
    const p: SabrParams = { alpha: need('SABR', r, 'alpha'), beta: need('SABR', r, 'beta'), rho: need('SABR', r, 'rho'), nu: need('SABR', r, 'nu') };
    const bad = sabrParamViolations(p);
    if (bad.length > 0) throw new RangeError(`invalid SABR parameters: ${bad.join('; ')}`);
    const j =
      r.kWingL !== undefined && r.kWingR !== undefined
        ? { kWingL: need('SABR', r, 'kWingL'), kWingR: need('SABR', r, 'kWingR') }
        : sabrWingJunctions(p, forward, T); // older documents: default junctions
    if (!(j.kWingL < 0 && j.kWingR > 0)) throw new RangeError(`invalid SABR wing junctions: kWingL ${j.kWingL} must be < 0 < kWingR ${j.kWingR}`);
    return { ...p, ...j };
  },
  toRecord: (p) => ({ alpha: p.alpha, beta: p.beta, rho: p.rho, nu: p.nu, kWingL: p.kWingL, kWingR: p.kWingR }),
  totalVariance: (p, T, F) => sabrServed(p, F, T, p.kWingL, p.kWingR),
  // beta = 1: the smile is a function of k; only the small T-correction of eq. (2.17a) moves. Unchanged.
  carryForward: (p) => ({ ...p }),
  arbitrageCheck:
    'risk-neutral density >= 0 (Breeden-Litzenberger) on 401 strikes over 4 ATM standard deviations and the quoted range (Hagan smile), and over 6 and the quoted range (served smile with its wings)',
  wingRule: 'linear total variance beyond kWingL/kWingR with the C1 slope clamped to [0, 1.8] (Lee)',
  // Hagan's T-term moves with T (measured on the real chains: 0.011 vp after 0.09 %): 0.05 % kept a reused slice within
  // 0.01 vp; the tracking tolerance's floor is 0.05 vp (issue 22): 0.25 %.
  reuseMaxTChange: 2.5e-3,
  fit: (g, ctx, options) => fitSabrSlice(g, ctx, options),
  borrowsShape: () => false,
};

/** Butterfly check of the SERVED SABR smile of a slice (Hagan with its linear wings) on {@link servedGrid}. */
function servedSabrDensity(p: SabrServedParams, g: SliceInput): { ok: boolean; minDensity: number } {
  const w = sabrModel.totalVariance(p, g.T, g.forward);
  const chk = checkSmileDensity((K) => Math.sqrt(w(Math.log(K / g.forward)) / g.T), g.forward, g.T, servedGrid(g));
  return { ok: chk.arbitrageFree, minDensity: chk.minDensity };
}

/** RMSE and max |error| (vol points) of the served SABR smile over the quotes not in `dropped` (input indices). */
function servedErrors(p: SabrServedParams, g: SliceInput, dropped: readonly number[]): { rmse: number; max: number; used: number } {
  const w = sabrModel.totalVariance(p, g.T, g.forward);
  const skip = new Set(dropped);
  let ss = 0;
  let mx = 0;
  let n = 0;
  g.quotes.forEach((q, i) => {
    if (skip.has(i)) return;
    const e = 100 * (Math.sqrt(w(q.k) / g.T) - q.markIv);
    if (!Number.isFinite(e)) return;
    ss += e * e;
    mx = Math.max(mx, Math.abs(e));
    n++;
  });
  return { rmse: n > 0 ? Math.sqrt(ss / n) : 0, max: mx, used: n };
}

/**
 * SABR fit of one expiry (Hagan 2002 at the fixed CEV exponent `options.sabrBeta`, default 1): the spread-weighted
 * (issue 26, quoteWeights.ts quoteHalfSpreads: min sum ((iv - mark) / h)^2), untrimmed least-squares fit of
 * calibrateSabr (warm from `st.previous`, sparse modes from `st.lastFull`; no-bid quotes held in their price bands
 * when `options.optionPriceTick` gives the exchange's tick, fitKit.ts noBidPriceBands), then the wing junctions
 * ({@link sabrWingJunctions}) and the butterfly check of the SERVED smile (Hagan with its linear wings) on
 * servedGrid; the slice is butterfly-free only when both the calibration's and the served check pass.
 * @throws RangeError from calibrateSabr (F, T not finite > 0; no valid quote)
 */
export function fitSabrSlice(g: SliceInput, st: FitContext<SabrServedParams>, options: SliceFitOptions = {}): SliceFit<SabrServedParams> {
  const beta = options.sabrBeta ?? 1;
  // Spread-weighted, untrimmed: the served SABR is the spread-weighted least-squares Hagan fit to the marks (the
  // reference of test/calibration/referenceGap.test.ts); vega weights and trimming cost 0.2 to 7 vol points on real chains.
  const prior = st.lastFullT !== undefined ? usableStart(sabrModel, st.lastFull, st.lastFullT, g.forward) : undefined;
  const previous = usableStart(sabrModel, st.previous, g.T, g.forward);
  const r = calibrateSabr(noBidPriceBands(g, options.optionPriceTick), g.forward, g.T, {
    beta,
    weighting: 'halfSpread',
    maxOutlierFraction: 0,
    ...(prior && st.lastFullT ? { prior, priorT: st.lastFullT } : {}),
    // the warm start at this fit's beta (SABR_BETA may have changed since the previous fit)
    ...(previous ? { previous: { alpha: previous.alpha, beta, rho: previous.rho, nu: previous.nu }, warm: true } : {}),
  });
  // The plain (equal-weight) fit, for diagnostics only: a local refit from the served one (issue 26). On cold fits
  // only, as SVI's (a warm refit keeps the figure of the expiry's last cold fit, chainFit.ts).
  const plain =
    r.mode === 'sabr-3p' && !previous
      ? calibrateSabr(toCalibrationQuotes(g), g.forward, g.T, { beta, weighting: 'uniform', maxOutlierFraction: 0, previous: r.params, warm: true })
      : null;
  const { kMin, kMax } = servedGrid(g);
  const wings = sabrWingJunctions(r.params, g.forward, g.T, kMin, kMax);
  const params: SabrServedParams = { alpha: r.params.alpha, beta: r.params.beta, rho: r.params.rho, nu: r.params.nu, kWingL: wings.kWingL, kWingR: wings.kWingR };
  const served = servedSabrDensity(params, g);
  const err = servedErrors(params, g, r.quotesDropped);
  const wingsInside = wings.kWingL > kMin || wings.kWingR < kMax;
  return {
    params,
    rmseVolPts: err.rmse,
    maxErrorVolPts: err.max,
    quotesUsed: r.quotesUsed,
    butterflyFree: r.arbitrageFree && served.ok,
    // a constrained refit for arbitrage (the no-bid price bands are part of the objective, not a repair)
    repaired: /density penalty applied/.test(r.method) && r.arbitrageFree && served.ok,
    method: `${r.method}; linear total-variance wings beyond k = ${wings.kWingL.toFixed(4)} and ${wings.kWingR.toFixed(4)}${wingsInside ? ' (inside the quoted range: Lee bound)' : ''}`,
    minDensity: finiteOrNull(Math.min(r.minDensity, served.minDensity)),
    atmErrorVolPts: finiteOrNull(r.atm.errorVolPts),
    warnings: served.ok ? r.warnings : [...r.warnings, `butterfly arbitrage in the served smile (wings): min density ${served.minDensity.toExponential(3)}`],
    full: r.mode === 'sabr-3p',
    unconstrainedRmseVolPts: r.unconstrainedRmseVolPts,
    ...(plain ? { plainRmseVolPts: plain.unconstrainedRmseVolPts } : {}),
  };
}
