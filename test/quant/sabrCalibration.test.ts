import { describe, expect, it } from 'vitest';
import { sabrImpliedVol, type SabrParams } from '../../src/quant/sabr.js';
import { DEFAULT_NU_SQRT_T, calibrateSabr } from '../../src/quant/sabrCalibration.js';
import { checkSmileDensity } from '../../src/quant/smileArbitrage.js';

const KS = Array.from({ length: 25 }, (_, i) => -0.5 + i / 24);

function quotes(p: SabrParams, F: number, T: number, ks: readonly number[] = KS, noise = 0): { k: number; iv: number }[] {
  // Deterministic "noise": a fixed pseudo-random pattern of amplitude `noise` (vol fraction).
  return ks.map((k, i) => ({ k, iv: sabrImpliedVol(p, F, F * Math.exp(k), T) + noise * Math.sin(1.7 * i + 0.3) }));
}

describe('calibrateSabr recovers known parameters from generated smiles', () => {
  const cases: [string, SabrParams, number, number][] = [
    ['BTC-like 3M, beta 1', { alpha: 0.6, beta: 1, rho: -0.3, nu: 1.5 }, 70000, 0.25],
    ['1-week, positive skew, large nu', { alpha: 0.6, beta: 1, rho: 0.4, nu: 4 }, 70000, 0.02],
    ['beta 0.5 (alpha in F^(1/2) units)', { alpha: 0.25, beta: 0.5, rho: -0.2, nu: 0.8 }, 50, 1],
  ];
  for (const [name, p, F, T] of cases) {
    it(`noiseless: ${name} to 1e-6`, () => {
      const r = calibrateSabr(quotes(p, F, T), F, T, { beta: p.beta });
      expect(Math.abs(r.params.alpha / p.alpha - 1)).toBeLessThan(1e-6);
      expect(Math.abs(r.params.rho - p.rho)).toBeLessThan(1e-6);
      expect(Math.abs(r.params.nu / p.nu - 1)).toBeLessThan(1e-6);
      expect(r.params.beta).toBe(p.beta);
      expect(r.rmseVolPts).toBeLessThan(1e-6);
      expect(r.mode).toBe('sabr-3p');
      expect(r.quotesUsed).toBe(25);
      expect(r.quotesDropped).toEqual([]);
      expect(r.arbitrageFree).toBe(true);
      expect(r.warnings).toEqual([]);
      expect(r.iterations).toBeGreaterThan(0);
    });
  }

  it('with 0.3 vol-point noise: parameters close, RMSE at the noise level', () => {
    const p: SabrParams = { alpha: 0.6, beta: 1, rho: -0.3, nu: 1.5 };
    const r = calibrateSabr(quotes(p, 70000, 0.25, KS, 0.003), 70000, 0.25);
    expect(Math.abs(r.params.alpha / p.alpha - 1)).toBeLessThan(0.01);
    expect(Math.abs(r.params.rho - p.rho)).toBeLessThan(0.03);
    expect(Math.abs(r.params.nu / p.nu - 1)).toBeLessThan(0.03);
    // The noise pattern has RMS 0.3/sqrt(2) ≈ 0.21 vol pts; 3 fitted parameters absorb a little of it.
    expect(r.rmseVolPts).toBeGreaterThan(0.15);
    expect(r.rmseVolPts).toBeLessThan(0.22);
  });

  it('trims an outlier and recovers the parameters', () => {
    const p: SabrParams = { alpha: 0.6, beta: 1, rho: -0.3, nu: 1.5 };
    const q = quotes(p, 70000, 0.25).map((x, i) => (i === 13 ? { ...x, iv: x.iv + 0.08 } : x));
    const r = calibrateSabr(q, 70000, 0.25);
    expect(r.quotesDropped).toEqual([13]);
    expect(r.quotesUsed).toBe(24);
    expect(Math.abs(r.params.rho - p.rho)).toBeLessThan(1e-6);
    expect(Math.abs(r.params.nu / p.nu - 1)).toBeLessThan(1e-6);
    expect(r.rmseAllVolPts).toBeGreaterThan(1.5); // the outlier is still visible in the all-quotes RMSE
    expect(r.method).toContain('trimmed 1 outlier');
    const noTrim = calibrateSabr(q, 70000, 0.25, { maxOutlierFraction: 0 });
    expect(Math.abs(noTrim.params.nu / p.nu - 1)).toBeGreaterThan(1e-3);
  });

  it('near-identical inputs give near-identical parameters', () => {
    const p: SabrParams = { alpha: 0.6, beta: 1, rho: -0.3, nu: 1.5 };
    const a = calibrateSabr(quotes(p, 70000, 0.25, KS, 0.003), 70000, 0.25);
    const q = quotes(p, 70000, 0.25, KS, 0.003).map((x, i) => ({ ...x, iv: x.iv + 1e-5 * Math.cos(3 * i) }));
    const b = calibrateSabr(q, 70000, 0.25);
    expect(Math.abs(a.params.alpha / b.params.alpha - 1)).toBeLessThan(1e-3);
    expect(Math.abs(a.params.rho - b.params.rho)).toBeLessThan(1e-3);
    expect(Math.abs(a.params.nu / b.params.nu - 1)).toBeLessThan(1e-3);
    // A warm start from the previous fit lands on the same optimum.
    const c = calibrateSabr(q, 70000, 0.25, { previous: a.params });
    expect(Math.abs(c.params.nu / b.params.nu - 1)).toBeLessThan(1e-6);
  });

  it('supports vega, spread and uniform weighting', () => {
    const p: SabrParams = { alpha: 0.6, beta: 1, rho: -0.3, nu: 1.5 };
    const q = quotes(p, 70000, 0.25).map((x) => ({ ...x, bidIv: x.iv - 0.01, askIv: x.iv + 0.01 }));
    expect(calibrateSabr(q, 70000, 0.25).weighting).toBe('vega');
    expect(calibrateSabr(q, 70000, 0.25, { weighting: 'auto' }).weighting).toBe('spread');
    for (const weighting of ['vega', 'spread', 'uniform'] as const) {
      const r = calibrateSabr(q, 70000, 0.25, { weighting });
      expect(Math.abs(r.params.nu / p.nu - 1)).toBeLessThan(1e-6);
    }
  });
});

describe('calibrateSabr on sparse expiries', () => {
  const p: SabrParams = { alpha: 0.55, beta: 1, rho: -0.25, nu: 2 };
  const F = 70000;
  const T = 0.05;

  it('one quote: alpha only, the quote reproduced, rho and nu from the default shape', () => {
    const r = calibrateSabr([{ k: 0.03, iv: 0.57 }], F, T);
    expect(r.mode).toBe('sabr-1p');
    expect(r.params.rho).toBe(0);
    expect(r.params.nu).toBeCloseTo(DEFAULT_NU_SQRT_T / Math.sqrt(T), 12);
    expect(r.rmseVolPts).toBeLessThan(1e-8);
    expect(r.atm.marketIv).toBeNull();
  });

  it('two quotes: alpha and rho, both quotes reproduced, nu from the prior rescaled by sqrt(priorT/T)', () => {
    const q = quotes(p, F, T, [-0.05, 0.06]);
    const prior: SabrParams = { alpha: 0.5, beta: 1, rho: -0.3, nu: 1 };
    const r = calibrateSabr(q, F, T, { prior, priorT: 0.2 });
    expect(r.mode).toBe('sabr-2p');
    expect(r.params.nu).toBeCloseTo(1 * Math.sqrt(0.2 / T), 12);
    expect(r.rmseVolPts).toBeLessThan(1e-6);
    expect(r.method).toContain('prior');
  });

  it('three and four quotes: all three parameters with a weak ridge, quotes fitted to 0.01 vol pt', () => {
    for (const ks of [
      [-0.1, 0, 0.1],
      [-0.15, -0.05, 0.05, 0.15],
    ]) {
      const r = calibrateSabr(quotes(p, F, T, ks), F, T);
      expect(r.mode).toBe('sabr-3p-ridge');
      expect(r.rmseVolPts).toBeLessThan(0.01);
      expect(Number.isFinite(r.params.nu) && r.params.nu > 0).toBe(true);
    }
  });

  it('drops invalid quotes, and throws only when none is valid', () => {
    const r = calibrateSabr([{ k: 0, iv: 0.5 }, { k: Number.NaN, iv: 0.5 }, { k: 0.1, iv: -1 }], F, T);
    expect(r.quotesDropped).toEqual([1, 2]);
    expect(r.quotesUsed).toBe(1);
    expect(() => calibrateSabr([{ k: 0, iv: 0 }], F, T)).toThrow(RangeError);
    expect(() => calibrateSabr([{ k: 0, iv: 0.5 }], F, 0)).toThrow(RangeError);
    expect(() => calibrateSabr([{ k: 0, iv: 0.5 }], F, T, { beta: 1.5 })).toThrow(RangeError);
  });
});

describe('calibrateSabr butterfly arbitrage: repair or report', () => {
  it('repairs a long-dated smile whose exact SABR parameters have a negative density in the far left wing', () => {
    // alpha 0.6, rho -0.7, nu 1.8, T = 1: Hagan's expansion gives a negative density near k = -2.2
    // (4 ATM standard deviations out), outside the quotes (k in [-1, 1]).
    const p: SabrParams = { alpha: 0.6, beta: 1, rho: -0.7, nu: 1.8 };
    const F = 100;
    const T = 1;
    expect(checkSmileDensity((K) => sabrImpliedVol(p, F, K, T), F, T, { kMin: -1, kMax: 1 }).arbitrageFree).toBe(false);
    const ks = Array.from({ length: 21 }, (_, i) => -1 + 0.1 * i);
    const r = calibrateSabr(quotes(p, F, T, ks), F, T);
    expect(r.arbitrageFree).toBe(true);
    expect(r.method).toContain('density penalty');
    // Verified independently on the default grid, and the repair costs less than 1 vol pt of RMSE.
    expect(checkSmileDensity((K) => sabrImpliedVol(r.params, F, K, T), F, T, { kMin: -1, kMax: 1 }).arbitrageFree).toBe(true);
    expect(r.rmseVolPts).toBeLessThan(1);
    const unrepaired = calibrateSabr(quotes(p, F, T, ks), F, T, { repairArbitrage: false });
    expect(unrepaired.arbitrageFree).toBe(false);
    expect(unrepaired.minDensity).toBeLessThan(0);
    expect(unrepaired.warnings.join(' ')).toContain('butterfly arbitrage');
  });

  it('reports (does not hide) a violation it cannot repair, keeping the unpenalized fit', () => {
    // rho 0.3, nu 0.8, T = 2: the right wing grows so fast that call prices rise with strike.
    const p: SabrParams = { alpha: 0.6, beta: 1, rho: 0.3, nu: 0.8 };
    const ks = Array.from({ length: 21 }, (_, i) => -1 + 0.1 * i);
    const r = calibrateSabr(quotes(p, 100, 2, ks), 100, 2);
    expect(r.arbitrageFree).toBe(false);
    expect(r.method).toContain('repair by density penalty failed');
    expect(Math.abs(r.params.nu / p.nu - 1)).toBeLessThan(1e-6);
  });
});
