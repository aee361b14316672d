/**
 * Implied-volatility surface from per-expiry smiles in total implied variance w(k, T) = sigma^2 T,
 * k = ln(K/F(T)) the log-moneyness against the forward of that expiry.
 *
 * Interpolation in T (Gatheral, "The Volatility Surface: A Practitioner's Guide", Wiley 2006, ch. 3
 * and ch. 5; Gatheral-Jacquier 2014 sec. 2): at constant log-moneyness k, total variance is linear
 * in T between two listed expiries T_i < T < T_{i+1}:
 *   w(k, T) = w_i(k) + (w_{i+1}(k) - w_i(k)) (T - T_i) / (T_{i+1} - T_i).
 * This keeps w non-decreasing in T (no calendar arbitrage) whenever the listed slices are, and is
 * exact at the listed expiries. Outside the listed range the implied vol at fixed k is held
 * constant (our rule, stated in docs/conventions.md):
 *   before the first expiry  w(k, T) = w_1(k) T / T_1   (so w(k, 0) = 0),
 *   after the last expiry    w(k, T) = w_N(k) T / T_N.
 *
 * Calendar-spread arbitrage: with deterministic forwards (r = 0 here) the surface is free of it iff
 * w(k, T) is non-decreasing in T at every fixed k (Gatheral-Jacquier 2014, Lemma 2.1; Gatheral 2006
 * ch. 3 "no calendar spread arbitrage").
 *
 * Units: T in years ACT/365; K and F in the quote currency; implied vols as fractions.
 */
import { sviFirstDerivative, sviTotalVariance, type SviParams } from './svi.js';

/** One listed expiry of a surface: give either raw SVI `params` or a `totalVariance(k)` function. */
export interface SurfaceSliceInput {
  /** Expiry, Unix seconds. */
  readonly expirationTimestamp: number;
  /** Time to expiry, years ACT/365, > 0. */
  readonly T: number;
  /** The expiry's forward, quote currency, > 0. */
  readonly forward: number;
  /** Raw SVI parameters of this expiry's total variance (Gatheral-Jacquier 2014 eq. (3.1)). */
  readonly params?: SviParams;
  /** Total implied variance as a function of log-moneyness k = ln(K/F) (used when `params` is absent). */
  readonly totalVariance?: (k: number) => number;
  /** Its analytic derivative dw/dk (optional; with `params` it is the raw-SVI one). */
  readonly totalVarianceDk?: (k: number) => number;
}

/** A listed slice of a built surface (immutable). */
export interface SurfaceSlice {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  /** Raw SVI parameters when the slice was given as SVI, else null. */
  readonly params: SviParams | null;
  /** w(k) of the slice. */
  readonly totalVariance: (k: number) => number;
  /** dw/dk of the slice, analytic; null when the slice was given without it. */
  readonly totalVarianceDk: ((k: number) => number) | null;
}

/** One calendar-arbitrage violation: w decreases from an expiry to the next at log-moneyness k. */
export interface CalendarViolation {
  readonly k: number;
  readonly earlierExpiry: number;
  readonly laterExpiry: number;
  readonly wEarlier: number;
  readonly wLater: number;
}

/** Result of {@link VolSurface.calendarArbitrageFree}. */
export interface CalendarCheck {
  readonly arbitrageFree: boolean;
  /** All (k, adjacent pair) where w_{i+1}(k) < w_i(k) - tol. */
  readonly violations: readonly CalendarViolation[];
}

/** Default k-grid for the calendar check: 241 points on [-3, 3] (K/F from 0.05 to 20). */
export function defaultCalendarGrid(): number[] {
  return Array.from({ length: 241 }, (_, i) => -3 + (6 * i) / 240);
}

/**
 * Immutable volatility surface (see the module docstring for the interpolation rules and sources).
 * Build it with `new VolSurface(slices)`; slices may come in any order.
 * @throws RangeError when there is no slice, a T or forward is not finite and > 0, two slices have
 *   the same T, or a slice has neither `params` nor `totalVariance`.
 */
export class VolSurface {
  /** Listed slices sorted by T ascending (frozen). */
  readonly slices: readonly SurfaceSlice[];

  constructor(slices: readonly SurfaceSliceInput[]) {
    if (slices.length === 0) throw new RangeError('VolSurface: at least one slice is needed');
    const built: SurfaceSlice[] = slices.map((s) => {
      if (!(Number.isFinite(s.T) && s.T > 0)) throw new RangeError(`VolSurface: T must be > 0, got ${s.T}`);
      if (!(Number.isFinite(s.forward) && s.forward > 0)) throw new RangeError(`VolSurface: forward must be > 0, got ${s.forward}`);
      let tv: (k: number) => number;
      let dk: ((k: number) => number) | null = s.totalVarianceDk ?? null;
      let params: SviParams | null = null;
      if (s.params) {
        const p = Object.freeze({ ...s.params });
        params = p;
        tv = (k: number) => sviTotalVariance(p, k);
        dk = (k: number) => sviFirstDerivative(p, k);
      } else if (s.totalVariance) tv = s.totalVariance;
      else throw new RangeError(`VolSurface: slice ${s.expirationTimestamp} has neither params nor totalVariance`);
      return Object.freeze({ expirationTimestamp: s.expirationTimestamp, T: s.T, forward: s.forward, params, totalVariance: tv, totalVarianceDk: dk });
    });
    built.sort((a, b) => a.T - b.T);
    for (let i = 1; i < built.length; i++) {
      if ((built[i] as SurfaceSlice).T === (built[i - 1] as SurfaceSlice).T) throw new RangeError(`VolSurface: two slices with T = ${(built[i] as SurfaceSlice).T}`);
    }
    this.slices = Object.freeze(built);
    Object.freeze(this);
  }

  /**
   * Where T (> 0) lies among the slices: at or before the first or at or after the last slice (`edge`: the caller
   * scales that slice's w by T / edge.T, constant implied vol), else between the slices `a` and `b` with
   * a.T <= T < b.T (binary search).
   */
  private bracket(T: number): { readonly edge: SurfaceSlice } | { readonly a: SurfaceSlice; readonly b: SurfaceSlice } {
    const s = this.slices;
    const first = s[0] as SurfaceSlice;
    const last = s[s.length - 1] as SurfaceSlice;
    if (T <= first.T) return { edge: first };
    if (T >= last.T) return { edge: last };
    let lo = 0;
    let hi = s.length - 1;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if ((s[mid] as SurfaceSlice).T <= T) lo = mid;
      else hi = mid;
    }
    return { a: s[lo] as SurfaceSlice, b: s[hi] as SurfaceSlice };
  }

  /**
   * Total implied variance w(k, T) at log-moneyness k = ln(K/F(T)) and T years: linear in T at fixed
   * k between listed expiries, constant implied vol at fixed k before the first and after the last
   * (module docstring). w(k, 0) = 0. @throws RangeError if T < 0 or not finite.
   */
  totalVariance(T: number, k: number): number {
    if (!(Number.isFinite(T) && T >= 0)) throw new RangeError(`VolSurface.totalVariance: T must be >= 0, got ${T}`);
    if (T === 0) return 0;
    const br = this.bracket(T);
    if ('edge' in br) return (br.edge.totalVariance(k) * T) / br.edge.T;
    const { a, b } = br;
    const wa = a.totalVariance(k);
    const wb = b.totalVariance(k);
    return wa + ((wb - wa) * (T - a.T)) / (b.T - a.T);
  }

  /**
   * The smile w(k) at a fixed T, with the bracketing slices and the interpolation weight found once: each call
   * then evaluates at most two slices (the same arithmetic as {@link totalVariance}, so the same numbers). For
   * readers that evaluate many strikes of one expiry (the API's per-expiry cache, src/cache/expiryPoint.ts).
   * @throws RangeError if T < 0 or not finite
   */
  totalVarianceAt(T: number): (k: number) => number {
    if (!(Number.isFinite(T) && T >= 0)) throw new RangeError(`VolSurface.totalVariance: T must be >= 0, got ${T}`);
    if (T === 0) return () => 0;
    const br = this.bracket(T);
    if ('edge' in br) {
      const e = br.edge;
      return (k) => (e.totalVariance(k) * T) / e.T;
    }
    const { a, b } = br;
    const dT = T - a.T;
    const span = b.T - a.T;
    return (k) => {
      const wa = a.totalVariance(k);
      const wb = b.totalVariance(k);
      return wa + ((wb - wa) * dT) / span;
    };
  }

  /**
   * dw/dk (k, T), analytic: the same interpolation in T as {@link totalVariance} applied to the slices' own
   * derivatives (it is linear in w, so it commutes with d/dk); null when a slice needed has no analytic derivative.
   * @throws RangeError if T < 0 or not finite.
   */
  totalVarianceDk(T: number, k: number): number | null {
    if (!(Number.isFinite(T) && T >= 0)) throw new RangeError(`VolSurface.totalVarianceDk: T must be >= 0, got ${T}`);
    if (T === 0) return 0;
    const br = this.bracket(T);
    if ('edge' in br) return br.edge.totalVarianceDk ? (br.edge.totalVarianceDk(k) * T) / br.edge.T : null;
    const { a, b } = br;
    if (!a.totalVarianceDk || !b.totalVarianceDk) return null;
    const da = a.totalVarianceDk(k);
    const db = b.totalVarianceDk(k);
    return da + ((db - da) * (T - a.T)) / (b.T - a.T);
  }

  /** Implied vol (fraction) at log-moneyness k and T > 0: sqrt(w(k, T)/T); NaN where w < 0. */
  impliedVolAtLogMoneyness(T: number, k: number): number {
    if (!(T > 0)) throw new RangeError(`VolSurface.impliedVol: T must be > 0, got ${T}`);
    const w = this.totalVariance(T, k);
    return w >= 0 ? Math.sqrt(w / T) : Number.NaN;
  }

  /**
   * Implied vol (fraction) for strike K at T > 0 years, with F the forward of that T (the caller reads
   * it from the forward curve; at a listed expiry it is the slice's forward). k = ln(K/F).
   * @throws RangeError if T <= 0, K <= 0 or F <= 0.
   */
  impliedVol(T: number, K: number, F: number): number {
    if (!(K > 0) || !(F > 0)) throw new RangeError(`VolSurface.impliedVol: K and F must be > 0, got K=${K}, F=${F}`);
    return this.impliedVolAtLogMoneyness(T, Math.log(K / F));
  }

  /**
   * Calendar-spread check on the listed slices: w_{i+1}(k) >= w_i(k) - tol for every adjacent pair and
   * every k of `kGrid` (default {@link defaultCalendarGrid}). With linear interpolation in T this is
   * also sufficient between the slices. Source: Gatheral-Jacquier 2014, Lemma 2.1.
   */
  calendarArbitrageFree(kGrid: readonly number[] = defaultCalendarGrid(), tol = 0): CalendarCheck {
    const violations: CalendarViolation[] = [];
    for (let i = 0; i + 1 < this.slices.length; i++) {
      const a = this.slices[i] as SurfaceSlice;
      const b = this.slices[i + 1] as SurfaceSlice;
      for (const k of kGrid) {
        const wa = a.totalVariance(k);
        const wb = b.totalVariance(k);
        if (!(wb >= wa - tol)) violations.push({ k, earlierExpiry: a.expirationTimestamp, laterExpiry: b.expirationTimestamp, wEarlier: wa, wLater: wb });
      }
    }
    return { arbitrageFree: violations.length === 0, violations };
  }
}
