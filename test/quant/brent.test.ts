import { describe, expect, it } from 'vitest';
import { brentRoot } from '../../src/quant/brent.js';

describe('brentRoot (Brent 1973)', () => {
  it('finds the root of Wallis cubic x^3 - 2x - 5 to full precision', () => {
    const r = brentRoot((x) => x * x * x - 2 * x - 5, 2, 3);
    expect(r.root).toBeCloseTo(2.0945514815423265, 15);
    expect(r.iterations).toBeLessThan(15); // superlinear, not bisection (which needs ~52)
  });

  it('finds the fixed point of cos (Dottie number) with a reversed bracket', () => {
    const r = brentRoot((x) => Math.cos(x) - x, 1, 0);
    expect(r.root).toBeCloseTo(0.7390851332151607, 15);
  });

  it('honours an absolute tolerance', () => {
    const r = brentRoot((x) => Math.exp(x) - 2, 0, 5, { xTolerance: 1e-6 });
    expect(Math.abs(r.root - Math.LN2)).toBeLessThan(1e-6);
  });

  it('converges on a root at exactly 0 and on a discontinuity (falls back to bisection)', () => {
    expect(Math.abs(brentRoot((x) => x, -1, 2).root)).toBeLessThan(1e-290);
    const step = brentRoot((x) => (x < 1 / 3 ? -1 : 1), 0, 1);
    expect(step.root).toBeCloseTo(1 / 3, 15);
  });

  it('returns an end point that is already a root, and uses supplied f values', () => {
    let calls = 0;
    const f = (x: number): number => {
      calls++;
      return x - 1;
    };
    expect(brentRoot(f, 1, 3).root).toBe(1);
    calls = 0;
    brentRoot(f, 0, 3, { fa: -1, fb: 2 });
    expect(calls).toBeGreaterThan(0);
    expect(calls).toBeLessThan(10);
  });

  it('throws RangeError when the end points do not bracket a root', () => {
    expect(() => brentRoot((x) => x * x + 1, -1, 1)).toThrow(RangeError);
    expect(() => brentRoot(() => Number.NaN, -1, 1)).toThrow(RangeError);
  });
});
