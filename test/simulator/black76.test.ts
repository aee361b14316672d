/**
 * The simulator's private Black-76 (adapters/simulator/black76.ts) against independent
 * references: @stdlib's normal CDF, put-call parity, finite differences, and a recorded Deribit
 * ticker (crypto-msg-parser BTC-30SEP22-60000-C, 2022-06-02).
 */
import { describe, expect, it } from 'vitest';
import { black76Greeks, black76ImpliedVol, black76Price, normCdf } from '../../adapters/simulator/black76.js';
import { N, refBlack76 } from './helpers.js';

describe('simulator Black-76', () => {
  it('normCdf matches @stdlib to 1e-14 on [-10, 10]', () => {
    for (let x = -10; x <= 10; x += 0.173) expect(Math.abs(normCdf(x) - N(x))).toBeLessThan(1e-14);
  });

  it('prices match the reference and satisfy put-call parity C - P = F - K', () => {
    for (const [F, K, T, s] of [
      [90000, 60000, 0.5, 0.55],
      [90000, 90000, 0.01, 0.45],
      [3000, 4500, 1, 0.7],
      [2.2, 1.5, 0.08, 0.9],
    ] as const) {
      const c = black76Price('call', F, K, T, s);
      const p = black76Price('put', F, K, T, s);
      expect(c).toBeCloseTo(refBlack76('call', F, K, T, s), 8);
      expect(p).toBeCloseTo(refBlack76('put', F, K, T, s), 8);
      expect(c - p).toBeCloseTo(F - K, 8);
    }
  });

  it('reproduces the greeks Deribit printed for BTC-30SEP22-60000-C', () => {
    // Recorded: underlying_price 30220.5, mark_iv 67.7, timestamp 1654161839367, expiry 30SEP22 08:00Z;
    // greeks {vega 20.05335, theta -5.65962, rho 4.91491, gamma 0.00001, delta 0.05785}.
    const T = (Date.UTC(2022, 8, 30, 8) - 1654161839367) / (365 * 86400000);
    const g = black76Greeks('call', 30220.5, 60000, T, 0.677);
    expect(g.delta).toBeCloseTo(0.05785, 4);
    expect(g.vega).toBeCloseTo(20.05335, 1);
    expect(g.theta).toBeCloseTo(-5.65962, 1);
    expect(g.rho).toBeCloseTo(4.91491, 1);
    expect(g.gamma).toBeCloseTo(0.00001, 5);
  });

  it('greeks agree with finite differences of the price', () => {
    const [F, K, T, s] = [90000, 95000, 0.25, 0.5];
    const g = black76Greeks('put', F, K, T, s);
    const h = 1;
    const dP = (black76Price('put', F + h, K, T, s) - black76Price('put', F - h, K, T, s)) / (2 * h);
    const gP = (black76Price('put', F + h, K, T, s) - 2 * black76Price('put', F, K, T, s) + black76Price('put', F - h, K, T, s)) / (h * h);
    const vP = (black76Price('put', F, K, T, s + 0.0001) - black76Price('put', F, K, T, s - 0.0001)) / 0.0002 / 100;
    const tP = black76Price('put', F, K, T - 1 / 365, s) - black76Price('put', F, K, T, s);
    expect(g.delta).toBeCloseTo(dP, 6);
    expect(g.gamma).toBeCloseTo(gP, 8);
    expect(g.vega).toBeCloseTo(vP, 4);
    expect(g.theta).toBeCloseTo(tP, 0);
  });

  it('implied vol inverts the price (wings included) and rejects prices outside the bounds', () => {
    for (const [type, F, K, T, s] of [
      ['call', 90000, 200000, 0.5, 0.8],
      ['put', 90000, 40000, 0.1, 1.1],
      ['call', 90000, 60000, 0.5, 0.5],
      ['put', 2.2, 2.3, 0.01, 0.9],
    ] as const) {
      const p = black76Price(type, F, K, T, s);
      expect(black76ImpliedVol(type, p, F, K, T, 0.3)).toBeCloseTo(s, 7);
    }
    expect(black76ImpliedVol('call', 1000, 90000, 80000, 0.5)).toBeNaN(); // below intrinsic 10000
    expect(black76ImpliedVol('call', 95000, 90000, 80000, 0.5)).toBeNaN(); // above F
  });
});
