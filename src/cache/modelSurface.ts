/**
 * The bridge between a model's per-expiry parameters (`ExpirySlice.params`, numbers only, as stored in
 * snapshots and Kafka documents) and the VolSurface the API reads: one total-variance function w(k) per
 * listed expiry for SVI, SABR and Vanna-Volga, and the calendar envelope that keeps the surface free of
 * calendar-spread arbitrage.
 *
 * Slices in total implied variance w(k) = sigma(k)^2 T at log-moneyness k = ln(K/F), F the expiry's forward:
 * - SVI: raw SVI, w(k) = a + b (rho (k - m) + sqrt((k - m)^2 + sigma^2)) (Gatheral-Jacquier 2014 eq. (3.1));
 * - SABR: sigma_B(K) of Hagan et al. 2002 eq. (2.17a)-(2.17c) at K = F e^k (src/quant/sabr.ts), w = sigma_B^2 T,
 *   between the wing junctions kWingL < 0 < kWingR; beyond them w continues LINEARLY in k with the slope of the
 *   SABR smile at the junction (C1), the junction chosen where that outward slope lies in [0, 1.8] (our wing
 *   rule, as Vanna-Volga's: the lognormal Hagan expansion grows faster than 2|k| in the far wings, beyond Roger
 *   Lee's moment bound (R. Lee, "The moment formula for implied volatility at extreme strikes", Mathematical
 *   Finance 14(3), 2004), which is arbitrage; see {@link sabrWingJunctions});
 * - VANNA_VOLGA: the Castagna-Mercurio 2007 second-order smile through the three pillars with the service's
 *   linear total-variance wings beyond the 10-delta strikes (src/quant/vannaVolga.ts `vannaVolgaSmile`).
 *
 * Calendar envelope (our repair rule, docs/conventions.md "Volatility surfaces: SVI, SABR, Vanna-Volga"): the
 * served slice of expiry i is W_i(k) = max(w_i(k), W_{i-1}(k)) when its raw fit is below the earlier served
 * slice somewhere on the calendar grid (`fit.calendarRepaired`), else W_i = w_i. Why this is sound: at fixed
 * x = K/F the undiscounted Black-76 call price per unit forward c(x, w) increases with w, so W_i corresponds to
 * c_i(x) = max(c_raw,i(x), c_{i-1}(x)); a maximum of functions that are convex, non-increasing with slope
 * >= -1 and within [max(1 - x, 0), 1] is again all of these (Carr-Madan 2005: a butterfly-free slice), and
 * c_i >= c_{i-1} at every x is the calendar condition with deterministic forwards (Gatheral-Jacquier 2014
 * Lemma 2.1, r = 0). So the envelope removes the crossing without creating butterfly arbitrage and leaves the
 * slice unchanged wherever it was already above the earlier one.
 *
 * Between and beyond the listed expiries the VolSurface rules apply (src/quant/surface.ts): total variance
 * linear in T at fixed k between expiries; constant implied vol at fixed k before the first and after the last.
 */
import { sviFirstDerivative, sviTotalVariance, type SviParams } from '../quant/svi.js';
import { sabrImpliedVolUnchecked, sabrParamViolations, type SabrParams } from '../quant/sabr.js';
import { VV_MAX_WING_SLOPE, vannaVolgaParamViolations, vannaVolgaSmile, type VannaVolgaParams } from '../quant/vannaVolga.js';
import { VolSurface, defaultCalendarGrid } from '../quant/surface.js';
import type { VolatilityModel } from './snapshot.js';

/** The parameter names of each model, in the order they are stored. */
export const MODEL_PARAMETERS: Readonly<Record<VolatilityModel, readonly string[]>> = {
  SVI: ['a', 'b', 'rho', 'm', 'sigma'],
  SABR: ['alpha', 'beta', 'rho', 'nu', 'kWingL', 'kWingR'],
  VANNA_VOLGA: ['K25P', 'Katm', 'K25C', 'vol25P', 'volAtm', 'vol25C', 'K10P', 'K10C', 'wingCurvL', 'wingCurvR'],
};

/** The calendar check grid: {@link defaultCalendarGrid}, 241 points of k = ln(K/F) in [-3, 3]. */
export const CALENDAR_GRID: readonly number[] = Object.freeze(defaultCalendarGrid());
/** Human-readable description of {@link CALENDAR_GRID}. */
export const CALENDAR_GRID_TEXT = '241 points of k = ln(K/F) in [-3, 3]';

/** What a slice needs to be turned into w(k). */
export interface ModelSliceInput {
  readonly expirationTimestamp: number;
  /** Years ACT/365 from the snapshot's observation, > 0. */
  readonly T: number;
  /** The expiry's forward, quote currency, > 0. */
  readonly forward: number;
  readonly params: Readonly<Record<string, number>>;
  /** Diagnostics; only `calendarRepaired` is read (envelope on/off). */
  readonly fit?: { readonly calendarRepaired?: boolean };
}

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
function sabrServed(p: SabrParams, F: number, T: number, kWingL: number, kWingR: number): (k: number) => number {
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

function pick(model: VolatilityModel, params: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of MODEL_PARAMETERS[model]) {
    const v = params[name];
    if (model === 'SABR' && (name === 'kWingL' || name === 'kWingR') && v === undefined) continue; // older documents: default junctions
    if (model === 'VANNA_VOLGA' && (name === 'wingCurvL' || name === 'wingCurvR') && v === undefined) continue; // older documents: linear wings
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new RangeError(`${model} parameter ${name} missing or not finite (${String(v)})`);
    out[name] = v;
  }
  return out;
}

/**
 * Total implied variance w(k) of one slice of `model`, k = ln(K/F) against the slice's forward.
 * Returns NaN where the model has no value (e.g. a SABR expansion outside its domain).
 * @throws RangeError when a parameter is missing or invalid for the model, or T/forward are not finite > 0
 */
export function sliceTotalVariance(model: VolatilityModel, slice: Pick<ModelSliceInput, 'T' | 'forward' | 'params'>): (k: number) => number {
  const { T, forward: F } = slice;
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`sliceTotalVariance: T must be finite > 0, got ${T}`);
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`sliceTotalVariance: forward must be finite > 0, got ${F}`);
  const p = pick(model, slice.params);
  switch (model) {
    case 'SVI': {
      const sp = p as unknown as SviParams;
      return (k) => sviTotalVariance(sp, k);
    }
    case 'SABR': {
      const sp: SabrParams = { alpha: p.alpha as number, beta: p.beta as number, rho: p.rho as number, nu: p.nu as number };
      const bad = sabrParamViolations(sp);
      if (bad.length > 0) throw new RangeError(`invalid SABR parameters: ${bad.join('; ')}`);
      const j = p.kWingL !== undefined && p.kWingR !== undefined ? { kWingL: p.kWingL, kWingR: p.kWingR } : sabrWingJunctions(sp, F, T);
      if (!(j.kWingL < 0 && j.kWingR > 0)) throw new RangeError(`invalid SABR wing junctions: kWingL ${j.kWingL} must be < 0 < kWingR ${j.kWingR}`);
      return sabrServed(sp, F, T, j.kWingL, j.kWingR);
    }
    case 'VANNA_VOLGA': {
      const vp = { ...(p as unknown as VannaVolgaParams), order: 'second' as const };
      const bad = vannaVolgaParamViolations(vp);
      if (bad.length > 0) throw new RangeError(`invalid Vanna-Volga parameters: ${bad.join('; ')}`);
      const smile = vannaVolgaSmile(vp, F, T);
      return (k) => {
        const v = smile(F * Math.exp(k));
        return v * v * T;
      };
    }
  }
}

/**
 * Parameters of a slice fitted at (oldT, oldForward) carried to a later observation (newT, newForward) so that
 * its implied vol at each log-moneyness stays what it was (used when a new fit is rejected and the last good
 * slice stays):
 * - SVI: a and b scaled by newT/oldT (w(k) scales with T at fixed implied vol; raw SVI maps to raw SVI);
 * - SABR: unchanged, wing junctions included (beta = 1: the smile is a function of k; only the small
 *   T-correction of eq. (2.17a) moves);
 * - VANNA_VOLGA: pillar and wing strikes scaled by newForward/oldForward (the pillars keep their k), vols unchanged.
 */
export function carryForwardParams(
  model: VolatilityModel,
  params: Readonly<Record<string, number>>,
  oldT: number,
  newT: number,
  oldForward: number,
  newForward: number,
): Record<string, number> {
  const p = { ...params };
  if (model === 'SVI' && oldT > 0 && newT > 0) {
    const c = newT / oldT;
    p.a = (p.a as number) * c;
    p.b = (p.b as number) * c;
  } else if (model === 'VANNA_VOLGA' && oldForward > 0 && newForward > 0) {
    const c = newForward / oldForward;
    for (const key of ['K25P', 'Katm', 'K25C', 'K10P', 'K10C']) p[key] = (p[key] as number) * c;
  }
  return p;
}

/**
 * Raw calendar check of slices sorted by T (the envelope decided slice by slice): on {@link CALENDAR_GRID},
 * slice i is calendar-free when w_i(k) >= W_{i-1}(k) - tol at every grid k, tol = 1e-12 + 1e-9 W_{i-1}(k),
 * where W is the served (possibly enveloped) slice. Returns, per slice, whether the raw slice was
 * calendar-free (the first always is) and the number of grid points where it was not.
 * @param fns total-variance functions of the raw slices, sorted by T ascending
 */
export function rawCalendarCheck(fns: ReadonlyArray<(k: number) => number>, grid: readonly number[] = CALENDAR_GRID): Array<{ calendarFree: boolean; violations: number }> {
  const out: Array<{ calendarFree: boolean; violations: number }> = [];
  let prev: Float64Array | null = null;
  for (const f of fns) {
    const cur = new Float64Array(grid.length);
    let violations = 0;
    for (let g = 0; g < grid.length; g++) {
      const w = f(grid[g] as number);
      const wp = prev ? (prev[g] as number) : Number.NaN;
      if (Number.isFinite(wp) && !(w >= wp - (1e-12 + 1e-9 * Math.abs(wp)))) violations++;
      cur[g] = w;
    }
    if (violations > 0 && prev) {
      for (let g = 0; g < grid.length; g++) {
        const wp = prev[g] as number;
        if (Number.isFinite(wp) && !((cur[g] as number) >= wp)) cur[g] = wp;
      }
    }
    out.push({ calendarFree: violations === 0, violations });
    prev = cur;
  }
  return out;
}

/** The envelope W(k) = max(w(k), below(k)), NaN-tolerant (a non-finite value never wins over a finite one). */
function envelope(own: (k: number) => number, below: (k: number) => number): (k: number) => number {
  return (k) => {
    const a = own(k);
    const b = below(k);
    return Number.isFinite(b) && !(a >= b) ? b : a;
  };
}

/**
 * The VolSurface of one model over its listed slices: w(k) per slice ({@link sliceTotalVariance}), with the
 * calendar envelope on the slices whose `fit.calendarRepaired` is true (module docstring). Deterministic in
 * the slices alone, so the calibrator and a Kafka replica build the same surface from the same parameters.
 * @throws RangeError when there is no slice, a slice's parameters are invalid for the model, or VolSurface
 *   rejects the slices (duplicate T, T or forward not > 0)
 */
export function buildModelSurface(model: VolatilityModel, slices: readonly ModelSliceInput[]): VolSurface {
  const sorted = [...slices].sort((a, b) => a.T - b.T);
  let below: ((k: number) => number) | null = null;
  let belowDk: ((k: number) => number) | null = null;
  const inputs = sorted.map((s) => {
    const own = sliceTotalVariance(model, s);
    // Analytic dw/dk for SVI (Gatheral 2004 raw SVI: w' = b (rho + (k - m)/sqrt((k - m)^2 + sigma^2))); through
    // the envelope it is the derivative of whichever side is served at k.
    const ownDk: ((k: number) => number) | null = model === 'SVI' ? ((p) => (k: number) => sviFirstDerivative(p, k))(pick('SVI', s.params) as unknown as SviParams) : null;
    const enveloped = below !== null && s.fit?.calendarRepaired === true;
    const w: (k: number) => number = enveloped ? envelope(own, below!) : own;
    let dk: ((k: number) => number) | null = ownDk;
    if (enveloped) {
      const b = below!;
      const bDk = belowDk;
      dk = ownDk && bDk ? (k: number) => (w(k) === own(k) ? ownDk(k) : b(k) === w(k) ? bDk(k) : ownDk(k)) : null;
    }
    below = w;
    belowDk = dk;
    return { expirationTimestamp: s.expirationTimestamp, T: s.T, forward: s.forward, totalVariance: w, ...(dk ? { totalVarianceDk: dk } : {}) };
  });
  return new VolSurface(inputs);
}
