import { describe, expect, it } from 'vitest';
import { black76Price } from '../../src/quant/black76.js';
import {
  butterflyArbitrageFree,
  butterflyG,
  defaultSviCheckGrid,
  sviFirstDerivative,
  sviG,
  sviImpliedVol,
  sviMinTotalVariance,
  sviParamViolations,
  sviSatisfiesLeeBound,
  sviSecondDerivative,
  sviTotalVariance,
  type SviParams,
} from '../../src/quant/svi.js';

/** Axel Vogt's example, Gatheral & Jacquier (2014) sec. 5.1 eq. (5.1), T = 1: has butterfly arbitrage. */
const VOGT: SviParams = { a: -0.041, b: 0.1331, rho: 0.306, m: 0.3586, sigma: 0.4153 };
/** A clean BTC-like 3-month smile (a 5-parameter fit of the recorded Deribit 25SEP26 expiry, rounded). */
const CLEAN: SviParams = { a: -0.0838, b: 0.1955, rho: -0.2972, m: -0.0625, sigma: 0.6965 };

/**
 * Undiscounted Black call price on F = 1 at log-moneyness k, with total variance w (sigma sqrt(T) = sqrt(w), T = 1).
 * The risk-neutral density of k is d^2C/dK^2 (Breeden-Litzenberger 1978); it is >= 0 iff g >= 0.
 */
function callPrice(p: SviParams, k: number): number {
  return black76Price(1, Math.exp(k), 1, Math.sqrt(sviTotalVariance(p, k)), 'C');
}
function densityByFiniteDifference(p: SviParams, k: number): number {
  const h = 1e-3;
  const K = Math.exp(k);
  const c = (x: number) => callPrice(p, Math.log(x));
  return (c(K + h) - 2 * c(K) + c(K - h)) / (h * h);
}

describe('raw SVI total variance and derivatives', () => {
  it('evaluates the raw SVI formula (Gatheral-Jacquier 2014 eq. 3.1) at hand-computed points', () => {
    // k = m: w = a + b sigma
    expect(sviTotalVariance(VOGT, VOGT.m)).toBeCloseTo(-0.041 + 0.1331 * 0.4153, 15);
    // k = 0: w = a + b(rho(-m) + sqrt(m^2 + sigma^2))
    const expected = -0.041 + 0.1331 * (0.306 * -0.3586 + Math.sqrt(0.3586 ** 2 + 0.4153 ** 2));
    expect(sviTotalVariance(VOGT, 0)).toBeCloseTo(expected, 15);
  });

  it('first and second derivatives match central finite differences', () => {
    for (const p of [VOGT, CLEAN]) {
      for (const k of [-1.5, -0.4, -0.05, 0, 0.1, 0.37, 1.2]) {
        const h = 1e-5;
        const d1 = (sviTotalVariance(p, k + h) - sviTotalVariance(p, k - h)) / (2 * h);
        const d2 = (sviTotalVariance(p, k + h) - 2 * sviTotalVariance(p, k) + sviTotalVariance(p, k - h)) / (h * h);
        expect(sviFirstDerivative(p, k)).toBeCloseTo(d1, 9);
        expect(Math.abs(sviSecondDerivative(p, k) - d2)).toBeLessThan(2e-5);
      }
    }
  });

  it('implied vol is sqrt(w/T) and rejects T <= 0', () => {
    expect(sviImpliedVol(CLEAN, 0.1, 0.25)).toBeCloseTo(Math.sqrt(sviTotalVariance(CLEAN, 0.1) / 0.25), 15);
    expect(() => sviImpliedVol(CLEAN, 0, 0)).toThrow(RangeError);
  });

  it('minimum total variance a + b sigma sqrt(1-rho^2) is the minimum over a fine grid', () => {
    let min = Infinity;
    for (let k = -3; k <= 3; k += 1e-4) min = Math.min(min, sviTotalVariance(VOGT, k));
    expect(sviMinTotalVariance(VOGT)).toBeCloseTo(min, 8);
    expect(sviMinTotalVariance(VOGT)).toBeGreaterThan(0);
  });
});

describe('Gatheral-Jacquier butterfly function g(k)', () => {
  it('equals the formula (1 - k w\'/(2w))^2 - w\'^2/4 (1/w + 1/4) + w\'\'/2 written out by hand', () => {
    const k = 0.3;
    const w = 0.04;
    const w1 = 0.1;
    const w2 = 0.2;
    const expected = (1 - (0.3 * 0.1) / 0.08) ** 2 - (0.01 / 4) * (25 + 0.25) + 0.1;
    expect(butterflyG(k, w, w1, w2)).toBeCloseTo(expected, 15);
    expect(butterflyG(k, 0, w1, w2)).toBe(Number.NEGATIVE_INFINITY);
  });

  it("catches Axel Vogt's arbitrageable SVI (Gatheral-Jacquier 2014 eq. 5.1): g < 0 near k = 0.9", () => {
    const chk = butterflyArbitrageFree(VOGT);
    expect(chk.arbitrageFree).toBe(false);
    expect(chk.minG).toBeLessThan(-0.03);
    // GJ 2014 Figure 2 shows g dipping below 0 around k ≈ 0.9 only.
    expect(chk.kAtMinG).toBeGreaterThan(0.7);
    expect(chk.kAtMinG).toBeLessThan(1.1);
    for (const k of chk.violations) {
      expect(k).toBeGreaterThan(0.5);
      expect(k).toBeLessThan(1.4);
    }
  });

  it('the sign of g agrees with the Breeden-Litzenberger density of Black call prices (independent check)', () => {
    // Negative density where g < 0, positive where g > 0 (density = g · phi(d2)/sqrt(w) / K).
    expect(sviG(VOGT, 0.9)).toBeLessThan(0);
    expect(densityByFiniteDifference(VOGT, 0.9)).toBeLessThan(0);
    for (const k of [-1, -0.5, 0, 0.3, 1.6]) {
      expect(sviG(VOGT, k)).toBeGreaterThan(0);
      expect(densityByFiniteDifference(VOGT, k)).toBeGreaterThan(0);
    }
    // Exact relation (Gatheral-Jacquier 2014 eq. 2.1): p(k) = g(k)/sqrt(2 pi w) exp(-d_-^2/2), and the density
    // in strike is p(k)/K. Compare at a few points.
    for (const k of [-0.5, 0.2, 0.9]) {
      const w = sviTotalVariance(VOGT, k);
      const dm = -k / Math.sqrt(w) - Math.sqrt(w) / 2;
      const pk = (sviG(VOGT, k) / Math.sqrt(2 * Math.PI * w)) * Math.exp(-0.5 * dm * dm);
      expect(densityByFiniteDifference(VOGT, k)).toBeCloseTo(pk / Math.exp(k), 4);
    }
  });

  it('passes a clean smile on the default grid and on an explicit grid', () => {
    const chk = butterflyArbitrageFree(CLEAN);
    expect(chk.arbitrageFree).toBe(true);
    expect(chk.minG).toBeGreaterThan(0);
    expect(chk.violations).toHaveLength(0);
    expect(butterflyArbitrageFree(CLEAN, [-1, 0, 1]).arbitrageFree).toBe(true);
  });

  it('the default grid is sorted and resolves narrow smiles around m', () => {
    const p: SviParams = { a: 0.0001, b: 0.004, rho: -0.4, m: 0.001, sigma: 0.003 };
    const g = defaultSviCheckGrid(p);
    for (let i = 1; i < g.length; i++) expect(g[i]!).toBeGreaterThanOrEqual(g[i - 1]!);
    expect(g.filter((k) => Math.abs(k - p.m) < 5 * p.sigma).length).toBeGreaterThan(50);
    expect(g[0]).toBe(-3);
    expect(g[g.length - 1]).toBe(3);
  });
});

describe('parameter constraints', () => {
  it('Lee moment bound b(1+|rho|) <= 2 (Lee 2004)', () => {
    expect(sviSatisfiesLeeBound({ ...CLEAN, b: 1.5, rho: 0.3 })).toBe(true); // 1.95
    expect(sviSatisfiesLeeBound({ ...CLEAN, b: 1.6, rho: -0.3 })).toBe(false); // 2.08
    const bad = { ...CLEAN, b: 1.6, rho: -0.3 };
    expect(butterflyArbitrageFree(bad).arbitrageFree).toBe(false);
    // Wing limit of g: 1/4 - b^2 (1 - rho)^2 / 16 < 0 when the left wing slope b(1 - rho) > 2.
    expect(sviG(bad, -200)).toBeLessThan(0);
  });

  it('lists violated conditions', () => {
    expect(sviParamViolations(CLEAN)).toEqual([]);
    expect(sviParamViolations({ ...CLEAN, b: -0.1 })).toContain('b < 0');
    expect(sviParamViolations({ ...CLEAN, rho: 1 })).toContain('|rho| >= 1');
    expect(sviParamViolations({ ...CLEAN, sigma: 0 })).toContain('sigma <= 0');
    expect(sviParamViolations({ ...CLEAN, a: -1 })).toContain('w < 0 somewhere (a < -b sigma sqrt(1-rho^2))');
    expect(sviParamViolations({ ...CLEAN, a: Number.NaN })).toEqual(['a not finite']);
  });
});
