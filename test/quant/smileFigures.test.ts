/**
 * iVSummary figures of one smile (src/quant/smileFigures.ts) on smiles whose figures are known independently:
 * - a flat smile: the 25/10-delta strikes are the closed-form flat-vol strikes (strikeFromDeltaFlat), risk
 *   reversals and butterflies are exactly 0;
 * - a smile linear in log-moneyness, sigma(k) = s0 + s1 k: the delta strikes are found here by plain bisection on
 *   N(d1(k)) = delta (d1 with the smile's own vol), and the figures assembled by hand.
 */
import { describe, expect, it } from 'vitest';
import { normCdf } from '../../src/quant/normal.js';
import { strikeFromDeltaFlat } from '../../src/quant/strikeFromDelta.js';
import { deltaStrikes, smileFigures } from '../../src/quant/smileFigures.js';

/** k with N(d1(k)) = delta for sigma(k), by bisection on [-1, 1] (sigma > 0 there and N(d1) decreases in k for these smiles). */
function bisectK(delta: number, sigma: (k: number) => number, T: number): number {
  const f = (k: number) => {
    const s = sigma(k) * Math.sqrt(T);
    return normCdf(-k / s + s / 2) - delta;
  };
  let lo = -1;
  let hi = 1;
  expect(f(lo)).toBeGreaterThan(0);
  expect(f(hi)).toBeLessThan(0);
  for (let i = 0; i < 200; i++) {
    const mid = 0.5 * (lo + hi);
    if (f(mid) > 0) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

describe('smileFigures', () => {
  it('flat smile: strikes are the flat-vol closed form, RR = BF = 0, ATM = sigma', () => {
    const F = 65_000;
    const T = 30 / 365;
    const sigma = 0.55;
    const ks = deltaStrikes(() => sigma, F, T);
    expect(ks.K25C! / strikeFromDeltaFlat(0.25, F, T, sigma)).toBeCloseTo(1, 12);
    expect(ks.K25P! / strikeFromDeltaFlat(0.75, F, T, sigma)).toBeCloseTo(1, 12);
    expect(ks.K10C! / strikeFromDeltaFlat(0.1, F, T, sigma)).toBeCloseTo(1, 12);
    expect(ks.K10P! / strikeFromDeltaFlat(0.9, F, T, sigma)).toBeCloseTo(1, 12);
    expect(ks.K25C!).toBeGreaterThan(F);
    expect(ks.K25P!).toBeLessThan(F);
    const f = smileFigures(() => sigma, F, T);
    expect(f).toEqual({ atmVol: sigma, delta25Skew: 0, delta10Skew: 0, delta25Bfly: 0, delta10Bfly: 0 });
  });

  it('linear-in-k smile: figures match an independent bisection for the delta strikes', () => {
    for (const [F, T, s0, s1] of [
      [3_000, 14 / 365, 0.7, -0.25],
      [90_000, 0.5, 0.5, 0.1],
      [150, 2 / 365, 0.9, -0.6],
    ] as const) {
      const sigmaK = (k: number) => s0 + s1 * k;
      const volAt = (K: number) => sigmaK(Math.log(K / F));
      const k25c = bisectK(0.25, sigmaK, T);
      const k25p = bisectK(0.75, sigmaK, T);
      const k10c = bisectK(0.1, sigmaK, T);
      const k10p = bisectK(0.9, sigmaK, T);
      const f = smileFigures(volAt, F, T);
      expect(f.atmVol).toBeCloseTo(s0, 14);
      // RR = s1 (k_call - k_put); BF = s1 (k_call + k_put) / 2 (the ATM level cancels)
      expect(f.delta25Skew!).toBeCloseTo(s1 * (k25c - k25p), 10);
      expect(f.delta10Skew!).toBeCloseTo(s1 * (k10c - k10p), 10);
      expect(f.delta25Bfly!).toBeCloseTo((s1 * (k25c + k25p)) / 2, 10);
      expect(f.delta10Bfly!).toBeCloseTo((s1 * (k10c + k10p)) / 2, 10);
      // sign: a negative slope (puts bid) gives a negative risk reversal
      expect(Math.sign(f.delta25Skew!)).toBe(Math.sign(s1));
      const ks = deltaStrikes(volAt, F, T);
      expect(Math.log(ks.K25C! / F)).toBeCloseTo(k25c, 9);
      expect(Math.log(ks.K10P! / F)).toBeCloseTo(k10p, 9);
    }
  });

  it('a figure whose strike cannot be found is null, the others stay', () => {
    // total variance growing like 2|k| on the call side: N(d1) never falls to 0.10 there (Lee's bound)
    const F = 100;
    const T = 0.25;
    const volAt = (K: number) => {
      const k = Math.log(K / F);
      return k > 0 ? Math.sqrt((0.04 + 2.2 * k) / T) : Math.sqrt(0.04 / T);
    };
    const f = smileFigures(volAt, F, T);
    expect(f.atmVol).toBeCloseTo(0.4, 12);
    expect(f.delta10Skew).toBeNull();
    expect(f.delta10Bfly).toBeNull();
    expect(() => smileFigures(volAt, F, 0)).toThrow(RangeError);
  });
});
