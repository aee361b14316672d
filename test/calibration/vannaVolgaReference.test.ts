/**
 * The independent Vanna-Volga reference of issue 26 (test/calibration/vannaVolgaReference.ts) checked on its own: its
 * normal distribution, its pillars (the Castagna-Mercurio smile passes through them, at the service's delta strikes),
 * and its second-order formula against the service's (two independent writings of the same formula agree).
 */
import { describe, expect, it } from 'vitest';
import { vannaVolgaSecondOrderVol } from '../../src/quant/vannaVolga.js';
import { refVvStrikes, refVvVol, vvNormCdf, vvNormInv } from './vannaVolgaReference.js';

describe('the independent Vanna-Volga reference (vannaVolgaReference.ts) itself', () => {
  it('its normal CDF and inverse are consistent and exact at known points', () => {
    expect(vvNormCdf(0)).toBe(0.5);
    expect(Math.abs(vvNormCdf(1.959963984540054) - 0.975)).toBeLessThan(1e-14);
    for (const p of [1e-6, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1 - 1e-6]) expect(Math.abs(vvNormCdf(vvNormInv(p)) - p)).toBeLessThan(1e-13);
  });

  it('its smile passes through the three pillars (Castagna-Mercurio: the approximation reproduces the pillar vols) at delta strikes', () => {
    const F = 30000;
    const T = 0.1;
    const p = { s1: 0.72, s2: 0.6, s3: 0.64 };
    const { K1, K3 } = refVvStrikes(p, F, T);
    for (const [K, s, delta] of [
      [K1, p.s1, 0.75],
      [K3, p.s3, 0.25],
    ] as const) {
      expect(Math.abs(refVvVol(p, F, T, Math.log(K / F)) - s)).toBeLessThan(1e-12);
      const sd = s * Math.sqrt(T);
      expect(Math.abs(vvNormCdf(-Math.log(K / F) / sd + 0.5 * sd) - delta)).toBeLessThan(1e-12);
    }
    expect(Math.abs(refVvVol(p, F, T, 0) - p.s2)).toBeLessThan(1e-12);
  });

  it("agrees with the service's second-order formula at the same pillars (a cross-check of two independent writings)", () => {
    const F = 30000;
    for (const T of [0.005, 0.1, 1]) {
      for (const p of [
        { s1: 0.72, s2: 0.6, s3: 0.64 },
        { s1: 0.5, s2: 0.55, s3: 0.7 },
        { s1: 1.4, s2: 1.1, s3: 1.2 },
      ]) {
        const { K1, K3 } = refVvStrikes(p, F, T);
        // the 25-delta put strike lies below the forward only while s1 sqrt T < 2 N^-1(0.75) = 1.349 (both refuse beyond)
        if (!(K1 < F)) continue;
        const sp = { K25P: K1, Katm: F, K25C: K3, vol25P: p.s1, volAtm: p.s2, vol25C: p.s3 };
        for (let i = -20; i <= 20; i++) {
          const k = (i / 20) * 1.5 * p.s2 * Math.sqrt(T);
          const a = refVvVol(p, F, T, k);
          const b = vannaVolgaSecondOrderVol(sp, F, F * Math.exp(k), T);
          if (Number.isNaN(a) || Number.isNaN(b)) expect(Number.isNaN(a) && Number.isNaN(b), `T ${T} k ${k}`).toBe(true);
          else expect(Math.abs(a - b), `T ${T} k ${k}`).toBeLessThan(1e-9);
        }
      }
    }
  });
});
