/**
 * Test helper: a surface snapshot whose smile is known in closed form at EVERY maturity: each listed slice has
 * implied vol sigma(k) = s0 + s1 k in its own log-moneyness k = ln(K/F), so total variance w_i(k) = sigma(k)^2 T_i
 * and the VolSurface's linear-in-T interpolation (and constant-vol extrapolation) gives sigma(k) again at any T.
 * Plus an independent bisection for the forward Black delta strikes of such a smile.
 */
import { expect } from 'vitest';
import type { SurfaceSnapshot, VolatilityModel } from '../../src/cache/snapshot.js';
import type { Pair, Source } from '../../src/domain/markets.js';
import { ForwardCurve } from '../../src/quant/forwardCurve.js';
import { normCdf } from '../../src/quant/normal.js';
import { VolSurface } from '../../src/quant/surface.js';

const YEAR = 365 * 86400;

/** k with N(d1(k)) = delta on sigma(k), by bisection on [-2, 2] cut to where sigma(k) >= 0.02. */
export function bisectDeltaK(delta: number, sigma: (k: number) => number, T: number): number {
  const f = (k: number) => {
    const s = sigma(k) * Math.sqrt(T);
    return normCdf(-k / s + s / 2) - delta;
  };
  let lo = -2;
  let hi = 2;
  while (sigma(lo) < 0.02) lo /= 1.01;
  while (sigma(hi) < 0.02) hi /= 1.01;
  expect(f(lo)).toBeGreaterThan(0);
  expect(f(hi)).toBeLessThan(0);
  for (let i = 0; i < 200; i++) {
    const mid = 0.5 * (lo + hi);
    if (f(mid) > 0) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

/** Expected iVSummary figures of sigma(k) = s0 + s1 k at T, by bisection. */
export function expectedFigures(s0: number, s1: number, T: number): { atmVol: number; rr25: number; rr10: number; bf25: number; bf10: number } {
  const sig = (k: number) => s0 + s1 * k;
  const [c25, p25, c10, p10] = [0.25, 0.75, 0.1, 0.9].map((d) => bisectDeltaK(d, sig, T)) as [number, number, number, number];
  return { atmVol: s0, rr25: s1 * (c25 - p25), rr10: s1 * (c10 - p10), bf25: (s1 * (c25 + p25)) / 2, bf10: (s1 * (c10 + p10)) / 2 };
}

/** Listed expiries of the constructed surface, days from the observation. */
export const LISTED_DAYS = [3, 10, 45, 120, 300] as const;

/**
 * A snapshot of (source, pair, model) at `obs` with the linear smile sigma(k) = s0 + s1 k on every slice, spot
 * `spot` and forwards F(T) = spot (1 + 0.05 T).
 */
export function linearSmileSnapshot(opts: { source?: Source; pair?: Pair; model?: VolatilityModel; obs: number; spot?: number; s0: number; s1: number; sequence?: number }): SurfaceSnapshot {
  const source = opts.source ?? 'DERIBIT';
  const pair = opts.pair ?? { base: 'BTC', quote: 'USD' };
  const spot = opts.spot ?? 80_000;
  const expiries = LISTED_DAYS.map((d) => opts.obs + d * 86400);
  const points = expiries.map((e) => {
    const T = (e - opts.obs) / YEAR;
    return { expirationTimestamp: e, T, forward: spot * (1 + 0.05 * T), origin: 'option-underlying' as const };
  });
  const curve = new ForwardCurve(spot, points);
  const w = (T: number) => (k: number) => (opts.s0 + opts.s1 * k) ** 2 * T;
  const slices = points.map((p) => ({
    expirationTimestamp: p.expirationTimestamp,
    T: p.T,
    forward: p.forward,
    params: { s0: opts.s0, s1: opts.s1 },
    fit: { rmseVolPts: 0, maxErrorVolPts: 0, quotesUsed: 0, butterflyFree: true, method: 'constructed', calibrationMs: 0 },
    quotes: [],
  }));
  return {
    source,
    pair,
    model: opts.model ?? 'SVI',
    observationTimestamp: opts.obs,
    spot,
    slices,
    surface: new VolSurface(points.map((p) => ({ expirationTimestamp: p.expirationTimestamp, T: p.T, forward: p.forward, totalVariance: w(p.T) }))),
    forwardCurve: curve,
    calibrationMs: 0,
    sequence: opts.sequence ?? 1,
  };
}
