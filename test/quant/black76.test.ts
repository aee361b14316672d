import { describe, expect, it } from 'vitest';
import { black76Greeks, black76Price, d1d2, intrinsicValue, type OptionType } from '../../src/quant/black76.js';
import { normCdf } from '../../src/quant/normal.js';

const TYPES: OptionType[] = ['C', 'P'];

describe('Black-76 price', () => {
  it('reproduces Haug (2007) Black-76 example: F=19, K=19, T=0.75, r=0.10, sigma=0.28, put 1.7011', () => {
    const r = 0.1;
    const T = 0.75;
    const put = black76Price(19, 19, T, 0.28, 'P') * Math.exp(-r * T);
    expect(Math.abs(put - 1.7011)).toBeLessThan(5e-5); // published to 4 dp
    // At the money forward: call = put.
    expect(black76Price(19, 19, T, 0.28, 'C')).toBeCloseTo(black76Price(19, 19, T, 0.28, 'P'), 14);
  });

  it('matches the at-the-money closed form F (2 N(s/2) - 1)', () => {
    const F = 30000;
    const s = 0.8 * Math.sqrt(0.1);
    expect(black76Price(F, F, 0.1, 0.8, 'C')).toBeCloseTo(F * (2 * normCdf(0.5 * s) - 1), 9);
  });

  it('satisfies put-call parity C - P = F - K (r = 0) on a grid', () => {
    for (const K of [10, 50, 90, 100, 110, 200, 1000]) {
      for (const T of [1 / 365, 0.1, 1, 4]) {
        for (const sigma of [0.05, 0.5, 1.5]) {
          const c = black76Price(100, K, T, sigma, 'C');
          const p = black76Price(100, K, T, sigma, 'P');
          expect(Math.abs(c - p - (100 - K))).toBeLessThan(1e-12 * Math.max(100, K));
        }
      }
    }
  });

  it('respects the no-arbitrage bounds: intrinsic <= call < F, intrinsic <= put < K', () => {
    for (const K of [50, 100, 150]) {
      for (const sigma of [0.01, 0.3, 3]) {
        const c = black76Price(100, K, 0.5, sigma, 'C');
        const p = black76Price(100, K, 0.5, sigma, 'P');
        expect(c).toBeGreaterThanOrEqual(Math.max(100 - K, 0));
        expect(c).toBeLessThan(100);
        expect(p).toBeGreaterThanOrEqual(Math.max(K - 100, 0));
        expect(p).toBeLessThan(K);
      }
    }
  });

  it('degenerates to intrinsic value for T <= 0 or sigma <= 0, without NaN', () => {
    expect(black76Price(100, 90, 0, 0.5, 'C')).toBe(10);
    expect(black76Price(100, 90, -1, 0.5, 'P')).toBe(0);
    expect(black76Price(100, 110, 1, 0, 'P')).toBe(10);
    expect(black76Price(100, 110, 1, -0.2, 'C')).toBe(0);
    expect(intrinsicValue(100, 110, 'P')).toBe(10);
    expect(d1d2(100, 90, 0, 0.5)).toEqual({ d1: Infinity, d2: Infinity });
    expect(d1d2(100, 100, 0, 0.5)).toEqual({ d1: 0, d2: 0 });
  });

  it('rejects non-positive forward or strike and NaN inputs', () => {
    expect(() => black76Price(0, 100, 1, 0.5, 'C')).toThrow(RangeError);
    expect(() => black76Price(100, -1, 1, 0.5, 'C')).toThrow(RangeError);
    expect(() => black76Price(100, 100, Number.NaN, 0.5, 'C')).toThrow(RangeError);
    expect(() => black76Price(100, 100, 1, Number.NaN, 'C')).toThrow(RangeError);
  });
});

describe('Black-76 Greeks against central finite differences of the price', () => {
  const cases: Array<[number, number, number, number]> = [
    // F, K, T, sigma
    [100, 100, 0.5, 0.6],
    [30000, 36000, 0.08, 0.75],
    [2000, 1500, 1.2, 0.9],
    [100, 70, 0.02, 1.2],
    [100, 130, 2, 0.3],
  ];
  const P = (F: number, K: number, T: number, s: number, t: OptionType): number => black76Price(F, K, T, s, t);

  for (const [F, K, T, sigma] of cases) {
    for (const t of TYPES) {
      it(`F=${F} K=${K} T=${T} sigma=${sigma} ${t}`, () => {
        const g = black76Greeks(F, K, T, sigma, t);
        const hF = 1e-4 * F;
        const hS = 1e-4;
        const hT = 1e-5;
        const hK = 1e-4 * K;
        const scale = F; // price scale for absolute tolerances
        expect(g.price).toBe(P(F, K, T, sigma, t));
        const hD = 1e-5 * F; // smaller step for first derivatives: truncation h^2 V'''/6 ~ 1e-11
        const fdDelta = (P(F + hD, K, T, sigma, t) - P(F - hD, K, T, sigma, t)) / (2 * hD);
        expect(g.delta).toBeCloseTo(fdDelta, 8);
        const fdGamma = (P(F + hF, K, T, sigma, t) - 2 * g.price + P(F - hF, K, T, sigma, t)) / (hF * hF);
        expect(Math.abs(g.gamma - fdGamma)).toBeLessThan(1e-5 * Math.abs(g.gamma) + 1e-9 / F);
        const fdVega = (P(F, K, T, sigma + hS, t) - P(F, K, T, sigma - hS, t)) / (2 * hS);
        expect(Math.abs(g.vega - fdVega)).toBeLessThan(1e-7 * scale);
        const fdVolga = (P(F, K, T, sigma + hS, t) - 2 * g.price + P(F, K, T, sigma - hS, t)) / (hS * hS);
        expect(Math.abs(g.volga - fdVolga)).toBeLessThan(1e-5 * Math.abs(g.volga) + 1e-4 * scale * 1e-2);
        const fdVanna =
          (P(F + hF, K, T, sigma + hS, t) - P(F + hF, K, T, sigma - hS, t) - P(F - hF, K, T, sigma + hS, t) + P(F - hF, K, T, sigma - hS, t)) /
          (4 * hF * hS);
        expect(Math.abs(g.vanna - fdVanna)).toBeLessThan(1e-5 * Math.abs(g.vanna) + 1e-6);
        const fdTheta = -(P(F, K, T + hT, sigma, t) - P(F, K, T - hT, sigma, t)) / (2 * hT);
        expect(Math.abs(g.theta - fdTheta)).toBeLessThan(1e-6 * Math.abs(g.theta) + 1e-8 * scale);
        const hDK = 1e-5 * K;
        const fdDualDelta = (P(F, K + hDK, T, sigma, t) - P(F, K - hDK, T, sigma, t)) / (2 * hDK);
        expect(g.dualDelta).toBeCloseTo(fdDualDelta, 8);
        const fdDualGamma = (P(F, K + hK, T, sigma, t) - 2 * g.price + P(F, K - hK, T, sigma, t)) / (hK * hK);
        expect(Math.abs(g.dualGamma - fdDualGamma)).toBeLessThan(1e-5 * Math.abs(g.dualGamma) + 1e-9 / K);
      });
    }
  }

  it('put and call share gamma, vega, volga, vanna, theta; deltas differ by 1', () => {
    const c = black76Greeks(100, 120, 0.3, 0.7, 'C');
    const p = black76Greeks(100, 120, 0.3, 0.7, 'P');
    expect(c.delta - p.delta).toBeCloseTo(1, 15);
    for (const k of ['gamma', 'vega', 'volga', 'vanna', 'theta'] as const) expect(c[k]).toBeCloseTo(p[k], 12);
    expect(p.dualDelta - c.dualDelta).toBeCloseTo(1, 15);
  });

  it('degenerate Greeks: intrinsic price, step delta, zeros elsewhere, never NaN', () => {
    const itm = black76Greeks(100, 90, 0, 0.5, 'C');
    expect(itm).toEqual({ price: 10, delta: 1, gamma: 0, vega: 0, volga: 0, vanna: 0, theta: 0, dualDelta: -1, dualGamma: 0 });
    expect(black76Greeks(100, 110, 1, 0, 'C').delta).toBe(0);
    expect(black76Greeks(100, 110, 1, 0, 'P').delta).toBe(-1);
    expect(black76Greeks(100, 100, 0, 0.5, 'C').delta).toBe(0.5);
    // Tiny positive total variance and huge volatility: finite numbers only.
    for (const [T, s] of [
      [1e-12, 1e-6],
      [10, 50],
    ] as const) {
      for (const t of TYPES) {
        const g = black76Greeks(100, 80, T, s, t);
        for (const v of Object.values(g)) expect(Number.isFinite(v)).toBe(true);
      }
    }
  });
});
