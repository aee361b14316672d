/**
 * Issue 26 for Vanna-Volga: the served VV smile held to an INDEPENDENT reference (test/calibration/vannaVolgaReference.ts:
 * the Castagna-Mercurio 2007 second-order smile written again, the service's pillar-strike convention written again,
 * the spread-weighted objective with referenceFits.ts refHalfSpreads, an unconstrained multi-start Nelder-Mead over the
 * three pillar vols), on every chain the SVI/SABR goals of spreadObjective.test.ts are asserted on (the three Deribit
 * replays with their recorded books, the OKX and Bybit recorded sessions, the simulator).
 *
 * Compared on each expiry's CORE quotes only (mark call delta 0.10 to 0.90, vannaVolgaReference.ts): between the
 * 10-delta strikes the service serves the VV formula; beyond them its own wing rule, which the reference does not have.
 * Goals (issue 26 item 2):
 * - per expiry, served RMSE against the marks (core quotes) within 0.05 vp of the reference's where the reference's smile
 *   is free of butterfly arbitrage on the core quoted range (call-price convexity, vannaVolgaReference.ts refButterflyCheck);
 *   otherwise the difference is reported and under 0.5 vp;
 * - per chain, the share of two-sided core quotes (> 2 days) with the served IV inside [bid IV, ask IV] at least the
 *   reference's share minus 1 percentage point.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { simulatorChainView } from '../../bench/calibration.js';
import { buildModelSurface } from '../../src/quant/chain/modelSurface.js';
import { fitChain } from '../../src/quant/chain/chainFit.js';
import { vannaVolgaSecondOrderVol } from '../../src/quant/vannaVolga.js';
import type { ChainView } from '../../streams/chainState.js';
import { QUALITY_CHAINS, RECORDED_SESSIONS, median, quoteBidAskIv, recordedBook, recordedChainViews, replayChainView, type RecordedBook } from './chainQuality.js';
import { refHalfSpreads } from './referenceFits.js';
import { refButterflyCheck, refVvStrikes, refVvVol, referenceVannaVolga, vvNormCdf, vvNormInv } from './vannaVolgaReference.js';

const DAY_Y = 1 / 365;

/** One expiry of one chain: served VV against the reference on the core quotes. */
interface VvRow {
  readonly chain: string;
  readonly expiry: string;
  readonly T: number;
  readonly quotes: number;
  readonly core: number;
  readonly servedRmse: number;
  readonly refRmse: number;
  readonly gap: number;
  readonly refFree: boolean;
  /** Served slice: status, whether a butterfly repair shrank it, the service's own repair-cost diagnostic. */
  readonly status: string;
  readonly repaired: boolean;
  readonly diagRepairCost: number | null;
  /** Two-sided core quotes (T > 2 days) and how many the served / reference IV lies inside [bid IV, ask IV]. */
  readonly twoSided: number;
  readonly servedIn: number;
  readonly refIn: number;
  /** Polished starts of the reference that reached its best objective (of up to 6). */
  readonly agreeing: number;
  /** The reference objective at its optimum, and at the SERVED pillar vols (its formula and strikes, same quotes and h). */
  readonly refObjective: number;
  readonly objectiveAtServed: number;
}

const rows: VvRow[] = [];
const chainsMeasured: string[] = [];
let noReference = 0;
let measureMs = 0;
let referenceMs = 0;

function measure(id: string, view: ChainView, book: RecordedBook): void {
  chainsMeasured.push(id);
  const fit = fitChain(view, { sabrBeta: 1 });
  const mf = fit.models.find((m) => m.model === 'VANNA_VOLGA');
  if (!mf || mf.slices.length === 0) return;
  const surface = buildModelSurface(mf.model, mf.slices);
  for (const s of mf.slices) {
    const qs = s.quotes.map((q) => {
      const [bidIv, askIv] = quoteBidAskIv(s, q, book);
      return { k: q.k, iv: q.markIv, bidIv, askIv };
    });
    const t0 = performance.now();
    const ref = referenceVannaVolga(qs, s.forward, s.T);
    referenceMs += performance.now() - t0;
    if (!ref) {
      noReference++;
      continue;
    }
    const served = ref.core.map((i) => surface.impliedVol(s.T, s.quotes[i]!.strike, s.forward));
    // the served pillar vols as a point of the reference's own parameter space (its formula, its delta strikes)
    const sp = s.params as Readonly<Record<string, number>>;
    const servedPillars = { s1: sp.vol25P!, s2: sp.volAtm!, s3: sp.vol25C! };
    const hs = refHalfSpreads(qs);
    const objectiveAtServed = ref.core.reduce((a, i) => a + ((refVvVol(servedPillars, s.forward, s.T, qs[i]!.k) - qs[i]!.iv) / hs[i]!) ** 2, 0);
    const servedRmse = 100 * Math.sqrt(served.reduce((a, v, j) => a + (v - qs[ref.core[j]!]!.iv) ** 2, 0) / served.length);
    const ks = ref.core.map((i) => qs[i]!.k);
    const conv = refButterflyCheck(ref.iv, s.T, Math.min(...ks), Math.max(...ks));
    let twoSided = 0;
    let servedIn = 0;
    let refIn = 0;
    if (s.T > 2 * DAY_Y) {
      ref.core.forEach((i, j) => {
        const { bidIv: b, askIv: a, k } = qs[i]!;
        if (b === null || a === null || !(a >= b)) return;
        twoSided++;
        const inside = (v: number): boolean => v >= b - 1e-9 && v <= a + 1e-9;
        if (inside(served[j]!)) servedIn++;
        if (inside(ref.iv(k))) refIn++;
      });
    }
    rows.push({
      chain: id,
      expiry: new Date(s.expirationTimestamp * 1000).toISOString().slice(0, 13),
      T: s.T,
      quotes: qs.length,
      core: ref.core.length,
      servedRmse,
      refRmse: ref.rmseVolPts,
      gap: servedRmse - ref.rmseVolPts,
      refFree: conv.free,
      status: s.fit.status ?? 'fitted',
      repaired: /butterfly repair/.test(s.fit.method) || s.fit.calendarRepaired === true,
      diagRepairCost: s.fit.repairCostVolPts ?? null,
      twoSided,
      servedIn,
      refIn,
      agreeing: ref.agreeing,
      refObjective: ref.objective,
      objectiveAtServed: Number.isFinite(objectiveAtServed) ? objectiveAtServed : Infinity,
    });
  }
}

const key = (r: VvRow): string => `${r.chain} ${r.expiry}`;

/**
 * Measured exceptions to the 0.05 vp goal (reference arbitrage-free on the core range), each with the bound it is held
 * to instead: none. Until 2026-11-27 schepal 2020-05-29 missed by 0.102 vp: the service fitted the quotes between the
 * 10-delta strikes of its READ-OFF smile (10 quotes, 7500 to 12000) while the goal's quote set is the quotes whose own
 * mark's call delta is 0.10 to 0.90 (12: also 7000 and 12500). The service now fits that set (src/quant/vannaVolga.ts
 * inTenDeltaBand): gap -0.033 vp (served 1.218, reference 1.251 unweighted; on the weighted objective the reference is
 * never beaten). An entry here that starts meeting the goal fails the test, so that this list stays what is measured.
 */
const GAP_EXCEPTIONS: ReadonlyMap<string, { measured: number; bound: number }> = new Map();

/**
 * Measured exceptions to the inside-share goal (served >= reference - 1 pp per chain), with the bound held instead:
 * none. Until 2026-11-27 pitspa was 1.05 pp short (179 against 181 of 191), all on its 2026-06-05 expiry, where the
 * read-off 10-delta call strike (80973) left out the 81000 call, the tightest market of the expiry; with the quote set
 * by the marks' own deltas it is fitted: 181 / 191, the reference's. Stale entries fail.
 */
const INSIDE_EXCEPTIONS: ReadonlyMap<string, { servedIn: number; refIn: number; twoSided: number; boundPp: number }> = new Map();

beforeAll(async () => {
  const t0 = performance.now();
  for (const c of QUALITY_CHAINS) measure(c.id, replayChainView(c.id), recordedBook(c.id));
  measure('simulator', simulatorChainView(), new Map());
  for (const [src, file] of RECORDED_SESSIONS) {
    for (const { id, view } of await recordedChainViews(src, file)) measure(id, view, new Map());
  }
  measureMs = performance.now() - t0;
  const f = (x: number): string => x.toFixed(3).padStart(7);
  const lines = ['chain / expiry            T(d)   n core |  served     ref     gap | ref bfly | served: status repaired diagCost | in-spread served ref (two-sided core)'];
  for (const r of rows) {
    lines.push(
      `${key(r).padEnd(28)} ${(r.T * 365).toFixed(2).padStart(7)} ${String(r.quotes).padStart(3)} ${String(r.core).padStart(4)} | ${f(r.servedRmse)} ${f(r.refRmse)} ${f(r.gap)} | ${r.refFree ? '   y' : '   N'}     | ${r.status} ${r.repaired ? 'Y' : 'n'} ${r.diagRepairCost === null ? '-' : r.diagRepairCost.toFixed(3)} | ${r.servedIn}/${r.twoSided} ${r.refIn}/${r.twoSided} (starts agreeing ${r.agreeing})`,
    );
  }
  console.log(lines.join('\n'));
  for (const c of chainsMeasured) {
    const rs = rows.filter((r) => r.chain === c);
    if (rs.length === 0) {
      console.log(`VV ${c}: no expiry with >= 5 core quotes`);
      continue;
    }
    const two = rs.reduce((a, r) => a + r.twoSided, 0);
    const sIn = rs.reduce((a, r) => a + r.servedIn, 0);
    const rIn = rs.reduce((a, r) => a + r.refIn, 0);
    console.log(
      `VV ${c}: ${rs.length} expiries; core RMSE served median ${median(rs.map((r) => r.servedRmse)).toFixed(3)} worst ${Math.max(...rs.map((r) => r.servedRmse)).toFixed(3)}; reference median ${median(rs.map((r) => r.refRmse)).toFixed(3)} worst ${Math.max(...rs.map((r) => r.refRmse)).toFixed(3)}; gap median ${median(rs.map((r) => r.gap)).toFixed(3)} worst ${Math.max(...rs.map((r) => r.gap)).toFixed(3)}; inside served ${two ? ((100 * sIn) / two).toFixed(1) : '-'} % reference ${two ? ((100 * rIn) / two).toFixed(1) : '-'} % of ${two}`,
    );
  }
  console.log(`VV reference: ${rows.length} expiries measured, ${noReference} without 5 core quotes; measurement ${(measureMs / 1000).toFixed(1)} s (of which the reference fits ${(referenceMs / 1000).toFixed(1)} s)`);
}, 600_000);

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

  it('its convexity check passes a flat smile and fails a smile with a sharp dip', () => {
    expect(refButterflyCheck(() => 0.6, 0.05, -0.3, 0.3).free).toBe(true);
    expect(refButterflyCheck((k) => 0.6 - 0.3 * Math.exp(-((k / 0.01) ** 2)), 0.05, -0.3, 0.3).free).toBe(false);
    expect(refButterflyCheck(() => Number.NaN, 0.05, -0.3, 0.3).free).toBe(false);
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

describe('issue 26 goals for Vanna-Volga on every real chain and on the simulator', () => {
  // The OKX and Bybit recordings are measured but give no row: their VV expiries have fewer than 5 core quotes (sparse).
  it('measures every chain of spreadObjective.test.ts (3 Deribit, OKX, Bybit) and the simulator', () => {
    for (const c of QUALITY_CHAINS) expect(chainsMeasured).toContain(c.id);
    expect(chainsMeasured).toContain('simulator');
    expect(chainsMeasured.some((x) => x.startsWith('OKX'))).toBe(true);
    expect(chainsMeasured.some((x) => x.startsWith('BYBIT'))).toBe(true);
    expect(rows.length).toBeGreaterThanOrEqual(39);
  });

  it("the reference's minimum is never beaten by the served pillar vols on its own objective (its multi-start reaches the optimum)", () => {
    for (const r of rows) {
      const l = `${key(r)}: reference objective ${r.refObjective} at served pillars ${r.objectiveAtServed} (starts agreeing ${r.agreeing} of 6)`;
      expect(r.refObjective, l).toBeLessThanOrEqual(r.objectiveAtServed * (1 + 1e-9) + 1e-12);
      expect(r.agreeing, l).toBeGreaterThanOrEqual(2);
    }
    const rel = rows.map((r) => (r.objectiveAtServed - r.refObjective) / r.refObjective);
    console.log(`served pillars over the reference optimum on its objective: smallest ${Math.min(...rel).toExponential(2)}, median ${median(rel).toExponential(2)} (relative), within 1e-9 on ${rel.filter((x) => x < 1e-9).length} of ${rel.length} expiries; starts agreeing: fewest ${Math.min(...rows.map((r) => r.agreeing))} of 6`);
  });

  it('core RMSE within 0.05 vp of the reference where the reference is arbitrage-free on the core range; otherwise reported and < 0.5 vp', () => {
    const beyond: string[] = [];
    for (const r of rows) {
      const l = `${key(r)} (T ${(r.T * 365).toFixed(2)} d, ${r.core} core quotes): served ${r.servedRmse.toFixed(3)} ref ${r.refRmse.toFixed(3)} gap ${r.gap.toFixed(3)}`;
      if (r.gap <= 0.05) continue;
      beyond.push(`${l}${r.refFree ? '' : ' (reference not arbitrage-free)'}`);
    }
    console.log(`VV gap > 0.05 vp (${beyond.length}):\n  ${beyond.join('\n  ')}`);
    const near = rows.filter((r) => r.gap > 0.03 && r.gap <= 0.05).map((r) => `${key(r)} gap ${r.gap.toFixed(6)}`);
    console.log(`VV gap within 0.02 vp below the goal (${near.length}): ${near.join('; ') || 'none'}`);
    for (const r of rows) {
      const l = `${key(r)} served ${r.servedRmse.toFixed(3)} ref ${r.refRmse.toFixed(3)} gap ${r.gap.toFixed(3)}`;
      const ex = GAP_EXCEPTIONS.get(key(r));
      if (ex) {
        // a named exception (GAP_EXCEPTIONS): still beyond the goal, within its bound, near its measured figure
        expect(r.gap, `${l}: a stale exception (the goal is met): remove it from GAP_EXCEPTIONS`).toBeGreaterThan(0.05);
        expect(r.gap, l).toBeLessThan(ex.bound);
        expect(Math.abs(r.gap - ex.measured), l).toBeLessThan(0.01);
      } else if (r.refFree) expect(r.gap, l).toBeLessThanOrEqual(0.05);
      else expect(r.gap, l).toBeLessThan(0.5);
    }
    for (const k of GAP_EXCEPTIONS.keys()) expect(rows.map(key), `exception ${k} not measured`).toContain(k);
  });

  it('per chain: share of two-sided core quotes inside [bid IV, ask IV] >= the reference share - 1 point', () => {
    for (const c of chainsMeasured) {
      const rs = rows.filter((r) => r.chain === c);
      const two = rs.reduce((a, r) => a + r.twoSided, 0);
      if (two === 0) continue;
      const nS = rs.reduce((a, r) => a + r.servedIn, 0);
      const nR = rs.reduce((a, r) => a + r.refIn, 0);
      const l = `${c}: served ${nS} / ${two} reference ${nR} / ${two}`;
      const ex = INSIDE_EXCEPTIONS.get(c);
      if (ex) {
        // a named exception (INSIDE_EXCEPTIONS): the measured counts, still short of the goal, within the bound
        expect({ servedIn: nS, refIn: nR, twoSided: two }, l).toEqual({ servedIn: ex.servedIn, refIn: ex.refIn, twoSided: ex.twoSided });
        expect(nS / two, `${l}: a stale exception (the goal is met): remove it from INSIDE_EXCEPTIONS`).toBeLessThan(nR / two - 0.01);
        expect(nS / two, l).toBeGreaterThanOrEqual(nR / two - ex.boundPp / 100);
      } else expect(nS / two, l).toBeGreaterThanOrEqual(nR / two - 0.01);
    }
    for (const k of INSIDE_EXCEPTIONS.keys()) expect(chainsMeasured, `exception ${k} not measured`).toContain(k);
  });
});
