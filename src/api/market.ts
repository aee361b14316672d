/**
 * Reading one calibrated snapshot at a requested expiry: time to expiry, forward, vol.
 * Conventions (decisions.md): T = (expirationTimestamp - observationTimestamp) / (365 * 86400);
 * the forward of any T comes from the forward curve (exact at listed expiries); spot is the index.
 */
import type { SurfaceSnapshot } from '../cache/snapshot.js';

/** Seconds in an ACT/365 year. */
export const SECONDS_PER_YEAR = 365 * 86400;
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

/** The market at `expirationTimestamp` (Unix seconds) on `snap`. */
export function expiryPoint(snap: SurfaceSnapshot, expirationTimestamp: number): ExpiryPoint {
  const T = Math.max(expirationTimestamp - snap.observationTimestamp, 0) / SECONDS_PER_YEAR;
  const forward = snap.forwardCurve.forward(T);
  const Tvol = Math.max(T, MIN_T_YEARS);
  const surface = snap.surface;
  return {
    T,
    forward,
    spot: snap.forwardCurve.spot,
    observationTimestamp: snap.observationTimestamp,
    vol: (K: number) => surface.impliedVol(Tvol, K, forward),
    volSlope: (K: number) => {
      // d sigma / dK = (dw/dk) / (2 sqrt(w Tvol) K), analytic where the surface has dw/dk (SVI), else null.
      const k = Math.log(K / forward);
      const dk = surface.totalVarianceDk ? surface.totalVarianceDk(Tvol, k) : null;
      if (dk === null) return null;
      return dk / (2 * Math.sqrt(surface.totalVariance(Tvol, k) * Tvol) * K);
    },
  };
}
