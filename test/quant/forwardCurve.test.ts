import { describe, expect, it } from 'vitest';
import { CONST_MAT_DAYS, ForwardCurve } from '../../src/quant/forwardCurve.js';

const DAY = 86400;
const OBS = Date.UTC(2026, 4, 26, 19, 27, 44) / 1000;
const S = 75792.67;
// Deribit BTC forwards (underlying_price) of 2026-05-26 19:27:44 UTC (MaksM05 snapshot, recorded).
const listed = [
  { exp: Date.UTC(2026, 4, 27, 8) / 1000, F: 75797.57 },
  { exp: Date.UTC(2026, 5, 26, 8) / 1000, F: 75957.4 },
  { exp: Date.UTC(2026, 8, 25, 8) / 1000, F: 76464.52 },
  { exp: Date.UTC(2026, 11, 25, 8) / 1000, F: 77197.44 },
  { exp: Date.UTC(2027, 2, 26, 8) / 1000, F: 77886.64 },
].map((p) => ({ expirationTimestamp: p.exp, T: (p.exp - OBS) / (365 * DAY), forward: p.F }));
const curve = new ForwardCurve(S, [...listed].reverse());

describe('ForwardCurve', () => {
  it('is exact at the listed points and F(0) = S', () => {
    for (const p of listed) expect(curve.forward(p.T)).toBeCloseTo(p.forward, 8);
    expect(curve.forward(0)).toBe(S);
    expect(curve.points.map((p) => p.T)).toEqual(listed.map((p) => p.T));
  });

  it('fixedYields are the simple annualized basis (F/S - 1)/T (decisions.md)', () => {
    const fy = curve.fixedYields();
    expect(fy).toHaveLength(listed.length);
    fy.forEach((y, i) => {
      const p = listed[i]!;
      expect(y.expirationTimestamp).toBe(p.expirationTimestamp);
      expect(y.value).toBeCloseTo((p.forward / S - 1) / p.T, 14);
    });
    // Hand check of the 26MAR27 point: T = 303.526 days / 365; (77886.64/75792.67 - 1)/T ≈ 3.32 % per year.
    expect(fy[4]!.value).toBeCloseTo(0.0332, 3);
  });

  it('interpolates the yield linearly in T between points, flat outside', () => {
    const a = listed[1]!;
    const b = listed[2]!;
    const ya = (a.forward / S - 1) / a.T;
    const yb = (b.forward / S - 1) / b.T;
    for (const f of [0.2, 0.5, 0.7]) {
      const T = a.T + f * (b.T - a.T);
      expect(curve.yieldAt(T)).toBeCloseTo(ya + f * (yb - ya), 14);
      expect(curve.forward(T)).toBeCloseTo(S * (1 + (ya + f * (yb - ya)) * T), 8);
    }
    const y0 = (listed[0]!.forward / S - 1) / listed[0]!.T;
    const yN = (listed[4]!.forward / S - 1) / listed[4]!.T;
    expect(curve.yieldAt(0)).toBe(y0);
    expect(curve.yieldAt(listed[0]!.T / 3)).toBe(y0);
    expect(curve.forward(2)).toBeCloseTo(S * (1 + yN * 2), 8);
    expect(curve.yieldAt(5)).toBe(yN);
  });

  it('constant maturities: table, timestamps obs + days·86400, values read off the curve', () => {
    expect(Object.keys(CONST_MAT_DAYS)).toEqual(['1D', '1W', '2W', '1M', '2M', '3M', '6M', '9M', '12M']);
    for (const n of [1, 2, 3, 6, 9, 12]) expect(CONST_MAT_DAYS[`${n}M` as keyof typeof CONST_MAT_DAYS]).toBe(Math.round((n * 365) / 12));
    expect([CONST_MAT_DAYS['1D'], CONST_MAT_DAYS['1W'], CONST_MAT_DAYS['2W']]).toEqual([1, 7, 14]);
    expect(Object.values(CONST_MAT_DAYS)).toEqual([1, 7, 14, 30, 61, 91, 183, 274, 365]);
    const cm = curve.constMatYields(OBS);
    expect(cm.map((c) => c.constMat)).toEqual(Object.keys(CONST_MAT_DAYS));
    for (const c of cm) {
      const days = CONST_MAT_DAYS[c.constMat];
      expect(c.expirationTimestamp).toBe(OBS + days * DAY);
      expect(c.value).toBeCloseTo(curve.yieldAt(days / 365), 15);
    }
    // 12M lies beyond the last listed expiry (303.5 days): flat at the last yield.
    expect(cm[8]!.value).toBe(curve.fixedYields()[4]!.value);
  });

  it('an empty curve has zero basis; bad input is rejected', () => {
    const flat = new ForwardCurve(100, []);
    expect(flat.forward(1)).toBe(100);
    expect(flat.fixedYields()).toEqual([]);
    expect(flat.constMatYields(0).every((c) => c.value === 0)).toBe(true);
    expect(() => new ForwardCurve(0, [])).toThrow(RangeError);
    expect(() => new ForwardCurve(100, [{ expirationTimestamp: 1, T: 0, forward: 100 }])).toThrow(RangeError);
    expect(() => new ForwardCurve(100, [{ expirationTimestamp: 1, T: 0.1, forward: -1 }])).toThrow(RangeError);
    expect(
      () =>
        new ForwardCurve(100, [
          { expirationTimestamp: 1, T: 0.1, forward: 101 },
          { expirationTimestamp: 2, T: 0.1, forward: 102 },
        ]),
    ).toThrow(RangeError);
    expect(() => curve.forward(-1)).toThrow(RangeError);
    expect(Object.isFrozen(curve)).toBe(true);
  });
});
