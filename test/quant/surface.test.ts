import { describe, expect, it } from 'vitest';
import { sviTotalVariance, type SviParams } from '../../src/quant/svi.js';
import { VolSurface, defaultCalendarGrid } from '../../src/quant/surface.js';

const DAY = 86400;
const OBS = 1_780_000_000;
const P1: SviParams = { a: 0.002, b: 0.02, rho: -0.3, m: 0.01, sigma: 0.05 }; // ~1 week
const P2: SviParams = { a: 0.01, b: 0.06, rho: -0.25, m: 0.03, sigma: 0.12 }; // ~1 month
const P3: SviParams = { a: 0.05, b: 0.15, rho: -0.2, m: 0.05, sigma: 0.3 }; // ~6 months
const T1 = 7 / 365;
const T2 = 30 / 365;
const T3 = 182 / 365;
const slices = [
  { expirationTimestamp: OBS + 30 * DAY, T: T2, forward: 101, params: P2 },
  { expirationTimestamp: OBS + 7 * DAY, T: T1, forward: 100.2, params: P1 },
  { expirationTimestamp: OBS + 182 * DAY, T: T3, forward: 104, params: P3 },
];
const surface = new VolSurface(slices);
const ks = [-1, -0.3, -0.05, 0, 0.02, 0.2, 0.8];

describe('VolSurface', () => {
  it('sorts slices by T and is immutable', () => {
    expect(surface.slices.map((s) => s.T)).toEqual([T1, T2, T3]);
    expect(Object.isFrozen(surface)).toBe(true);
    expect(Object.isFrozen(surface.slices)).toBe(true);
    expect(() => (surface.slices as unknown as unknown[]).push(1)).toThrow();
  });

  it('is exact at the listed expiries', () => {
    for (const k of ks) {
      expect(surface.totalVariance(T1, k)).toBeCloseTo(sviTotalVariance(P1, k), 15);
      expect(surface.totalVariance(T2, k)).toBeCloseTo(sviTotalVariance(P2, k), 15);
      expect(surface.totalVariance(T3, k)).toBeCloseTo(sviTotalVariance(P3, k), 15);
    }
  });

  it('is linear in T at fixed log-moneyness between slices', () => {
    for (const k of ks) {
      const w1 = sviTotalVariance(P1, k);
      const w2 = sviTotalVariance(P2, k);
      for (const f of [0.1, 0.25, 0.5, 0.9]) {
        const T = T1 + f * (T2 - T1);
        expect(surface.totalVariance(T, k)).toBeCloseTo(w1 + f * (w2 - w1), 14);
      }
      // Second differences in T vanish inside one interval.
      const Ta = T2 + 0.2 * (T3 - T2);
      const h = 0.01;
      const d2 = surface.totalVariance(Ta + h, k) - 2 * surface.totalVariance(Ta, k) + surface.totalVariance(Ta - h, k);
      expect(Math.abs(d2)).toBeLessThan(1e-15);
    }
  });

  it('extrapolates at constant implied vol before the first and after the last expiry', () => {
    for (const k of ks) {
      const vol1 = Math.sqrt(sviTotalVariance(P1, k) / T1);
      const vol3 = Math.sqrt(sviTotalVariance(P3, k) / T3);
      for (const T of [1 / 365, 3 / 365, T1 / 2]) {
        expect(surface.totalVariance(T, k)).toBeCloseTo((sviTotalVariance(P1, k) * T) / T1, 15);
        expect(surface.impliedVolAtLogMoneyness(T, k)).toBeCloseTo(vol1, 12);
      }
      for (const T of [1, 2.5]) {
        expect(surface.totalVariance(T, k)).toBeCloseTo((sviTotalVariance(P3, k) * T) / T3, 14);
        expect(surface.impliedVolAtLogMoneyness(T, k)).toBeCloseTo(vol3, 12);
      }
      expect(surface.totalVariance(0, k)).toBe(0);
    }
  });

  it('impliedVol(T, K, F) uses k = ln(K/F) with the caller-supplied forward', () => {
    const T = 0.2;
    const F = 102.5;
    for (const K of [60, 95, 102.5, 130]) {
      expect(surface.impliedVol(T, K, F)).toBeCloseTo(Math.sqrt(surface.totalVariance(T, Math.log(K / F)) / T), 15);
    }
    // At a listed expiry and its own forward, the vol is the slice's SVI vol.
    expect(surface.impliedVol(T2, 110, 101)).toBeCloseTo(Math.sqrt(sviTotalVariance(P2, Math.log(110 / 101)) / T2), 15);
    expect(() => surface.impliedVol(0, 100, 100)).toThrow(RangeError);
    expect(() => surface.impliedVol(0.1, -1, 100)).toThrow(RangeError);
    expect(() => surface.impliedVol(0.1, 100, 0)).toThrow(RangeError);
    expect(() => surface.totalVariance(-0.1, 0)).toThrow(RangeError);
  });

  it('accepts total-variance functions as slices', () => {
    const s = new VolSurface([
      { expirationTimestamp: 1, T: 0.1, forward: 1, totalVariance: () => 0.01 },
      { expirationTimestamp: 2, T: 0.3, forward: 1, totalVariance: (k) => 0.03 + 0.01 * k * k },
    ]);
    expect(s.totalVariance(0.2, 1)).toBeCloseTo(0.5 * 0.01 + 0.5 * 0.04, 15);
    expect(s.slices[0]!.params).toBeNull();
  });

  it('rejects bad slices', () => {
    expect(() => new VolSurface([])).toThrow(RangeError);
    expect(() => new VolSurface([{ expirationTimestamp: 1, T: 0, forward: 1, params: P1 }])).toThrow(RangeError);
    expect(() => new VolSurface([{ expirationTimestamp: 1, T: 0.1, forward: Number.NaN, params: P1 }])).toThrow(RangeError);
    expect(() => new VolSurface([{ expirationTimestamp: 1, T: 0.1, forward: 1 }])).toThrow(RangeError);
    expect(
      () =>
        new VolSurface([
          { expirationTimestamp: 1, T: 0.1, forward: 1, params: P1 },
          { expirationTimestamp: 2, T: 0.1, forward: 1, params: P2 },
        ]),
    ).toThrow(RangeError);
  });

  it('calendar check passes increasing total variance and catches a crossing pair', () => {
    expect(surface.calendarArbitrageFree().arbitrageFree).toBe(true);
    // The later slice has lower total variance in the left wing than the earlier one: they cross.
    const early: SviParams = { a: 0.01, b: 0.1, rho: -0.6, m: 0, sigma: 0.1 };
    const late: SviParams = { a: 0.02, b: 0.05, rho: 0.2, m: 0, sigma: 0.1 };
    const crossing = new VolSurface([
      { expirationTimestamp: 10, T: 0.1, forward: 1, params: early },
      { expirationTimestamp: 20, T: 0.2, forward: 1, params: late },
    ]);
    const chk = crossing.calendarArbitrageFree();
    expect(chk.arbitrageFree).toBe(false);
    // w_late(k) - w_early(k) changes sign at the crossing point; every violation is left of it and really decreasing.
    for (const v of chk.violations) {
      expect(v.wLater).toBeLessThan(v.wEarlier);
      expect(v.k).toBeLessThan(0);
      expect(sviTotalVariance(late, v.k)).toBeLessThan(sviTotalVariance(early, v.k));
      expect(v.earlierExpiry).toBe(10);
      expect(v.laterExpiry).toBe(20);
    }
    expect(chk.violations.length).toBeGreaterThan(0);
    // At k = 0 there is no violation: 0.02 + 0.05·0.1 > 0.01 + 0.1·0.1.
    expect(chk.violations.some((v) => v.k === 0)).toBe(false);
    // Consequence: interpolated total variance decreases in T there.
    const k = -1;
    expect(crossing.totalVariance(0.15, k)).toBeLessThan(crossing.totalVariance(0.1, k));
    expect(defaultCalendarGrid()).toHaveLength(241);
  });
});
