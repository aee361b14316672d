import { describe, expect, it } from 'vitest';
import stdlibErfc from '@stdlib/math-base-special-erfc';
import stdlibNormalCdf from '@stdlib/stats-base-dists-normal-cdf';
import { erfc, normCdf, normInv, normPdf } from '../../src/quant/normal.js';
import { mulberry32 } from '../../adapters/simulator/rng.js';

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

  it('erfc and the cdf are bit-identical to the @stdlib implementations (the reference they replace) on every interval', () => {
    // the interval edges of fdlibm's s_erf.c and their neighbours, the special values, then 2,000,000 random
    // arguments: uniform on [-40, 40], log-uniform magnitudes from 1e-20 to 40 with both signs
    const edges = [0, -0, 1e-300, 2 ** -56, 0.25, 0.84375, 1.25, 1 / 0.35, 2.857142857142857, 6, 28, 27.999999999999996, 40];
    const args: number[] = [Number.NaN, Infinity, -Infinity];
    for (const e of edges) for (const d of [0, Number.EPSILON, -Number.EPSILON]) for (const sg of [1, -1]) args.push(sg * e * (1 + d));
    const rnd = mulberry32(20261128);
    for (let i = 0; i < 1_000_000; i++) args.push(80 * rnd() - 40);
    for (let i = 0; i < 1_000_000; i++) args.push((rnd() < 0.5 ? -1 : 1) * 10 ** (-20 + 21.6 * rnd()));
    let erfcDiffs = 0;
    let cdfDiffs = 0;
    let first = '';
    for (const x of args) {
      const a = erfc(x);
      const b = stdlibErfc(x);
      if (!Object.is(a, b)) {
        erfcDiffs++;
        first ||= `erfc(${x}) = ${a}, stdlib ${b}`;
      }
      const c = normCdf(x);
      const d = stdlibNormalCdf(x, 0, 1);
      if (!Object.is(c, d)) {
        cdfDiffs++;
        first ||= `normCdf(${x}) = ${c}, stdlib ${d}`;
      }
    }
    expect(first).toBe('');
    expect(erfcDiffs).toBe(0);
    expect(cdfDiffs).toBe(0);
    expect(erfc(Number.NaN)).toBeNaN();
    expect(erfc(-Infinity)).toBe(2);
    expect(erfc(Infinity)).toBe(0);
    expect(normCdf(Number.NaN)).toBeNaN();
  });
});
