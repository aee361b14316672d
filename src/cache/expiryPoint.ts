/**
 * Reading one calibrated snapshot at a requested expiry: time to expiry, forward, vol.
 * Conventions (docs/conventions.md): T = (expirationTimestamp - observationTimestamp) / SECONDS_PER_YEAR (ACT/365);
 * the forward of any T comes from the forward curve (exact at listed expiries); spot is the index.
 */
import type { SurfaceSnapshot } from './snapshot.js';
import { SECONDS_PER_YEAR } from '../domain/time.js';
/** Smallest T used for a vol lookup (1 second), so an expiry at the observation instant has a vol. */
export const MIN_T_YEARS = 1 / SECONDS_PER_YEAR;

/** Market point of one expiry on one snapshot. */
export interface ExpiryPoint {
  /** Years to expiry from the snapshot's observationTimestamp, >= 0. */
  readonly T: number;
  /** Forward for that expiry, quote currency. */
  readonly forward: number;
  /** Spot index, quote currency. */
  readonly spot: number;
  readonly observationTimestamp: number;
  /** Implied vol (fraction) at strike K for this expiry. */
  vol(K: number): number;
  /** Analytic smile slope d sigma / dK at K (per quote-currency unit of strike); null when the model has none. */
  volSlope(K: number): number | null;
}

/** Per snapshot, the expiry points already read (snapshots are immutable; dropped with their snapshot). */
const POINTS = new WeakMap<SurfaceSnapshot, Map<number, ExpiryPoint>>();
/** Expiries remembered per snapshot (a request names at most 100; a snapshot lives a fraction of a second to seconds). */
const MAX_POINTS_PER_SNAPSHOT = 256;

/**
 * The market at `expirationTimestamp` (Unix seconds) on `snap`. Precomputed once per (snapshot, expiry): T, the
 * forward, and the smile at that T with its bracketing slices and interpolation weight (VolSurface
 * totalVarianceAt), so that the requests reading the same expiry of the same snapshot (a vanilla batch, a scenario
 * portfolio, repeated requests until the next recalibration) repeat no work; `vol(K)` then costs one log and the
 * one or two slice evaluations. Same numbers as reading the surface directly.
 */
export function expiryPoint(snap: SurfaceSnapshot, expirationTimestamp: number): ExpiryPoint {
  let bySnap = POINTS.get(snap);
  if (!bySnap) POINTS.set(snap, (bySnap = new Map()));
  let p = bySnap.get(expirationTimestamp);
  if (!p) {
    p = computeExpiryPoint(snap, expirationTimestamp);
    if (bySnap.size >= MAX_POINTS_PER_SNAPSHOT) bySnap.clear();
    bySnap.set(expirationTimestamp, p);
  }
  return p;
}

function computeExpiryPoint(snap: SurfaceSnapshot, expirationTimestamp: number): ExpiryPoint {
  const T = Math.max(expirationTimestamp - snap.observationTimestamp, 0) / SECONDS_PER_YEAR;
  const forward = snap.forwardCurve.forward(T);
  const Tvol = Math.max(T, MIN_T_YEARS);
  const surface = snap.surface;
  let vol: (K: number) => number;
  if (surface.totalVarianceAt && forward > 0) {
    const w = surface.totalVarianceAt(Tvol);
    // the arithmetic of VolSurface.impliedVol: k = ln(K/F), sqrt(w/T), NaN where w < 0, RangeError for K <= 0
    vol = (K: number) => {
      if (!(K > 0)) return surface.impliedVol(Tvol, K, forward);
      const wk = w(Math.log(K / forward));
      return wk >= 0 ? Math.sqrt(wk / Tvol) : Number.NaN;
    };
  } else {
    vol = (K: number) => surface.impliedVol(Tvol, K, forward);
  }
  // d sigma / dK = (dw/dk) / (2 sqrt(w Tvol) K) with k = ln(K/F) (sigma = sqrt(w/T), dk/dK = 1/K), analytic where
  // the surface has dw/dk (SVI), else null.
  const volSlope = (K: number): number | null => {
    const k = Math.log(K / forward);
    const dk = surface.totalVarianceDk ? surface.totalVarianceDk(Tvol, k) : null;
    if (dk === null) return null;
    return dk / (2 * Math.sqrt(surface.totalVariance(Tvol, k) * Tvol) * K);
  };
  return Object.freeze({ T, forward, spot: snap.forwardCurve.spot, observationTimestamp: snap.observationTimestamp, vol, volSlope });
}
