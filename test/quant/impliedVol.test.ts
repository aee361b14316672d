import { describe, expect, it } from 'vitest';
import { black76Greeks, black76Price, type OptionType } from '../../src/quant/black76.js';
import { impliedVolBlack76 } from '../../src/quant/impliedVol.js';

const HOUR = 1 / (365 * 24);
const DAY = 1 / 365;

describe('impliedVolBlack76 round trip sigma -> price -> sigma', () => {
  it('recovers sigma to 1e-10 on a grid of moneyness, expiry and vol (deep ITM/OTM, short/long T)', () => {
    const F = 100;
    let informative = 0;
    let worstInformative = 0;
    for (const K of [1, 10, 40, 70, 90, 99, 99.99, 100, 100.01, 101, 110, 140, 250, 1000, 10000]) {
      for (const T of [HOUR, DAY, 7 * DAY, 0.25, 1, 3]) {
        for (const sigma of [0.01, 0.05, 0.2, 0.5, 1, 2, 4]) {
          for (const t of ['C', 'P'] as OptionType[]) {
            const price = black76Price(F, K, T, sigma, t);
            const upper = t === 'C' ? F : K;
            const intrinsic = t === 'C' ? Math.max(F - K, 0) : Math.max(K - F, 0);
            if (price >= upper || price === intrinsic) continue; // no information left in a double
            const iv = impliedVolBlack76(price, F, K, T, t);
            // The vol a double-precision price can resolve: a few ulps of the price scale over vega.
            const vega = black76Greeks(F, K, T, sigma, t).vega;
            const resolution = (8 * Number.EPSILON * Math.max(F, K)) / vega;
            expect(Math.abs(iv - sigma)).toBeLessThanOrEqual(Math.max(1e-10, resolution));
            // Whatever sigma it returns reprices the input to its own relative accuracy.
            const rep = black76Price(F, K, T, iv, t);
            expect(Math.abs(rep - price)).toBeLessThanOrEqual(Math.max(2e-8 * price, 8 * Number.EPSILON * Math.max(F, K)));
            if (resolution < 1e-12) {
              informative++;
              worstInformative = Math.max(worstInformative, Math.abs(iv - sigma));
            }
          }
        }
      }
    }
    expect(informative).toBeGreaterThan(500); // 628 of the 1260 grid points resolve sigma below 1e-12
    expect(worstInformative).toBeLessThan(1e-10);
  });

  it('is exact to 1e-12 for ordinary out-of-the-money listed options (BTC, 1 week to 1 year, 40-150 % vol)', () => {
    const F = 65000;
    for (const K of [40000, 55000, 60000, 65000, 70000, 80000, 120000]) {
      for (const T of [7 * DAY, 30 * DAY, 0.5, 1]) {
        for (const sigma of [0.4, 0.7, 1.5]) {
          for (const t of (K >= F ? ['C'] : ['P']) as OptionType[]) {
            const iv = impliedVolBlack76(black76Price(F, K, T, sigma, t), F, K, T, t);
            expect(Math.abs(iv - sigma)).toBeLessThan(1e-12);
          }
        }
      }
    }
  });

  it('gives the same vol from a call and from the put of the same strike (parity)', () => {
    const F = 2000;
    const K = 2400;
    const T = 0.2;
    const c = black76Price(F, K, T, 0.85, 'C');
    const p = c - (F - K);
    expect(impliedVolBlack76(c, F, K, T, 'C')).toBeCloseTo(impliedVolBlack76(p, F, K, T, 'P'), 12);
  });

  it('handles tiny at-the-money vol (small-price cancellation) and extreme deep OTM prices', () => {
    const F = 100;
    const T = DAY;
    const tiny = impliedVolBlack76(black76Price(F, F, T, 1e-6, 'C'), F, F, T, 'C');
    expect(Math.abs(tiny / 1e-6 - 1)).toBeLessThan(1e-9);
    // OTM call priced ~4e-31: vol still recovered (the log objective keeps it well-conditioned).
    const p = black76Price(F, 300, 0.1, 0.3, 'C');
    expect(p).toBeLessThan(1e-30);
    expect(impliedVolBlack76(p, F, 300, 0.1, 'C')).toBeCloseTo(0.3, 12);
  });

  it('returns 0 for a price equal to intrinsic value', () => {
    expect(impliedVolBlack76(10, 100, 90, 0.5, 'C')).toBe(0);
    expect(impliedVolBlack76(0, 100, 110, 0.5, 'C')).toBe(0);
  });

  it('throws RangeError outside the no-arbitrage bounds and for bad inputs', () => {
    expect(() => impliedVolBlack76(9.99, 100, 90, 0.5, 'C')).toThrow(/below the intrinsic value/);
    expect(() => impliedVolBlack76(-1, 100, 110, 0.5, 'C')).toThrow(RangeError);
    expect(() => impliedVolBlack76(100, 100, 90, 0.5, 'C')).toThrow(/upper bound/);
    expect(() => impliedVolBlack76(90, 100, 90, 0.5, 'P')).toThrow(/upper bound/);
    expect(() => impliedVolBlack76(5, 100, 100, 0, 'C')).toThrow(RangeError);
    expect(() => impliedVolBlack76(Number.NaN, 100, 100, 1, 'C')).toThrow(RangeError);
    expect(() => impliedVolBlack76(5, -100, 100, 1, 'C')).toThrow(RangeError);
  });
});
