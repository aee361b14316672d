/**
 * (The models themselves, typed parameters, parameter names, served smiles, wing and carry-forward rules, live in
 * src/quant/models; this module builds the served VolSurface from slices and applies the calendar envelope: from
 * typed slices in the chain fit (chainFit.ts, {@link buildTypedSurface}), from stored ones, read back by their model,
 * in the cache's snapshot builder and a Kafka replica ({@link buildModelSurface}).)
 *
 * The bridge between a model's per-expiry parameters (`ExpirySlice.params`, numbers only, as stored in
 * snapshots and Kafka documents) and the VolSurface the API reads: one total-variance function w(k) per
 * listed expiry for every registered model (src/domain/volatilityModels.ts; each model's smile is its module's
 * `totalVariance`, src/quant/models), and the calendar envelope that keeps the surface free of calendar-spread
 * arbitrage. The slices of the first three models, as their modules compute them:
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
 *   linear total-variance wings beyond the 10-delta strikes (src/quant/vannaVolga.ts `vannaVolgaSmile`);
 * - ESSVI: w(k) = theta/2 (1 + rho phi k + sqrt((phi k + rho)^2 + 1 - rho^2)) (Hendriks-Martini 2019; SSVI of
 *   Gatheral-Jacquier 2014 eq. (4.1)), src/quant/models/essvi.ts.
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
import type { VolatilityModel } from '../../domain/volatilityModels.js';
import { VolSurface, defaultCalendarGrid } from '../surface.js';
import { modelOf, type SmileModel } from '../models/index.js';
import type { StoredParams } from '../models/types.js';

/**
 * A model as the functions of stored slices take it: its module or its name (looked up in the registry: stored
 * snapshots and documents carry the name).
 */
export type ModelRef = VolatilityModel | SmileModel<unknown>;

/** The module of `model`. @throws RangeError for an unknown name */
function moduleOf(model: ModelRef): SmileModel<unknown> {
  return typeof model === 'string' ? modelOf(model) : model;
}

/** The calendar check grid: {@link defaultCalendarGrid}, 241 points of k = ln(K/F) in [-3, 3]. */
export const CALENDAR_GRID: readonly number[] = Object.freeze(defaultCalendarGrid());
/** Human-readable description of {@link CALENDAR_GRID}. */
export const CALENDAR_GRID_TEXT = '241 points of k = ln(K/F) in [-3, 3]';

/** What a stored slice needs to be turned into w(k): its parameters in their stored form (a snapshot, a Kafka document). */
export interface ModelSliceInput {
  readonly expirationTimestamp: number;
  /** Years ACT/365 from the snapshot's observation, > 0. */
  readonly T: number;
  /** The expiry's forward, quote currency, > 0. */
  readonly forward: number;
  /** Stored parameters, read by the model's validating `fromRecord`. */
  readonly params: StoredParams;
  /** Diagnostics; only `calendarRepaired` is read (envelope on/off). */
  readonly fit?: { readonly calendarRepaired?: boolean };
}

/** A slice with its model's typed parameters `P` (the chain fit's form, src/quant/chain/chainFit.ts). */
export interface TypedSlice<P> extends Omit<ModelSliceInput, 'params'> {
  readonly params: P;
}

/**
 * A stored slice with its parameters read by the model (deserialization: the one place a stored slice's numbers become
 * the model's parameters).
 * @throws RangeError when a parameter is missing or invalid for the model
 */
export function readSlice<P>(m: SmileModel<P>, s: ModelSliceInput): TypedSlice<P> {
  return { ...s, params: m.fromRecord(s.params, s.T, s.forward) };
}

/**
 * Total implied variance w(k) of one slice with typed parameters, k = ln(K/F) against the slice's forward: the model's
 * served smile (src/quant/models, wing rule included). Returns NaN where the model has no value.
 * @throws RangeError when T or the forward is not finite > 0
 */
export function typedTotalVariance<P>(m: SmileModel<P>, slice: Pick<TypedSlice<P>, 'T' | 'forward' | 'params'>): (k: number) => number {
  const { T, forward: F } = slice;
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`typedTotalVariance: T must be finite > 0, got ${T}`);
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`typedTotalVariance: forward must be finite > 0, got ${F}`);
  return m.totalVariance(slice.params, T, F);
}

/**
 * Total implied variance w(k) of one STORED slice of `model` (its module or name, {@link ModelRef}): its parameters read
 * by the model ({@link readSlice}), then {@link typedTotalVariance}.
 * @throws RangeError when a parameter is missing or invalid for the model, T/forward are not finite > 0, or the model
 *   name is unknown
 */
export function sliceTotalVariance(model: ModelRef, slice: Pick<ModelSliceInput, 'T' | 'forward' | 'params'>): (k: number) => number {
  const m = moduleOf(model);
  return typedTotalVariance(m, { T: slice.T, forward: slice.forward, params: m.fromRecord(slice.params, slice.T, slice.forward) });
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
 * The VolSurface of one model over its listed STORED slices (the cache's snapshot builder, a Kafka replica): each
 * slice read by the model ({@link readSlice}), then {@link buildTypedSurface}. Deterministic in the slices alone, so
 * the calibrator and a replica build the same surface from the same parameters.
 * @throws RangeError when there is no slice, a slice's parameters are invalid for the model, or VolSurface
 *   rejects the slices (duplicate T, T or forward not > 0)
 */
export function buildModelSurface(model: ModelRef, slices: readonly ModelSliceInput[]): VolSurface {
  const m = moduleOf(model);
  return buildTypedSurface(m, slices.map((s) => readSlice(m, s)));
}

/**
 * The VolSurface of one model over its listed slices with typed parameters: w(k) per slice (the model's served smile,
 * {@link typedTotalVariance}), with the calendar envelope on the slices whose `fit.calendarRepaired` is true (module
 * docstring).
 * @throws RangeError when there is no slice, or VolSurface rejects the slices (duplicate T, T or forward not > 0)
 */
export function buildTypedSurface<P>(m: SmileModel<P>, slices: readonly TypedSlice<P>[]): VolSurface {
  const sorted = [...slices].sort((a, b) => a.T - b.T);
  let below: ((k: number) => number) | null = null;
  let belowDk: ((k: number) => number) | null = null;
  const inputs = sorted.map((s) => {
    const own = typedTotalVariance(m, s);
    // Analytic dw/dk where the model has one (SVI, eSSVI); through the envelope it is the derivative of whichever side
    // is served at k.
    const ownDk = m.totalVarianceDk ? m.totalVarianceDk(s.params, s.T, s.forward) : null;
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
