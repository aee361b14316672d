/**
 * Forward curve of one (source, pair): spot S (the index) and the listed forwards F(T_i) of the
 * exchange's expiries (Deribit `underlying_price` / the future of that expiry).
 *
 * Yield definition (docs/spec/decisions.md, "Quant conventions": forward-curve `value` =
 * annualized basis, simple): y(T) = (F(T)/S - 1) / T, T in years ACT/365 (decisions.md: T =
 * (expirationTimestamp - observationTimestamp) / (365·86400)). So F(T) = S (1 + y(T) T).
 *
 * Interpolation (our rule, stated in docs/conventions.md): y is linear in T between listed points and
 * flat (the nearest listed point's y) before the first and after the last; F(0) = S. Interpolating
 * the annualized basis rather than F itself keeps F(T) -> S as T -> 0 and gives constant-maturity
 * yields read straight off the listed ones (decisions.md: "Constant maturities are read off the
 * curve interpolated between listed expiries").
 *
 * Constant maturities (interface-spec.md, "constMat (forward curve)": 1D, 1W, 2W, 1M, 2M, 3M, 6M, 9M,
 * 12M): 1D = 1 day, 1W = 7, 2W = 14, n months = round(n·365/12) days (ACT/365 months), see
 * {@link CONST_MAT_DAYS}.
 */
import { SECONDS_PER_YEAR } from '../domain/time.js';

/** Calendar days of each constant maturity: 1D, 1W, 2W, and n months = round(n · 365 / 12) days. */
export const CONST_MAT_DAYS = Object.freeze({
  '1D': 1,
  '1W': 7,
  '2W': 14,
  '1M': 30,
  '2M': 61,
  '3M': 91,
  '6M': 183,
  '9M': 274,
  '12M': 365,
} as const);

/** A constant-maturity label of the forward curve. */
export type ConstMat = keyof typeof CONST_MAT_DAYS;

/** One listed point of the curve. */
export interface ForwardPoint {
  /** Expiry, Unix seconds. */
  readonly expirationTimestamp: number;
  /** Time to expiry, years ACT/365, > 0. */
  readonly T: number;
  /** Forward price of that expiry, quote currency, > 0. */
  readonly forward: number;
}

/** Fixed-expiry yield (interface-spec.md section 7, `fixedYields`). */
export interface FixedYield {
  readonly expirationTimestamp: number;
  /** Simple annualized basis (F/S - 1)/T. */
  readonly value: number;
}

/** Constant-maturity yield (interface-spec.md section 7, `constMatYields`). */
export interface ConstMatYield {
  /** observationTimestamp + days · 86400, Unix seconds. */
  readonly expirationTimestamp: number;
  readonly constMat: ConstMat;
  /** Simple annualized basis read off the curve at T = days/365. */
  readonly value: number;
}


/**
 * Immutable forward curve (module docstring for definitions and sources).
 * @throws RangeError if spot is not finite and > 0, a point's T or forward is not finite and > 0,
 *   or two points share the same T.
 * With no listed point, y ≡ 0 (F(T) = S).
 */
export class ForwardCurve {
  /** Spot (index), quote currency. */
  readonly spot: number;
  /** Listed points sorted by T ascending (frozen). */
  readonly points: readonly ForwardPoint[];
  /** Simple annualized basis of each listed point, same order as `points`. */
  private readonly yields: readonly number[];

  constructor(spot: number, points: readonly ForwardPoint[]) {
    if (!(Number.isFinite(spot) && spot > 0)) throw new RangeError(`ForwardCurve: spot must be > 0, got ${spot}`);
    const pts = points.map((p) => {
      if (!(Number.isFinite(p.T) && p.T > 0)) throw new RangeError(`ForwardCurve: T must be > 0, got ${p.T} (${p.expirationTimestamp})`);
      if (!(Number.isFinite(p.forward) && p.forward > 0)) throw new RangeError(`ForwardCurve: forward must be > 0, got ${p.forward}`);
      return Object.freeze({ expirationTimestamp: p.expirationTimestamp, T: p.T, forward: p.forward });
    });
    pts.sort((a, b) => a.T - b.T);
    for (let i = 1; i < pts.length; i++) {
      if ((pts[i] as ForwardPoint).T === (pts[i - 1] as ForwardPoint).T) throw new RangeError(`ForwardCurve: two points with T = ${(pts[i] as ForwardPoint).T}`);
    }
    this.spot = spot;
    this.points = Object.freeze(pts);
    this.yields = Object.freeze(pts.map((p) => (p.forward / spot - 1) / p.T));
    Object.freeze(this);
  }

  /**
   * Simple annualized basis y(T) = (F(T)/S - 1)/T at T >= 0 years: linear in T between listed points,
   * flat outside them (y(0) = y(T_1)); 0 when there is no listed point.
   * @throws RangeError if T < 0 or not finite.
   */
  yieldAt(T: number): number {
    if (!(Number.isFinite(T) && T >= 0)) throw new RangeError(`ForwardCurve.yieldAt: T must be >= 0, got ${T}`);
    const p = this.points;
    const y = this.yields;
    if (p.length === 0) return 0;
    if (T <= (p[0] as ForwardPoint).T) return y[0] as number;
    if (T >= (p[p.length - 1] as ForwardPoint).T) return y[y.length - 1] as number;
    let lo = 0;
    let hi = p.length - 1;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if ((p[mid] as ForwardPoint).T <= T) lo = mid;
      else hi = mid;
    }
    const a = p[lo] as ForwardPoint;
    const b = p[hi] as ForwardPoint;
    const ya = y[lo] as number;
    const yb = y[hi] as number;
    return ya + ((yb - ya) * (T - a.T)) / (b.T - a.T);
  }

  /** Forward F(T) = S (1 + y(T) T), quote currency; F(0) = S; exact at listed points. @throws RangeError if T < 0. */
  forward(T: number): number {
    return this.spot * (1 + this.yieldAt(T) * T);
  }

  /** Yields of the listed expiries, (F/S - 1)/T, sorted by expiry (interface-spec.md section 7 `fixedYields`). */
  fixedYields(): FixedYield[] {
    return this.points.map((p, i) => ({ expirationTimestamp: p.expirationTimestamp, value: this.yields[i] as number }));
  }

  /**
   * Constant-maturity yields for 1D, 1W, 2W, 1M, 2M, 3M, 6M, 9M, 12M (in that order), read off the
   * curve at T = days/365 (interface-spec.md section 7 `constMatYields`; decisions.md).
   * @param observationTimestamp the curve's observation time, Unix seconds.
   */
  constMatYields(observationTimestamp: number): ConstMatYield[] {
    return (Object.entries(CONST_MAT_DAYS) as [ConstMat, number][]).map(([constMat, days]) => ({
      expirationTimestamp: observationTimestamp + days * 86400,
      constMat,
      value: this.yieldAt((days * 86400) / SECONDS_PER_YEAR),
    }));
  }
}
