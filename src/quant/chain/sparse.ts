/**
 * Sparse expiries (1 to {@link SPARSE_MAX_QUOTES} quotes, issue 11 item 2): the shape comes from the neighbouring
 * served expiries in total variance, the level and tilt from the expiry's own quotes ({@link sparseTarget}); chainFit.ts
 * fits the model to that target. Also which expiries may lend their shape ({@link SHAPE_SOURCE_MIN_T}).
 * k = ln(K/F), T in years ACT/365, w(k) total implied variance.
 */
import type { EligibleGroup } from './expiryGroups.js';

/** Expiries with at most this many quotes are sparse: shape from the neighbouring expiries, level from the quotes. */
export const SPARSE_MAX_QUOTES = 4;
/**
 * Expiries closer than this (2 days, in years) never lend their shape to other expiries (sparse neighbours, SVI
 * prior): the first expiry of a chain (hours to expiry) is the noisiest slice and must not seed the others.
 */
export const SHAPE_SOURCE_MIN_T = 2 / 365;

/**
 * The level-and-tilt target of a sparse expiry (1 to 4 quotes): the shape is the neighbours' served total variance
 * interpolated LINEARLY IN T at fixed k, w_s(k) = w_lo(k) + (T - T_lo)/(T_hi - T_lo) (w_hi(k) - w_lo(k)) (both
 * neighbours; the calendar-consistent interpolation of Gatheral-Jacquier 2014 sec. 5.1), or, beyond the last (or
 * before the first) shape source, the one neighbour's smile in standardized moneyness k/sqrt(T) (the same smile per
 * ATM standard deviation: w(k) = (T/T_n) w_n(k sqrt(T_n/T)), skew scaling as 1/sqrt(T), as in the SSVI power-law
 * parametrization of Gatheral-Jacquier 2014 sec. 4); the level comes from the quotes:
 * w(k) = lambda w_s(k) + mu k, (lambda, mu) the weighted least squares of the quotes' total variances (weights
 * 1/(2 iv T), IV-error scale; one quote: mu = 0). mu is clamped so that both wings still grow outward and stay
 * within Lee's slope 2 (then lambda is refitted alone). Returns null when no shape source exists.
 */
export function sparseTarget(
  g: EligibleGroup,
  lo: { T: number; w: (k: number) => number } | null,
  hi: { T: number; w: (k: number) => number } | null,
): { w: (k: number) => number; lambda: number; mu: number; how: string } | null {
  if (!lo && !hi) return null;
  const T = g.T;
  let shape: (k: number) => number;
  let how: string;
  if (lo && hi) {
    const th = (T - lo.T) / (hi.T - lo.T);
    shape = (k) => lo.w(k) + th * (hi.w(k) - lo.w(k));
    how = `shape interpolated linearly in T between the expiries of T = ${lo.T.toFixed(4)} and ${hi.T.toFixed(4)} y in total variance`;
  } else {
    const n = (lo ?? hi)!;
    const c = Math.sqrt(n.T / T);
    shape = (k) => (n.w(k * c) * T) / n.T;
    how = `shape of the ${lo ? 'shorter' : 'longer'} neighbour (T = ${n.T.toFixed(4)} y) in k/sqrt(T), w(k) = (T/T_n) w_n(k sqrt(T_n/T))`;
  }
  const qs = g.quotes.filter((q) => Number.isFinite(shape(q.k)) && shape(q.k) > 0);
  if (qs.length === 0) return null;
  const fitLambda = (mu: number): number => {
    let num = 0;
    let den = 0;
    for (const q of qs) {
      const wt = 1 / (2 * q.markIv * T) ** 2;
      const s0 = shape(q.k);
      num += wt * s0 * (q.markIv * q.markIv * T - mu * q.k);
      den += wt * s0 * s0;
    }
    return num / den;
  };
  let lambda = fitLambda(0);
  let mu = 0;
  const kSpan = Math.max(...qs.map((q) => q.k)) - Math.min(...qs.map((q) => q.k));
  if (qs.length >= 2 && kSpan > 0) {
    // 2x2 weighted normal equations in (lambda, mu).
    let a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
    for (const q of qs) {
      const wt = 1 / (2 * q.markIv * T) ** 2;
      const s0 = shape(q.k);
      const y = q.markIv * q.markIv * T;
      a11 += wt * s0 * s0;
      a12 += wt * s0 * q.k;
      a22 += wt * q.k * q.k;
      b1 += wt * s0 * y;
      b2 += wt * q.k * y;
    }
    const det = a11 * a22 - a12 * a12;
    if (Math.abs(det) > 1e-14 * a11 * a22) {
      lambda = (b1 * a22 - b2 * a12) / det;
      mu = (a11 * b2 - a12 * b1) / det;
    }
    // Wing slopes of the shape far out (finite differences at +-6 ATM standard deviations).
    const s = Math.sqrt(Math.max(shape(0), 1e-12));
    const slope = (k: number): number => (shape(k + 1e-4) - shape(k - 1e-4)) / 2e-4;
    const sL = slope(-6 * s);
    const sR = slope(6 * s);
    const ok = (l: number, m: number): boolean => l > 0 && l * sL + m <= 0 && l * sR + m >= 0 && Math.abs(l * sL + m) <= 2 && Math.abs(l * sR + m) <= 2;
    if (!Number.isFinite(mu) || !ok(lambda, mu)) {
      mu = 0;
      lambda = fitLambda(0);
    }
  }
  if (!(lambda > 0) || !Number.isFinite(lambda)) return null;
  const l = lambda;
  const m = mu;
  return { w: (k) => l * shape(k) + m * k, lambda, mu, how };
}
