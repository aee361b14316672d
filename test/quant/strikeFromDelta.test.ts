import { describe, expect, it } from 'vitest';
import { d1d2 } from '../../src/quant/black76.js';
import { normCdf } from '../../src/quant/normal.js';
import { strikeFromDelta, strikeFromDeltaFlat } from '../../src/quant/strikeFromDelta.js';

const callDelta = (F: number, K: number, T: number, sigma: number): number => normCdf(d1d2(F, K, T, sigma).d1);
const DELTAS = [0.02, 0.05, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.95, 0.98];

describe('strikeFromDeltaFlat (closed form)', () => {
  it('round-trips: the plain forward Black call delta at the returned strike is the target', () => {
    for (const [F, T, sigma] of [
      [30000, 7 / 365, 0.6],
      [2000, 0.5, 0.9],
      [150, 2, 1.4],
    ] as const) {
      for (const d of DELTAS) {
        const K = strikeFromDeltaFlat(d, F, T, sigma);
        expect(Math.abs(callDelta(F, K, T, sigma) - d)).toBeLessThan(1e-14);
      }
    }
  });

  it('puts 0.25 above the forward and 0.75 below it; 0.5 at the delta-neutral strike F e^{s^2/2}', () => {
    const F = 30000;
    const T = 0.25;
    const sigma = 0.7;
    expect(strikeFromDeltaFlat(0.25, F, T, sigma)).toBeGreaterThan(F);
    expect(strikeFromDeltaFlat(0.75, F, T, sigma)).toBeLessThan(F);
    // 0.75 call delta = -0.25 put delta.
    const Kp = strikeFromDeltaFlat(0.75, F, T, sigma);
    expect(callDelta(F, Kp, T, sigma) - 1).toBeCloseTo(-0.25, 14);
    expect(strikeFromDeltaFlat(0.5, F, T, sigma)).toBeCloseTo(F * Math.exp(0.5 * sigma * sigma * T), 8);
  });

  it('rejects deltas outside (0, 1) and bad inputs', () => {
    for (const d of [0, 1, -0.1, 1.2, Number.NaN]) expect(() => strikeFromDeltaFlat(d, 100, 1, 0.5)).toThrow(RangeError);
    expect(() => strikeFromDeltaFlat(0.25, 100, 0, 0.5)).toThrow(RangeError);
    expect(() => strikeFromDeltaFlat(0.25, 100, 1, 0)).toThrow(RangeError);
  });
});

describe('strikeFromDelta (smile-consistent, Brent on log-strike)', () => {
  it('agrees with the closed form for a flat smile', () => {
    for (const d of DELTAS) {
      const a = strikeFromDelta(d, 30000, 0.1, () => 0.65);
      const b = strikeFromDeltaFlat(d, 30000, 0.1, 0.65);
      expect(Math.abs(a / b - 1)).toBeLessThan(1e-13);
    }
  });

  it('solves N(d1(K, vol(K))) = target on a skewed smile, and differs from the flat-ATM answer', () => {
    const F = 2000;
    const T = 30 / 365;
    // Put skew with curvature: vol(k) = 0.8 - 0.25 k + 0.6 k^2, k = ln(K/F).
    const volAt = (K: number): number => {
      const k = Math.log(K / F);
      return 0.8 - 0.25 * k + 0.6 * k * k;
    };
    for (const d of DELTAS) {
      const K = strikeFromDelta(d, F, T, volAt);
      expect(Math.abs(callDelta(F, K, T, volAt(K)) - d)).toBeLessThan(1e-13);
    }
    const K25c = strikeFromDelta(0.25, F, T, volAt);
    const K25p = strikeFromDelta(0.75, F, T, volAt);
    expect(K25c).toBeGreaterThan(F);
    expect(K25p).toBeLessThan(F);
    expect(Math.abs(K25p / strikeFromDeltaFlat(0.75, F, T, 0.8) - 1)).toBeGreaterThan(1e-3);
  });

  it('works with a steep wing smile at a short expiry (1 day)', () => {
    const F = 60000;
    const T = 1 / 365;
    const volAt = (K: number): number => {
      const k = Math.log(K / F);
      return Math.sqrt((0.0004 + 0.02 * (Math.sqrt(k * k + 0.0001) - 0.3 * k)) / T);
    };
    for (const d of [0.02, 0.1, 0.5, 0.9, 0.98]) {
      const K = strikeFromDelta(d, F, T, volAt);
      expect(Math.abs(callDelta(F, K, T, volAt(K)) - d)).toBeLessThan(1e-13);
    }
  });

  it('throws RangeError when no strike has the delta (wing total variance 2|k|, the Lee bound)', () => {
    const T = 0.5;
    // w(k) = 2|k| + 0.01 keeps d1 > 0, so N(d1) > 1/2 at every strike.
    const volAt = (K: number): number => Math.sqrt((2 * Math.abs(Math.log(K / 100)) + 0.01) / T);
    expect(() => strikeFromDelta(0.25, 100, T, volAt)).toThrow(/no strike/);
    expect(strikeFromDelta(0.75, 100, T, volAt)).toBeGreaterThan(0); // the call side is reachable
  });

  it('rejects bad deltas and bad volatilities', () => {
    expect(() => strikeFromDelta(1, 100, 1, () => 0.5)).toThrow(RangeError);
    expect(() => strikeFromDelta(0.25, 100, 1, () => Number.NaN)).toThrow(RangeError);
    expect(() => strikeFromDelta(0.25, 100, 1, () => -0.1)).toThrow(RangeError);
  });
});
