import { describe, expect, it } from 'vitest';
import { normCdf, normInv, normPdf } from '../../src/quant/normal.js';

// Reference values: Abramowitz and Stegun (1964) table 26.1 and 26.2.2; quantiles as tabulated in
// Acklam's note and standard tables (Phi^-1(0.975) = 1.959963984540054, Phi^-1(1e-10) = -6.361340902404056).
describe('normal distribution', () => {
  it('pdf matches phi(x) = exp(-x^2/2)/sqrt(2 pi)', () => {
    expect(normPdf(0)).toBeCloseTo(0.3989422804014327, 15);
    expect(normPdf(1)).toBeCloseTo(0.24197072451914337, 15);
    expect(normPdf(-2)).toBeCloseTo(0.05399096651318806, 15);
    expect(normPdf(40)).toBe(0);
  });

  it('cdf matches tabulated values, including the far lower tail (relative accuracy)', () => {
    expect(normCdf(0)).toBe(0.5);
    expect(normCdf(1.96)).toBeCloseTo(0.9750021048517795, 15);
    expect(normCdf(-1)).toBeCloseTo(0.15865525393145707, 15);
    const tail: Array<[number, number]> = [
      [-8, 6.22096057427178e-16],
      [-10, 7.619853024160527e-24],
      [-20, 2.7536241186062337e-89],
    ];
    for (const [x, p] of tail) expect(Math.abs(normCdf(x) / p - 1)).toBeLessThan(1e-12);
    expect(normCdf(-Infinity)).toBe(0);
    expect(normCdf(Infinity)).toBe(1);
  });

  it('inverse cdf matches reference quantiles', () => {
    expect(normInv(0.5)).toBe(0);
    expect(normInv(0.975)).toBeCloseTo(1.959963984540054, 14);
    expect(normInv(0.025)).toBeCloseTo(-1.959963984540054, 14);
    expect(normInv(0.8413447460685429)).toBeCloseTo(1, 14);
    expect(normInv(1e-10)).toBeCloseTo(-6.361340902404056, 13);
    expect(normInv(0)).toBe(-Infinity);
    expect(normInv(1)).toBe(Infinity);
  });

  it('inverse cdf round-trips Phi(Phi^-1(p)) = p from 1e-300 to 1 - 1e-16', () => {
    // Tolerance: the cdf's own relative error (stdlib: <= 1.2e-13 down to x = -30) plus the conditioning
    // of the tail, d(ln Phi)/dx ~ |x|, times a few ulps of x: 1.5e-13 + 4 eps x^2.
    let worstRatio = 0;
    for (let e = -300; e <= -1; e += 1) {
      for (const m of [1, 2.5, 5]) {
        const p = m * 10 ** e;
        if (p > 0.5) continue;
        const x = normInv(p);
        const tol = 1.5e-13 + 4 * Number.EPSILON * x * x;
        worstRatio = Math.max(worstRatio, Math.abs(normCdf(x) / p - 1) / tol);
      }
    }
    expect(worstRatio).toBeLessThan(1);
    let worstCentral = 0;
    for (let p = 0.001; p < 0.999; p += 0.001) {
      worstCentral = Math.max(worstCentral, Math.abs(normCdf(normInv(p)) - p));
    }
    expect(worstCentral).toBeLessThan(3e-16);
    // Upper tail by symmetry: Phi^-1(1 - q) = -Phi^-1(q) with 1 - q exact.
    for (const q of [1e-3, 1e-8, 1e-15]) expect(normInv(1 - q)).toBeCloseTo(-normInv(1 - (1 - q)), 12);
  });

  it('inverse cdf rejects probabilities outside [0, 1]', () => {
    expect(() => normInv(-0.1)).toThrow(RangeError);
    expect(() => normInv(1.5)).toThrow(RangeError);
    expect(() => normInv(Number.NaN)).toThrow(RangeError);
  });
});
