/**
 * Issue 26: fits judged by the market's own spread. The served fits (src/quant/models: SVI, SABR and the Vanna-Volga
 * pillar fit minimize sum ((iv - mark) / h)^2, h = max(half-spread in IV, 0.25 vp), no-bid quotes the widest h of
 * their expiry and at least 2 vp) are measured on every real chain in the repository (Deribit: the MaksM05 JSON
 * snapshot, the pitspa CSV, the schepal 2020 chain; the OKX opt-summary recordings of 2021-12 and the Bybit option
 * tickers of 2023-04-05, through their replay feeds and normalizers) and on the simulator, against a REFERENCE
 * computed here: the unconstrained multi-start fit of the same weighted objective (test/calibration/referenceFits.ts,
 * written independently of the service's fitters; its weights refHalfSpreads are written again from the issue).
 *
 * Goals (issue 26 item 2), in market units:
 * - each expiry's RMSE against the marks within 0.05 vp of the reference's where the reference is arbitrage-free on
 *   the quoted range; where a repair binds, its cost is reported in diagnostics and under 0.5 vp;
 * - per chain and model (SVI, SABR), the share of two-sided OTM quotes (> 2 days) inside [bid IV, ask IV] at least
 *   the reference's share minus 1 percentage point;
 * - quotes without a bid (> 2 days) judged in price: the served price at or below the ask and within 2 ticks
 *   (0.0001 BTC) of the mark price;
 * - sparse expiries (1 to 4 quotes): within max(1 vp, the quote's own spread) of the mark at every quoted strike, or
 *   the service says in warnings that it could not honour them;
 * - no model's expiry more than 3 times worse (served RMSE) than the best of the three on the same expiry (the best
 *   floored at 0.25 vp) without a warning.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { simulatorChainView } from '../../bench/calibration.js';
import { QUALITY_CHAINS, RECORDED_SESSIONS, measureChain, measureView, recordedChainViews, qualitySummary, qualityTable, type ChainQuality, type ExpiryQuality } from './chainQuality.js';

const measured: ChainQuality[] = [];

const label = (q: ChainQuality, model: string, r: ExpiryQuality): string =>
  `${q.id} ${model} ${new Date(r.expirationTimestamp * 1000).toISOString().slice(0, 16)} (T ${(r.T * 365).toFixed(2)} d, ${r.quotes} quotes)`;

beforeAll(async () => {
  for (const c of QUALITY_CHAINS) measured.push(measureChain(c.id));
  measured.push(measureView('simulator', simulatorChainView(), new Map()));
  for (const [src, file] of RECORDED_SESSIONS) {
    for (const { id, view } of await recordedChainViews(src, file)) measured.push(measureView(id, view, new Map()));
  }
  for (const q of measured) {
    console.log(qualityTable(q));
    for (const s of qualitySummary(q)) {
      console.log(
        `  ${q.id} ${s.model.padEnd(12)} RMSE median ${s.medianRmse.toFixed(2)} worst ${s.maxRmse.toFixed(2)}; inside ${(100 * s.inSpread).toFixed(1)} % (reference ${(100 * s.referenceInSpread).toFixed(1)} %); ticks off median ${s.ticksMedian.toFixed(2)} max ${s.ticksMax.toFixed(2)}; no-bid ${s.noBid} (above ask ${s.noBidAboveAsk}, > 2 ticks ${s.noBidBeyond2Ticks}); sparse beyond 1 vp ${s.sparseBeyond1Vp}; < 2 d: ${s.shortExpiries} expiries, RMSE median ${s.shortMedianRmse.toFixed(2)} worst ${s.shortMaxRmse.toFixed(2)}`,
      );
    }
  }
}, 600_000);

describe('issue 26 goals on every real chain and on the simulator', () => {
  it('measures every chain of the repository (3 Deribit, OKX, Bybit) and the simulator', () => {
    const ids = measured.map((q) => q.id);
    for (const c of QUALITY_CHAINS) expect(ids).toContain(c.id);
    expect(ids).toContain('simulator');
    expect(ids.some((x) => x.startsWith('OKX'))).toBe(true);
    expect(ids.some((x) => x.startsWith('BYBIT'))).toBe(true);
  });

  it('RMSE within 0.05 vp of the spread-weighted reference where it is arbitrage-free on the quoted range; repairs reported and < 0.5 vp', () => {
    let checked = 0;
    const repaired: string[] = [];
    for (const q of measured) {
      for (const model of ['SVI', 'SABR'] as const) {
        for (const r of q.byModel[model] ?? []) {
          if (r.referenceRmse === null) continue;
          checked++;
          const gap = r.servedRmse - r.referenceRmse;
          const l = `${label(q, model, r)} gap ${gap.toFixed(3)}`;
          const refFree = model === 'SVI' ? r.referenceButterflyFree === true && r.referenceCalendarFree === true : r.referenceDensityFree === true;
          // the service's unconstrained fit is the same optimum as the independent reference
          expect(r.diagReferenceRmse, l).not.toBeNull();
          expect(Math.abs(r.diagReferenceRmse! - r.referenceRmse), l).toBeLessThan(0.05);
          if (gap <= 0.05) continue;
          // Beyond 0.05: only where a repair binds (the reference's own arbitrage on the quoted range, or the
          // service's check beyond it: SVI's g(k) on [-3, 3], SABR's served wings, the calendar envelope), and then
          // the diagnostics carry the whole gap as the repair cost, under 0.5 vp.
          expect(r.diagRepairCost, l).not.toBeNull();
          expect(Math.abs(gap - r.diagRepairCost!), l).toBeLessThan(0.02);
          expect(gap, l).toBeLessThan(0.5);
          if (refFree) repaired.push(l);
        }
      }
    }
    console.log(`reference arbitrage-free on the quoted range, served repaired beyond it (${repaired.length}): ${repaired.join('; ')}`);
    expect(checked).toBeGreaterThanOrEqual(60);
  });

  it('per chain: share of two-sided OTM quotes inside [bid IV, ask IV] >= the reference share - 1 point (SVI, SABR)', () => {
    for (const q of measured) {
      for (const s of qualitySummary(q)) {
        if (s.model === 'VANNA_VOLGA' || !Number.isFinite(s.referenceInSpread)) continue;
        expect(s.inSpread, `${q.id} ${s.model}: served ${s.inSpread} reference ${s.referenceInSpread}`).toBeGreaterThanOrEqual(s.referenceInSpread - 0.01);
      }
    }
  });

  it('no-bid quotes judged in price (the exchange\'s tick of the time): at or below the ask, within 2 ticks of the mark', () => {
    let n = 0;
    const misses: string[] = [];
    for (const q of measured) {
      for (const [model, rows] of Object.entries(q.byModel)) {
        for (const r of rows) {
          n += r.noBid;
          if (r.noBidAboveAsk + r.noBidBeyond2Ticks === 0) continue;
          misses.push(`${label(q, model, r)}: above ask ${r.noBidAboveAsk}, beyond 2 ticks ${r.noBidBeyond2Ticks}`);
        }
      }
    }
    console.log(`no-bid quotes judged in price: ${n} quotes; misses: ${misses.join('; ') || 'none'}`);
    expect(n).toBeGreaterThan(50);
    // Until 2026-11-28 SABR missed on the simulator's far call wings of its 122- and 213-day expiries (k 1.2 to 1.4,
    // no bid, no ask: 1.2 to 1.8 vp above the marks, up to 3.2 ticks; the independent reference fit the same): its fit
    // now keeps those quotes inside their price bands (src/quant/models/fitKit.ts noBidPriceBands)
    expect(misses).toEqual([]);
  });

  it('sparse expiries: within max(1 vp, the quote\'s spread) of every mark, or a warning says the calendar could not be honoured', () => {
    let n = 0;
    for (const q of measured) {
      for (const [model, rows] of Object.entries(q.byModel)) {
        for (const r of rows) {
          if (r.sparseExcess === null) continue;
          n++;
          if (r.sparseExcess > 0) expect(r.sparseWarned, `${label(q, model, r)} excess ${r.sparseExcess.toFixed(2)} vp`).toBe(true);
        }
      }
    }
    expect(n).toBeGreaterThan(0);
  });

  it('no model\'s expiry more than 3x worse than the best of the three (best floored at 0.25 vp) without a warning', () => {
    for (const q of measured) {
      const byExpiry = new Map<number, Array<{ model: string; r: ExpiryQuality }>>();
      for (const [model, rows] of Object.entries(q.byModel)) {
        for (const r of rows) {
          const a = byExpiry.get(r.expirationTimestamp) ?? [];
          a.push({ model, r });
          byExpiry.set(r.expirationTimestamp, a);
        }
      }
      for (const rows of byExpiry.values()) {
        const best = Math.min(...rows.map((x) => x.r.servedRmse));
        for (const { model, r } of rows) {
          // 1 % slack either way: the service measures the same RMSE on the same served surface
          if (r.servedRmse > 3.03 * Math.max(best, 0.25)) expect(r.crossModelWarned, `${label(q, model, r)} ${r.servedRmse.toFixed(2)} vs best ${best.toFixed(2)}`).toBe(true);
          if (r.servedRmse < 2.97 * Math.max(best, 0.25)) expect(r.crossModelWarned, `${label(q, model, r)} warned at ${r.servedRmse.toFixed(2)} vs best ${best.toFixed(2)}`).toBe(false);
        }
      }
    }
  });
});
