/**
 * The service's fits on the real recorded Deribit chains against INDEPENDENT reference fits computed here
 * (test/calibration/referenceFits.ts: Zeliade 2009 quasi-explicit raw SVI with a multi-start exact polish;
 * Hagan 2002 SABR with the service's beta, multi-start Nelder-Mead). The per-expiry table is printed.
 *
 * Chains (data/replay): maksm05 (2026-05-26 19:27Z, 878 options) is the tuning chain; pitspa (the same
 * listing 57 minutes earlier, collected independently) and schepal (2020-05-14, 310 options) were kept out
 * of the tuning loop and are asserted with the same bounds.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { sabrImpliedVol } from '../../src/quant/sabr.js';
import { black76Price } from '../../src/quant/black76.js';
import { sliceTotalVariance } from '../../src/quant/chain/modelSurface.js';
import { calibrateSvi } from '../../src/quant/sviCalibration.js';
import { sviImpliedVol } from '../../src/quant/svi.js';
import { otmQuotesByExpiry, loadReplayChain, REPLAY_FILES } from '../../adapters/replay/chains.js';
import { fileURLToPath } from 'node:url';
import { QUALITY_CHAINS, measureChain, median, qualitySummary, qualityTable, type ChainQuality } from './chainQuality.js';
import { hagan2002, referenceSvi, rmseVolPts } from './referenceFits.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const measured: ChainQuality[] = [];

beforeAll(() => {
  for (const c of QUALITY_CHAINS) {
    const q = measureChain(c.id);
    measured.push(q);
    console.log(`${c.label}\n${qualityTable(q)}`);
    for (const s of qualitySummary(q)) {
      console.log(
        `  ${s.model.padEnd(12)} median ${s.medianRmse.toFixed(2)} worst ${s.maxRmse.toFixed(2)} vp; gap to reference median ${s.medianGap.toFixed(2)} worst ${s.maxGap.toFixed(2)}; in spread ${(100 * s.inSpread).toFixed(1)} %; sparse ${s.sparse}; warned ${s.warned}`,
      );
    }
  }
}, 300_000);

describe('the references are what they claim', () => {
  it('Hagan 2002 written again here equals the service formula (independent transcription)', () => {
    for (const beta of [0, 0.5, 1]) {
      for (const rho of [-0.7, 0, 0.4]) {
        for (const K of [60_000, 75_000, 76_000, 110_000]) {
          const p = { alpha: 0.6 * Math.pow(76_000, 1 - beta), beta, rho, nu: 1.3 };
          expect(hagan2002(p, 76_000, K, 0.3)).toBeCloseTo(sabrImpliedVol(p, 76_000, K, 0.3, 'hagan2002'), 12);
        }
      }
    }
  });

  it('the SVI reference is the best least-squares fit: no worse than the service fitter run without constraints', () => {
    const chain = loadReplayChain(ROOT + REPLAY_FILES.maksm05);
    for (const e of otmQuotesByExpiry(chain)) {
      const qs = e.quotes.map((q) => ({ k: q.k, iv: q.iv }));
      const ref = referenceSvi(qs, e.T);
      const svc = calibrateSvi(e.quotes, e.T, { weighting: 'uniform', robust: false });
      const svcRmse = rmseVolPts((k) => sviImpliedVol(svc.params, k, e.T), qs);
      expect(ref.rmseVolPts).toBeLessThanOrEqual(svcRmse + 0.005);
      // A synthetic SVI smile is recovered exactly.
      const p = { a: 0.01, b: 0.05, rho: -0.3, m: 0.02, sigma: 0.15 };
      const syn = qs.map((q) => ({ k: q.k, iv: sviImpliedVol(p, q.k, e.T) }));
      expect(referenceSvi(syn, e.T).rmseVolPts).toBeLessThan(0.01);
    }
  });
});

describe('goals of issue 11 on every real chain (tuning chain and hold-outs alike), against the spread-weighted references of issue 26', () => {
  it('SVI: within 0.05 vp of the reference where the reference is arbitrage-free in the quoted range; repair cost < 0.5 vp elsewhere', () => {
    for (const q of measured) {
      for (const r of q.byModel.SVI) {
        if (r.referenceRmse === null) continue;
        const gap = r.servedRmse - r.referenceRmse;
        const label = `${q.id} SVI ${new Date(r.expirationTimestamp * 1000).toISOString().slice(0, 10)}`;
        // Issue 26: the reference is the spread-weighted fit. Where it is arbitrage-free on the quoted range the gap
        // is <= 0.05 vp unless the service's own butterfly check binds beyond the quoted range (g(k) on [-3, 3]:
        // pitspa 30MAY26, g < 0 at k = 0.72, quotes up to 0.14): that repair is then the whole gap, reported.
        if (r.referenceButterflyFree && r.referenceCalendarFree && r.status !== 'repaired') expect(gap, label).toBeLessThanOrEqual(0.05);
        else expect(gap, label).toBeLessThan(0.5);
        if (gap > 0.05) expect(Math.abs(gap - (r.diagRepairCost ?? 0)), label).toBeLessThan(0.02);
        // The service's own diagnostics tell the same story (its unconstrained fit is its reference).
        expect(r.diagReferenceRmse, label).not.toBeNull();
        expect(Math.abs(r.diagReferenceRmse! - r.referenceRmse), label).toBeLessThan(0.05);
        expect(r.diagRepairCost!, label).toBeLessThan(0.5);
      }
    }
  });

  it('SABR: within 0.05 vp of the Hagan reference on every fitted expiry of more than 2 days; repairs cost < 0.5 vp', () => {
    for (const q of measured) {
      for (const r of q.byModel.SABR) {
        if (r.referenceRmse === null) continue;
        const gap = r.servedRmse - r.referenceRmse;
        const label = `${q.id} SABR ${new Date(r.expirationTimestamp * 1000).toISOString().slice(0, 10)} ${r.status}`;
        // 'repaired': the calendar envelope against a plateau-marked shorter expiry; under 2 days: the served
        // linear wings replace Hagan's smile inside the quoted range where it breaks Lee's bound (2-hour expiry).
        // Measured worst outside 'fitted': 0.20 (pitspa 30MAY26 repaired), 0.17 (schepal 2-hour expiry).
        if (r.status === 'fitted' && r.T > 2 / 365) expect(gap, label).toBeLessThanOrEqual(0.05);
        else expect(gap, label).toBeLessThan(0.3);
        // The whole gap is the repair the service reports (calendar envelope / served wings), never a worse fit:
        // its own unconstrained fit matches the independent reference and diagnostics carry the cost.
        expect(r.diagReferenceRmse, label).not.toBeNull();
        expect(Math.abs(r.diagReferenceRmse! - r.referenceRmse), label).toBeLessThan(0.05);
        if (gap > 0.05) expect(Math.abs(gap - (r.diagRepairCost ?? 0)), label).toBeLessThan(0.02);
      }
    }
  });

  it('quality warnings: every expiry whose served ATM error exceeds 1 vp carries one', () => {
    for (const q of measured) {
      for (const mf of q.fit.models) {
        for (const s of mf.slices) {
          const atm = s.fit.atmErrorVolPts;
          const warned = (s.fit.warnings ?? []).some((w) => w.startsWith('fit quality:'));
          if (atm !== null && atm !== undefined && Math.abs(atm) > 1) expect(warned, `${q.id} ${mf.model} ${s.T}`).toBe(true);
          if (s.fit.maxError25DeltaVolPts !== null && s.fit.maxError25DeltaVolPts! > 3) expect(warned).toBe(true);
          if (warned) expect(Math.abs(atm ?? 0) > 1 || (s.fit.maxError25DeltaVolPts ?? 0) > 3).toBe(true);
        }
      }
    }
  });
});

describe('served IV inside the recorded bid/ask IV (OTM quotes more than 2 days out)', () => {
  it('holds at least the measured share per chain and model (issue 26: the absolute 95 % gave way to the reference share)', () => {
    // Measured (share of two-sided quotes) with the spread-weighted objective of issue 26: SVI 91.3 / 87.6 / 98.2 %,
    // SABR 77.1 / 78.0 / 85.1 %, VV 89.2 / 87.0 / 91.2 % (maksm05 / pitspa / schepal; the plain least squares before
    // it: SVI 84.2 / 81.4 / 96.5, SABR 62.5 / 63.8 / 79.8); bounds about 2 points below. The misses are the
    // plateau-marked 29MAY26 and the 26JUN26 expiry. ESSVI (3 parameters, curvature and wings tied by the butterfly
    // domain, long expiries under the calendar bound): 59.1 / 57.6 / 77.2 %; its own least squares is checked against
    // an independent reference in test/quant/essvi.test.ts.
    const floor: Record<string, Record<string, number>> = {
      maksm05: { SVI: 0.89, SABR: 0.75, VANNA_VOLGA: 0.83, ESSVI: 0.57 },
      pitspa: { SVI: 0.855, SABR: 0.76, VANNA_VOLGA: 0.825, ESSVI: 0.555 },
      schepal: { SVI: 0.96, SABR: 0.83, VANNA_VOLGA: 0.77, ESSVI: 0.75 },
    };
    for (const q of measured) {
      for (const s of qualitySummary(q)) expect(s.inSpread, `${q.id} ${s.model}`).toBeGreaterThanOrEqual(floor[q.id]![s.model]!);
    }
  });

  it('as many served IVs lie inside the spread as the independent reference fit\'s (the best unconstrained fit of the model)', () => {
    // What the model family can reach on these marks: measured, the spread-weighted reference SVI places 91.3 / 87.6 /
    // 98.2 % inside (the served SVI the same), the reference SABR 77.1 / 78.0 / 85.1 % (served the same), while the
    // marks themselves are 99.1 / 96.6 / 98.2 % inside. Allowed: 0.5 point below the reference for SVI, 1.5 for SABR.
    for (const q of measured) {
      for (const s of qualitySummary(q)) {
        // no reference fit here for Vanna-Volga (none exists) and ESSVI (its reference is in test/quant/essvi.test.ts)
        if (s.model === 'VANNA_VOLGA' || s.model === 'ESSVI') continue;
        expect(s.referenceInSpread, `${q.id} ${s.model}`).toBeGreaterThan(0.5);
        expect(s.inSpread, `${q.id} ${s.model}`).toBeGreaterThanOrEqual(s.referenceInSpread - (s.model === 'SVI' ? 0.005 : 0.015));
        expect(s.marksInSpread, `${q.id}`).toBeGreaterThan(0.95);
      }
    }
  });
});

describe('Vanna-Volga with fitted 10-delta wings', () => {
  it('median per-expiry RMSE against all OTM marks <= 1.5 vp on every real chain', () => {
    for (const q of measured) {
      const med = median(q.byModel.VANNA_VOLGA.map((r) => r.servedRmse));
      console.log(`${q.id} Vanna-Volga median RMSE ${med.toFixed(2)} vp`);
      // Measured 2026-11-26 with the fitted wing scales (vannaVolga.ts): 0.32 (19:27Z), 0.28 (18:30Z), 1.27 (2020).
      // The 2020-05-14 chain (schepal) was 2.28 before them: its wings bend sharply just beyond the 10-delta strikes,
      // which the wing at the default scale |ln(K25/K10)| could not follow; its 1-day (10.5) and 2-hour (39.4)
      // expiries still miss (marked at 75-210 % with plateaus).
      expect(med, q.id).toBeLessThanOrEqual(q.id === 'schepal' ? 1.5 : 0.5);
    }
  });

  it('every served slice is free of butterfly arbitrage, wings included (Breeden-Litzenberger, computed here)', () => {
    // Independent of the service's density check: undiscounted Black-76 calls per unit forward at the SERVED vol on
    // 801 strikes uniform in k over the quoted range widened to 8 ATM standard deviations (wider and finer than the
    // service's grid); no-arbitrage (Breeden and Litzenberger 1978; Carr and Madan 2005): prices in [(1-x)+, 1],
    // slope in [-1, 0] (each to 1e-9), density (second difference) >= -1e-7, the density tolerance of the service's
    // check (smileArbitrage.ts). Measured worst: -9.0e-8 at k = 2.67 (4.1 ATM standard deviations above the money,
    // x = K/F = 14) on the 2020 chain's 2020-12-25 expiry; every other slice >= 0.
    let slices = 0;
    for (const q of measured) {
      const vv = q.fit.models.find((m) => m.model === 'VANNA_VOLGA')!;
      for (const s of vv.slices) {
        const w = sliceTotalVariance('VANNA_VOLGA', s);
        const sd = Math.sqrt(w(0));
        const ks = s.quotes.map((x) => x.k);
        const lo = Math.min(...ks, -sd * sd / 2 - 8 * sd);
        const hi = Math.max(...ks, -sd * sd / 2 + 8 * sd);
        const n = 801;
        const x: number[] = [];
        const c: number[] = [];
        for (let i = 0; i < n; i++) {
          const k = lo + ((hi - lo) * i) / (n - 1);
          x.push(Math.exp(k));
          c.push(black76Price(1, Math.exp(k), s.T, Math.sqrt(w(k) / s.T), 'C'));
        }
        const label = `${q.id} ${new Date(s.expirationTimestamp * 1000).toISOString().slice(0, 10)}`;
        for (let i = 0; i < n; i++) {
          expect(c[i]!, label).toBeGreaterThanOrEqual(Math.max(1 - x[i]!, 0) - 1e-9);
          expect(c[i]!, label).toBeLessThanOrEqual(1 + 1e-9);
        }
        for (let i = 1; i + 1 < n; i++) {
          const s1 = (c[i]! - c[i - 1]!) / (x[i]! - x[i - 1]!);
          const s2 = (c[i + 1]! - c[i]!) / (x[i + 1]! - x[i]!);
          expect(s1, label).toBeLessThanOrEqual(1e-9);
          expect(s1, label).toBeGreaterThanOrEqual(-1 - 1e-9);
          expect((s2 - s1) / (0.5 * (x[i + 1]! - x[i - 1]!)), label).toBeGreaterThanOrEqual(-1e-7);
        }
        slices++;
      }
    }
    expect(slices).toBeGreaterThanOrEqual(20);
  });
});
