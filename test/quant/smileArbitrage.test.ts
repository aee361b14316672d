import { describe, expect, it } from 'vitest';
import { normPdf } from '../../src/quant/normal.js';
import { sabrImpliedVol } from '../../src/quant/sabr.js';
import {
  checkSmileDensity,
  defaultDensityCheckStrikes,
  smileArbitragePenalties,
  smileDensityOnGrid,
} from '../../src/quant/smileArbitrage.js';
import { sviG, sviTotalVariance, type SviParams } from '../../src/quant/svi.js';

const F = 70000;

/** Axel Vogt's arbitrageable raw SVI, Gatheral & Jacquier (2014) sec. 5.1 eq. (5.1), T = 1. */
const VOGT: SviParams = { a: -0.041, b: 0.1331, rho: 0.306, m: 0.3586, sigma: 0.4153 };

describe('checkSmileDensity', () => {
  it('passes a flat smile, and its density equals the lognormal density phi(d2)/(x s)', () => {
    const T = 0.5;
    const sigma = 0.6;
    const chk = checkSmileDensity(() => sigma, F, T);
    expect(chk.arbitrageFree).toBe(true);
    expect(chk.monotone && chk.convex && chk.withinBounds && chk.validVols).toBe(true);
    expect(chk.densityViolations).toBe(0);
    // Independent closed form: the density of x = F_T/F under Black-76 is phi(d2) / (x sigma sqrt T).
    const strikes = defaultDensityCheckStrikes(F, T, sigma);
    const dens = smileDensityOnGrid(() => sigma, F, T, strikes);
    const s = sigma * Math.sqrt(T);
    for (let i = 20; i < dens.length; i += 40) {
      const x = (strikes[i + 1] as number) / F;
      const d2 = -Math.log(x) / s - 0.5 * s;
      const exact = normPdf(d2) / (x * s);
      // The second divided difference on a grid uniform in ln K (geometric in K) is first-order accurate:
      // relative error O(h) with h = 8 s / 400 = 0.02 s in log-strike (measured <= 4.4e-4 here).
      expect(Math.abs((dens[i] as number) / exact - 1)).toBeLessThan(1e-3);
    }
    // The tails of a lognormal density are tiny but never negative beyond round-off.
    expect(chk.minDensity).toBeGreaterThan(-1e-10);
  });

  it('passes a SABR smile with moderate BTC-like parameters', () => {
    const p = { alpha: 0.6, beta: 1, rho: -0.3, nu: 1.5 };
    const chk = checkSmileDensity((K) => sabrImpliedVol(p, F, K, 0.25), F, 0.25);
    expect(chk.arbitrageFree).toBe(true);
    expect(chk.minDensity).toBeGreaterThan(-1e-10);
  });

  it("catches Vogt's arbitrageable SVI converted to iv(K), where Gatheral-Jacquier's g(k) < 0 (k ~ 0.9)", () => {
    const iv = (K: number): number => Math.sqrt(sviTotalVariance(VOGT, Math.log(K / F)));
    const chk = checkSmileDensity(iv, F, 1, { kMin: -1.5, kMax: 2 });
    expect(chk.arbitrageFree).toBe(false);
    expect(chk.convex).toBe(false);
    // k = 0.9 is about 7 ATM standard deviations out (w(0) = 0.0174), where the density is small: the
    // violation (-5.8e-5) is still 500 times the tolerance 1e-7.
    expect(chk.minDensity).toBeLessThan(-1e-5);
    const kAt = Math.log(chk.atStrike / F);
    // GJ 2014 Figure 2: g dips below 0 around k = 0.9 only; the density has the sign of g.
    expect(kAt).toBeGreaterThan(0.6);
    expect(kAt).toBeLessThan(1.2);
    expect(sviG(VOGT, kAt)).toBeLessThan(0);
    // And the density is positive where g is clearly positive.
    const strikes = [0.8, 1, 1.2].map((x) => F * x);
    for (const d of smileDensityOnGrid(iv, F, 1, [strikes[0] as number, strikes[1] as number, strikes[2] as number])) expect(d).toBeGreaterThan(0);
    expect(sviG(VOGT, 0)).toBeGreaterThan(0);
  });

  it('catches a concave kink (a vol peak at the money) and locates it', () => {
    const T = 0.25;
    const iv = (K: number): number => 0.6 - 0.5 * Math.abs(Math.log(K / F));
    const chk = checkSmileDensity(iv, F, T);
    expect(chk.arbitrageFree).toBe(false);
    expect(Math.abs(Math.log(chk.atStrike / F))).toBeLessThan(0.01);
    expect(chk.minDensity).toBeLessThan(-0.1);
  });

  it('passes a convex kink (a V-shaped smile with moderate wings)', () => {
    const iv = (K: number): number => 0.6 + 0.3 * Math.abs(Math.log(K / F));
    expect(checkSmileDensity(iv, F, 0.25).arbitrageFree).toBe(true);
  });

  it('flags call prices that increase with strike (a wing steeper than Lee allows)', () => {
    // w(k) = (0.3 + 4k)^2 grows like 16 k^2: far beyond Lee's 2|k|, so C(K) eventually rises.
    const iv = (K: number): number => 0.3 + 4 * Math.max(Math.log(K / F), 0);
    const chk = checkSmileDensity(iv, F, 1, { kMax: 3 });
    expect(chk.monotone).toBe(false);
    expect(chk.arbitrageFree).toBe(false);
  });

  it('reports invalid vols instead of throwing', () => {
    const chk = checkSmileDensity((K) => (K > 1.5 * F ? Number.NaN : 0.5), F, 1);
    expect(chk.validVols).toBe(false);
    expect(chk.arbitrageFree).toBe(false);
  });

  it('builds the default grid around the forward, widened to the quoted range', () => {
    const g = defaultDensityCheckStrikes(F, 0.01, 0.5, { kMin: -0.8, kMax: 0.6, points: 101 });
    expect(g).toHaveLength(101);
    expect(Math.log((g[0] as number) / F)).toBeCloseTo(-0.8, 12);
    expect(Math.log((g[100] as number) / F)).toBeCloseTo(0.6, 12);
    const chk = checkSmileDensity(() => 0.5, F, 0.01, { kMin: -0.8, kMax: 0.6 });
    expect(chk.grid.kMin).toBeCloseTo(-0.8, 12);
    expect(chk.grid.points).toBe(401);
  });

  it('validates explicit grids and inputs', () => {
    expect(() => checkSmileDensity(() => 0.5, F, 1, { strikes: [1, 2] })).toThrow(RangeError);
    expect(() => checkSmileDensity(() => 0.5, F, 1, { strikes: [1, 3, 2] })).toThrow(RangeError);
    expect(() => checkSmileDensity(() => 0.5, -1, 1)).toThrow(RangeError);
    expect(() => checkSmileDensity(() => 0.5, F, 0)).toThrow(RangeError);
    expect(() => checkSmileDensity(() => Number.NaN, F, 1)).toThrow(RangeError);
  });
});

describe('smileArbitragePenalties', () => {
  it('are zero on a clean smile and positive on an arbitrageable one', () => {
    const strikes = defaultDensityCheckStrikes(F, 1, 0.25, { kMin: -1.5, kMax: 2, points: 121 });
    const clean = smileArbitragePenalties(() => 0.25, F, 1, strikes, 0.25);
    expect(clean).toHaveLength(121 - 2 + 120);
    expect(Math.max(...clean)).toBeLessThanOrEqual(1e-6);
    const vogt = smileArbitragePenalties((K) => Math.sqrt(sviTotalVariance(VOGT, Math.log(K / F))), F, 1, strikes, 0.25);
    expect(Math.max(...vogt)).toBeGreaterThan(1e-5);
  });
});
