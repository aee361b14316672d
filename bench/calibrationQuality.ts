/**
 * Benchmark section "quality" (issue 11 item 6): calibration QUALITY of the served surfaces, per real recorded chain
 * (data/replay; maksm05 is the tuning chain, pitspa and schepal were kept out of the tuning loop) and the
 * simulator's BTC chain, per model: median and worst per-expiry RMSE against the OTM marks, median and worst gap to
 * the independent reference fit (test/calibration/referenceFits.ts: Zeliade 2009 raw SVI, Hagan 2002 SABR; Vanna-
 * Volga has none), the share of OTM quotes (> 2 days to expiry, bid and ask IV known) whose served IV lies inside
 * [bid IV, ask IV] (and, beside it, the share where the reference fit lies inside, and the marks themselves: what
 * the best unconstrained fit of the model can reach), and the number of sparse and warned expiries. Issue 26 adds: the
 * reference is the spread-weighted fit (min sum ((iv - mark) / h)^2, test/calibration/referenceFits.ts refHalfSpreads);
 * ticks off on two-sided quotes (|model price - mark price| / 0.0001 BTC, median and max, every expiry); no-bid
 * quotes whose model price is above their ask, and more than 2 ticks from the mark; sparse expiries (1 to 4 quotes)
 * served more than max(1 vp, the quote's spread) from a mark; and the short expiries (< 2 days): count, median and
 * worst RMSE. Same measurement as test/calibration/referenceGap.test.ts and spreadObjective.test.ts
 * (test/calibration/chainQuality.ts).
 */
import { QUALITY_CHAINS, measureChain, measureView, qualitySummary, qualityTable, type ChainQuality } from '../test/calibration/chainQuality.js';
import { simulatorChainView } from './calibration.js';

const f = (x: number, d = 2): string => (Number.isFinite(x) ? x.toFixed(d) : '-');
const pct = (x: number): string => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : '-');

/** Runs the section; returns the table text (printed by bench/run.ts) and the per-expiry details. */
export function runCalibrationQuality(): { text: string; details: string } {
  const measured: Array<{ label: string; q: ChainQuality }> = QUALITY_CHAINS.map((c) => ({ label: c.label, q: measureChain(c.id) }));
  measured.push({ label: 'simulator BTC (seed 42, 2026-05-26 19:30Z)', q: measureView('simulator', simulatorChainView(), new Map()) });
  const lines = [
    'calibration quality (vol points; gap = served RMSE minus the reference fit\'s; in-spread: OTM quotes > 2 d with bid and ask IV, served / reference fit / marks)',
    `${'chain'.padEnd(46)} ${'model'.padEnd(12)} ${'median'.padStart(7)} ${'worst'.padStart(7)} ${'gap med'.padStart(8)} ${'gap max'.padStart(8)} ${'in-spread'.padStart(10)} ${'ref in'.padStart(8)} ${'marks in'.padStart(8)} ${'sparse'.padStart(7)} ${'warned'.padStart(7)} ${'ticks med'.padStart(9)} ${'ticks max'.padStart(9)} ${'no-bid'.padStart(6)} ${'>ask'.padStart(5)} ${'>2tk'.padStart(5)} ${'sp>1vp'.padStart(6)} ${'<2d n'.padStart(5)} ${'<2d med'.padStart(8)} ${'<2d max'.padStart(8)} ${'3x warn'.padStart(7)}`,
  ];
  for (const { label, q } of measured) {
    for (const s of qualitySummary(q)) {
      lines.push(
        `${label.padEnd(46)} ${s.model.padEnd(12)} ${f(s.medianRmse).padStart(7)} ${f(s.maxRmse).padStart(7)} ${f(s.medianGap).padStart(8)} ${f(s.maxGap).padStart(8)} ${pct(s.inSpread).padStart(10)} ${pct(s.referenceInSpread).padStart(8)} ${pct(s.marksInSpread).padStart(8)} ${String(s.sparse).padStart(7)} ${String(s.warned).padStart(7)} ${f(s.ticksMedian).padStart(9)} ${f(s.ticksMax).padStart(9)} ${String(s.noBid).padStart(6)} ${String(s.noBidAboveAsk).padStart(5)} ${String(s.noBidBeyond2Ticks).padStart(5)} ${String(s.sparseBeyond1Vp).padStart(6)} ${String(s.shortExpiries).padStart(5)} ${f(s.shortMedianRmse).padStart(8)} ${f(s.shortMaxRmse).padStart(8)} ${String(s.crossModelWarned).padStart(7)}`,
      );
    }
  }
  return { text: lines.join('\n'), details: measured.map(({ label, q }) => `${label}\n${qualityTable(q)}`).join('\n') };
}
