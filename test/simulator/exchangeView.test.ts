/**
 * The per-exchange views of the simulated market (OKX, Bybit): the stated transforms of index, basis and
 * vol, still free of static arbitrage over many steps (Gatheral-Jacquier g(k) >= 0 by finite differences
 * computed here, total variance non-decreasing in T), and funding settlements that are the sums of the
 * transformed hourly accruals.
 */
import { describe, expect, it } from 'vitest';
import { BYBIT_VIEW, MarketView, NEUTRAL_VIEW, OKX_VIEW } from '../../adapters/simulator/exchangeView.js';
import { Market, UNDERLYINGS } from '../../adapters/simulator/market.js';

const T0 = Date.UTC(2026, 4, 26, 12, 0, 0);
const HOUR_MS = 3_600_000;

/** Gatheral-Jacquier (2014) eq. (2.1) with central differences: the smile's density is >= 0 iff g(k) >= 0. */
function g(w: (k: number) => number, k: number): number {
  const h = 1e-4;
  const w0 = w(k);
  const w1 = (w(k + h) - w(k - h)) / (2 * h);
  const w2 = (w(k + h) - 2 * w0 + w(k - h)) / (h * h);
  return (1 - (k * w1) / (2 * w0)) ** 2 - ((w1 * w1) / 4) * (1 / w0 + 0.25) + w2 / 2;
}

describe('exchange views of the market', () => {
  it('apply the stated index, basis and vol transforms; the neutral view is the market itself', () => {
    const m = new Market({ seed: 3, clock: () => T0 });
    for (let i = 0; i < 30; i++) m.step(600);
    const neutral = new MarketView(m, NEUTRAL_VIEW);
    const okx = new MarketView(m, OKX_VIEW);
    for (const u of UNDERLYINGS) {
      expect(neutral.spot(u)).toBe(m.spot(u));
      expect(neutral.forward(u, 0.3)).toBeCloseTo(m.forward(u, 0.3), 9);
      expect(neutral.impliedVol(u, 0.3, 0.1)).toBeCloseTo(m.impliedVol(u, 0.3, 0.1), 12);
      expect(okx.spot(u) / m.spot(u)).toBeCloseTo(1 + OKX_VIEW.indexOffsetBp / 1e4, 12);
      expect((okx.forward(u, 0.5) / okx.spot(u) - 1) / 0.5).toBeCloseTo(m.annualizedBasis(u, 0.5) + OKX_VIEW.basisOffset, 12);
      expect(okx.atmVol(u, 0.2) / m.atmVol(u, 0.2)).toBeCloseTo(OKX_VIEW.volMultiplier, 12);
      expect(okx.impliedVol(u, 0.2, 0) / m.impliedVol(u, 0.2, 0)).toBeCloseTo(OKX_VIEW.volMultiplier, 12);
      expect(okx.premium(u)).toBeCloseTo(OKX_VIEW.premiumMultiplier * m.funding(u).premium + OKX_VIEW.premiumOffset, 14);
    }
    expect(() => new MarketView(m, { ...OKX_VIEW, volMultiplier: 0 })).toThrow(RangeError);
  });

  it('stay free of butterfly and calendar arbitrage over a stressed run', () => {
    let t = T0;
    const m = new Market({ seed: 11, clock: () => t, params: { BTC: { shortVol: { mean: 0.5, kappa: 6, vol: 3 } } } });
    const views = [new MarketView(m, OKX_VIEW), new MarketView(m, BYBIT_VIEW)];
    let minG = Infinity;
    let minCal = Infinity;
    const Ts = [1 / 365, 7 / 365, 30 / 365, 0.25, 0.5, 1];
    for (let step = 0; step < 60; step++) {
      t += 6 * HOUR_MS;
      m.step(6 * 3600);
      for (const v of views) {
        for (const u of ['BTC', 'ETH', 'SOL'] as const) {
          for (let i = 0; i < Ts.length; i++) {
            const T = Ts[i]!;
            const w = (k: number) => v.impliedVol(u, T, k) ** 2 * T;
            for (let k = -1.5; k <= 1.5; k += 0.05) {
              minG = Math.min(minG, g(w, k));
              if (i > 0) minCal = Math.min(minCal, w(k) - v.impliedVol(u, Ts[i - 1]!, k) ** 2 * Ts[i - 1]!);
            }
          }
        }
      }
    }
    expect(minG).toBeGreaterThan(-1e-6);
    expect(minCal).toBeGreaterThan(-1e-12);
  });

  it('settle funding as the sum of the transformed hourly accruals; the prediction of a fresh interval is the current rate', () => {
    const m = new Market({ seed: 5, clock: () => T0 });
    const v = new MarketView(m, BYBIT_VIEW);
    const settle = T0 - 4 * HOUR_MS;
    const pts = m.fundingHistory('ETH', settle - 7 * HOUR_MS, settle);
    expect(pts).toHaveLength(8);
    const want = pts.reduce((s, p) => s + BYBIT_VIEW.premiumMultiplier * p.interest_1h + BYBIT_VIEW.premiumOffset / 8, 0);
    expect(v.settledFunding('ETH', settle, 8)).toBeCloseTo(want, 15);
    const hist = v.fundingHistory('ETH', settle, settle);
    expect(hist).toHaveLength(1);
    expect(hist[0]!.interest_8h).toBeCloseTo(want, 15);
    expect(v.settledFunding('ETH', T0 - 2000 * HOUR_MS, 8)).toBeNull(); // before the market's history
    // T0 is a whole hour: an interval starting now is predicted at the current damped rate for its length
    expect(v.predictedFunding('ETH', T0 + 8 * HOUR_MS, 8)).toBeCloseTo(v.currentFunding8h('ETH'), 15);
    expect(v.predictedFunding('ETH', T0 + 4 * HOUR_MS, 4)).toBeCloseTo(v.currentFunding8h('ETH') / 2, 15);
  });
});
