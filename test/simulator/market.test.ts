/**
 * The exchange-neutral market engine: determinism, realistic levels, static-arbitrage freedom of
 * the smiles over many steps (Gatheral-Jacquier's g(k) computed HERE by finite differences, and
 * calendar monotonicity of total variance), forward curve and funding history.
 */
import { describe, expect, it } from 'vitest';
import { Market, UNDERLYINGS, type MarketOptions, type Underlying } from '../../adapters/simulator/market.js';
import { refBlack76 } from './helpers.js';

const START = Date.UTC(2026, 4, 26, 19, 27, 44);
const DAY = 86_400_000;

/** A market on a manual clock; `advance(s)` moves the clock and steps the market. */
function manual(seed: number, params?: MarketOptions['params']) {
  let t = START;
  const m = new Market({ seed, clock: () => t, ...(params ? { params } : {}) });
  return {
    m,
    advance(s: number) {
      t += s * 1000;
      m.step(s);
    },
    now: () => t,
  };
}

/**
 * Gatheral-Jacquier (2014) eq. (2.1): the density of the smile is >= 0 iff
 * g(k) = (1 - k w'/(2w))^2 - w'^2/4 (1/w + 1/4) + w''/2 >= 0. Derivatives by central differences.
 */
function g(w: (k: number) => number, k: number): number {
  const h = 1e-4;
  const w0 = w(k);
  const w1 = (w(k + h) - w(k - h)) / (2 * h);
  const w2 = (w(k + h) - 2 * w0 + w(k - h)) / (h * h);
  return (1 - (k * w1) / (2 * w0)) ** 2 - ((w1 * w1) / 4) * (1 / w0 + 0.25) + w2 / 2;
}

const TENORS = [1 / 24 / 365, 1 / 365, 3 / 365, 7 / 365, 30 / 365, 91 / 365, 182 / 365, 1, 1.5];

function checkNoStaticArbitrage(m: Market, u: Underlying): { minG: number; minCal: number } {
  let minG = Infinity;
  let minCal = Infinity;
  for (let i = 0; i < TENORS.length; i++) {
    const T = TENORS[i]!;
    for (let k = -3; k <= 3.0001; k += 0.02) {
      minG = Math.min(minG, g((x) => m.totalVariance(u, T, x), k));
      if (i > 0) {
        const prev = m.totalVariance(u, TENORS[i - 1]!, k);
        minCal = Math.min(minCal, m.totalVariance(u, T, k) - prev);
      }
    }
  }
  return { minG, minCal };
}

describe('simulator market engine', () => {
  it('starts at realistic levels (spot, ATM vol, skew, basis)', () => {
    const { m } = manual(1);
    const T30 = 30 / 365;
    expect(m.spot('BTC')).toBeCloseTo(90_000, 6);
    expect(m.spot('ETH')).toBeCloseTo(3_000, 6);
    expect(m.spot('SOL')).toBeCloseTo(150, 8);
    expect(m.spot('XRP')).toBeCloseTo(2.2, 10);
    const atm = (u: Underlying) => m.atmVol(u, T30);
    expect(atm('BTC')).toBeGreaterThan(0.45);
    expect(atm('BTC')).toBeLessThan(0.6);
    expect(atm('ETH')).toBeGreaterThan(0.6);
    expect(atm('ETH')).toBeLessThan(0.7);
    expect(atm('SOL')).toBeCloseTo(0.8, 1);
    expect(atm('XRP')).toBeCloseTo(0.9, 1);
    // BTC/ETH: put skew (downside vol above upside vol); smile curvature (wings above ATM).
    for (const u of ['BTC', 'ETH'] as const) {
      expect(m.impliedVol(u, T30, -0.2)).toBeGreaterThan(m.impliedVol(u, T30, 0.2));
      expect(m.impliedVol(u, T30, 0.3)).toBeGreaterThan(m.impliedVol(u, T30, 0));
    }
    // Forward curve: F(T) = S (1 + y(T) T) with y a few percent.
    for (const u of UNDERLYINGS) {
      for (const T of [0.02, 0.25, 1]) {
        const y = m.annualizedBasis(u, T);
        expect(y).toBeGreaterThan(0.01);
        expect(y).toBeLessThan(0.1);
        expect(m.forward(u, T)).toBeCloseTo(m.spot(u) * (1 + y * T), 8);
      }
      expect(m.forward(u, 0)).toBe(m.spot(u));
    }
  });

  it('is deterministic given a seed (same steps, same numbers; another seed differs)', () => {
    const a = manual(123);
    const b = manual(123);
    const c = manual(124);
    const steps = [0.1, 0.1, 5, 60, 0.25, 3600, 0.1];
    for (let i = 0; i < 200; i++) {
      const s = steps[i % steps.length]!;
      a.advance(s);
      b.advance(s);
      c.advance(s);
    }
    for (const u of UNDERLYINGS) {
      expect(a.m.snapshot(u)).toEqual(b.m.snapshot(u));
      expect(a.m.impliedVol(u, 0.3, -0.25)).toBe(b.m.impliedVol(u, 0.3, -0.25));
      expect(a.m.fundingHistory(u, 0, a.now())).toEqual(b.m.fundingHistory(u, 0, b.now()));
      expect(a.m.spot(u)).not.toBe(c.m.spot(u));
    }
  });

  it('keeps every smile free of butterfly arbitrage (g(k) >= 0) and the surface free of calendar arbitrage over many steps', () => {
    const { m, advance } = manual(7);
    let worstG = Infinity;
    let worstCal = Infinity;
    for (let step = 0; step < 120; step++) {
      advance(6 * 3600);
      for (const u of UNDERLYINGS) {
        const r = checkNoStaticArbitrage(m, u);
        worstG = Math.min(worstG, r.minG);
        worstCal = Math.min(worstCal, r.minCal);
        const s = m.smile(u);
        expect(s.eta * (1 + Math.abs(s.rho))).toBeLessThanOrEqual(2);
      }
    }
    expect(worstG).toBeGreaterThan(-1e-7);
    expect(worstCal).toBeGreaterThanOrEqual(-1e-12);
  });

  it('stays arbitrage-free when stressed (huge vol-of-vol pushes rho, eta and the term structure into their guards)', () => {
    const wild = { mean: 0, kappa: 1, vol: 4 };
    const { m, advance } = manual(99, {
      BTC: { ssviRho: { ...wild, mean: -0.3 }, ssviEta: { ...wild, mean: 1.5 }, shortVol: { mean: 0.5, kappa: 1, vol: 6 } },
      XRP: { ssviRho: { ...wild, mean: 0.3 }, ssviEta: { ...wild, mean: 1.5 }, shortVol: { mean: 0.9, kappa: 1, vol: 6 } },
    });
    let hitCap = false;
    let worstG = Infinity;
    let worstCal = Infinity;
    for (let step = 0; step < 80; step++) {
      advance(12 * 3600);
      for (const u of ['BTC', 'XRP'] as const) {
        const s = m.smile(u);
        if (s.eta * (1 + Math.abs(s.rho)) > 1.9) hitCap = true;
        const r = checkNoStaticArbitrage(m, u);
        worstG = Math.min(worstG, r.minG);
        worstCal = Math.min(worstCal, r.minCal);
      }
    }
    expect(hitCap).toBe(true);
    expect(worstG).toBeGreaterThan(-1e-7);
    expect(worstCal).toBeGreaterThanOrEqual(-1e-12);
  });

  it('gives call prices that are decreasing and convex in strike (discrete butterflies >= 0), by an independent Black-76', () => {
    const { m, advance } = manual(5);
    for (let step = 0; step < 10; step++) {
      advance(86_400);
      for (const u of UNDERLYINGS) {
        for (const T of [2 / 365, 30 / 365, 0.5]) {
          const F = m.forward(u, T);
          const Ks = Array.from({ length: 81 }, (_, i) => F * Math.exp(-1.2 + 0.03 * i));
          const C = Ks.map((K) => refBlack76('call', F, K, T, m.impliedVol(u, T, Math.log(K / F))));
          for (let i = 1; i < Ks.length - 1; i++) {
            expect(C[i]!).toBeLessThanOrEqual(C[i - 1]! + 1e-9 * F);
            const wL = (Ks[i + 1]! - Ks[i]!) / (Ks[i + 1]! - Ks[i - 1]!);
            expect(wL * C[i - 1]! + (1 - wL) * C[i + 1]! - C[i]!).toBeGreaterThan(-1e-9 * F);
          }
        }
      }
    }
  });

  it('moves ATM vol against spot for BTC (negative correlation) and mean-reverts it', () => {
    const { m, advance } = manual(11);
    const dS: number[] = [];
    const dV: number[] = [];
    let sumVol = 0;
    let n = 0;
    for (let i = 0; i < 4000; i++) {
      const s0 = Math.log(m.spot('BTC'));
      const v0 = Math.log(m.vols('BTC').short);
      advance(3600);
      dS.push(Math.log(m.spot('BTC')) - s0);
      dV.push(Math.log(m.vols('BTC').short) - v0);
      sumVol += m.vols('BTC').short;
      n++;
    }
    const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
    const ms = mean(dS);
    const mv = mean(dV);
    let sxy = 0;
    let sxx = 0;
    let syy = 0;
    for (let i = 0; i < dS.length; i++) {
      sxy += (dS[i]! - ms) * (dV[i]! - mv);
      sxx += (dS[i]! - ms) ** 2;
      syy += (dV[i]! - mv) ** 2;
    }
    const corr = sxy / Math.sqrt(sxx * syy);
    expect(corr).toBeLessThan(-0.35);
    expect(corr).toBeGreaterThan(-0.65);
    // ~5.5 months of hourly steps with kappa 6/yr: the time average stays near the 0.48 mean.
    expect(sumVol / n).toBeGreaterThan(0.3);
    expect(sumVol / n).toBeLessThan(0.7);
  });

  it('keeps an hourly funding history: whole hours, interest_8h = sum of the last 8 interest_1h, chained index prices', () => {
    const { m, advance, now } = manual(3);
    const before = m.fundingHistory('BTC', 0, now());
    expect(before.length).toBe(720);
    advance(2.5 * 3600);
    const h = m.fundingHistory('BTC', 0, now());
    expect(h.length).toBe(722);
    const last = h[h.length - 1]!;
    expect(last.timestamp % 3_600_000).toBe(0);
    expect(last.timestamp).toBeLessThanOrEqual(now());
    expect(now() - last.timestamp).toBeLessThan(3_600_000);
    for (let i = 1; i < h.length; i++) {
      expect(h[i]!.timestamp - h[i - 1]!.timestamp).toBe(3_600_000);
      expect(h[i]!.prev_index_price).toBe(h[i - 1]!.index_price);
      if (i >= 7) {
        const sum = h.slice(i - 7, i + 1).reduce((s, p) => s + p.interest_1h, 0);
        expect(h[i]!.interest_8h).toBeCloseTo(sum, 15);
      }
    }
    // Realistic magnitudes: |interest_1h| well below 0.1% per hour, mean slightly positive.
    const mean = h.reduce((s, p) => s + p.interest_1h, 0) / h.length;
    expect(Math.max(...h.map((p) => Math.abs(p.interest_1h)))).toBeLessThan(1e-3);
    expect(mean).toBeGreaterThan(0);
    // Range filter is inclusive and ascending.
    const sub = m.fundingHistory('BTC', h[10]!.timestamp, h[20]!.timestamp);
    expect(sub.map((p) => p.timestamp)).toEqual(h.slice(10, 21).map((p) => p.timestamp));
    // The ticker-side figures: perpetual mark = S (1 + premium).
    const f = m.funding('BTC');
    expect(m.perpetualMark('BTC')).toBeCloseTo(m.spot('BTC') * (1 + f.premium), 6);
    expect(Math.abs(f.funding8h)).toBeLessThan(0.01);
  });

  it('rejects invalid parameters', () => {
    expect(() => new Market({ params: { BTC: { ssviGamma: 0.7 } } })).toThrow(/ssviGamma/);
    expect(() => new Market({ params: { ETH: { spot0: 0 } } })).toThrow(/spot0/);
  });

  it('uses the injected clock as `now`', () => {
    const t = DAY * 20000;
    const m = new Market({ clock: () => t });
    expect(m.now).toBe(t);
  });
});
