/**
 * The tracking tolerance of issue 22, tested continuously: while the marks drift, jump and get noisy, the surfaces the
 * incremental fitter serves (src/quant/chain/chainFitter.ts: expiries confirmed without a refit while the refit gate
 * of src/quant/chain/sliceGate.ts says a refit would move them by less than the tolerance, refitted warm otherwise)
 * must stay within eps = max(0.05 vol pt, 10 % of the quote's half-spread in IV) of a COLD fit of the quotes of that
 * instant (a fresh memory, every expiry fitted from scratch: the reference), at every quote and on a grid of
 * log-moneyness |k| <= 1, for SVI, SABR and Vanna-Volga.
 *
 * Paths:
 * - the three real recorded Deribit BTC chains (2026-05-26 19:27Z and 18:30Z, 2020-05-14), moved step by step (one
 *   step = one 250 ms recalibration window) by processes written here: a random walk of each expiry's level (0.01 vol
 *   pt per step), a random walk of the forward with the marks sticky to their strikes (2 bp per step: every
 *   log-moneyness moves), half of the options re-marked each step with fresh noise (0.005 vol pt: Deribit prints
 *   mark IVs to 0.01 vol pt), their bid and ask moved with the mark, and one expiry's jump of 1 vol pt;
 * - the simulator's own market (adapters/simulator/history.ts, seed 11: its processes of spot, ATM level, skew, curvature
 *   and per-option mark noise, its own listing), printed second by second.
 * The gate must also earn its keep: most expiries are confirmed, not refitted.
 */
import { describe, expect, it } from 'vitest';
import { prepareSimulatedHistory, TwinMarketPrinter } from '../../adapters/simulator/history.js';
import type { OptionQuote } from '../../src/domain/events.js';
import type { ChainFit } from '../../src/domain/chainFit.js';
import type { ChainView } from '../../src/domain/chainView.js';
import { fitChain } from '../../src/quant/chain/chainFit.js';
import { ChainFitter } from '../../src/quant/chain/chainFitter.js';
import { FitMemory } from '../../src/quant/chain/fitMemory.js';
import { sliceTotalVariance } from '../../src/quant/chain/modelSurface.js';
import { TRACKING_K_RANGE, TRACKING_MIN_VOL_PTS, trackingToleranceIv } from '../../src/quant/chain/sliceGate.js';
import { replayChainView } from './chainQuality.js';

/** Seeded uniform [0, 1) (mulberry32) and standard normal (Box-Muller). */
function rng(seed: number): { u: () => number; n: () => number } {
  let a = seed >>> 0;
  const u = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { u, n: () => Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u()) };
}

/** The gaps of one comparison: |served - cold| / eps at every quote and grid point of every slice and model. */
interface Gaps {
  ratios: number[];
  worst: { ratio: number; where: string };
  /** Diagnostics: ratios by where (inside / outside the quoted range) and by what was served (refitted / confirmed). */
  by: Record<string, number[]>;
}

/** Compare the served fit with the cold fit of the same view (module docstring). */
function compare(served: ChainFit, cold: ChainFit, out: Gaps, step: number): void {
  for (const mc of cold.models) {
    const ms = served.models.find((m) => m.model === mc.model)!;
    for (const c of mc.slices) {
      const s = ms.slices.find((x) => x.expirationTimestamp === c.expirationTimestamp);
      if (!s) continue;
      const ws = sliceTotalVariance(mc.model, s);
      const wc = sliceTotalVariance(mc.model, c);
      const iv = (w: (k: number) => number, T: number, k: number) => Math.sqrt(Math.max(w(k), 0) / T);
      const points: Array<{ k: number; tol: number }> = c.quotes.map((q) => ({ k: q.k, tol: trackingToleranceIv(q.bidIv, q.askIv) }));
      const kq = c.quotes.map((q) => q.k);
      for (let j = 0; j <= 20; j++) {
        const k = -TRACKING_K_RANGE + (2 * TRACKING_K_RANGE * j) / 20;
        let tol = TRACKING_MIN_VOL_PTS / 100;
        if (kq.length > 0 && k >= Math.min(...kq) && k <= Math.max(...kq)) {
          let best = 0;
          for (let i = 1; i < kq.length; i++) if (Math.abs(kq[i]! - k) < Math.abs(kq[best]! - k)) best = i;
          tol = points[best]!.tol;
        }
        points.push({ k, tol });
      }
      const confirmed = (s.fit.fittedAt ?? served.observationTimestamp) < served.observationTimestamp;
      for (const p of points) {
        const r = Math.abs(iv(ws, s.T, p.k) - iv(wc, c.T, p.k)) / p.tol;
        const inside = kq.length > 0 && p.k >= Math.min(...kq) && p.k <= Math.max(...kq);
        (out.by[`${inside ? 'in' : 'out'}-${confirmed ? 'confirmed' : 'refitted'}`] ??= []).push(r);
        out.ratios.push(r);
        if (r > out.worst.ratio) out.worst = { ratio: r, where: `step ${step} ${mc.model} expiry ${c.expirationTimestamp} (T ${c.T.toFixed(4)}, ${c.quotes.length} quotes, served ${s.fit.status}) k ${p.k.toFixed(3)}: ${(100 * Math.abs(iv(ws, s.T, p.k) - iv(wc, c.T, p.k))).toFixed(3)} vp vs eps ${(100 * p.tol).toFixed(3)}` };
      }
    }
  }
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.min(s.length - 1, Math.floor(q * (s.length - 1)))]!;
};

/** Run a path of views through the incremental fitter, comparing each step with a cold fit; returns the gaps and the work done. */
function track(views: readonly ChainView[]): { gaps: Gaps; refitted: number; confirmed: number; byModel: Record<string, { refitted: number; confirmed: number }> } {
  const fitter = new ChainFitter();
  const gaps: Gaps = { ratios: [], worst: { ratio: 0, where: '' }, by: {} };
  let refitted = 0;
  let confirmed = 0;
  const byModel: Record<string, { refitted: number; confirmed: number }> = {};
  views.forEach((v, i) => {
    const served = fitter.fit(i === 0 ? { ...v, full: true } : { ...v, full: false, changedExpiries: [...new Set(v.options.map((o) => o.expirationTimestamp))] });
    if (i > 0) {
      for (const [model, w] of Object.entries(served.sliceWork ?? {})) {
        refitted += w!.refitted;
        confirmed += w!.confirmed;
        const b = (byModel[model] ??= { refitted: 0, confirmed: 0 });
        b.refitted += w!.refitted;
        b.confirmed += w!.confirmed;
      }
      compare(served, fitChain({ ...v, full: true }, {}, new FitMemory()), gaps, i);
    }
  });
  return { gaps, refitted, confirmed, byModel };
}

/** A real chain moved by the processes of the module docstring, `steps` views after the recorded one. */
function realPath(id: Parameters<typeof replayChainView>[0], steps: number, seed: number): ChainView[] {
  const r = rng(seed);
  const v0 = replayChainView(id);
  const expiries = [...new Set(v0.options.map((o) => o.expirationTimestamp))].sort((a, b) => a - b);
  const level = new Map(expiries.map((e) => [e, 0]));
  const jumpExpiry = expiries[Math.floor(expiries.length / 2)]!;
  let current: OptionQuote[] = [...v0.options];
  const shifts = new Float64Array(current.length);
  let logF = 0;
  const views: ChainView[] = [v0];
  for (let s = 1; s <= steps; s++) {
    logF += 0.0002 * r.n();
    for (const e of expiries) level.set(e, level.get(e)! + 0.0001 * r.n() + (s === Math.floor(steps / 2) && e === jumpExpiry ? 0.01 : 0));
    const t = v0.observationTimestamp + s * 0.25;
    current = current.map((o, i) => {
      const base = v0.options[i]!;
      const F = base.forward * Math.exp(logF);
      // re-marked half the time (the expiry's level and fresh noise); the others keep their mark (sticky to their
      // strike) but see the new forward
      const remark = r.u() < 0.5;
      if (remark) shifts[i] = level.get(o.expirationTimestamp)! + 0.00005 * r.n();
      const shift = shifts[i]!;
      return {
        ...o,
        forward: F,
        markIv: base.markIv + shift,
        bidIv: base.bidIv !== null && base.bidIv > 0 ? base.bidIv + shift : base.bidIv,
        askIv: base.askIv !== null && base.askIv > 0 ? base.askIv + shift : base.askIv,
        timestamp: remark ? t : o.timestamp,
      };
    });
    views.push({ ...v0, observationTimestamp: t, options: current, version: v0.version + s });
  }
  return views;
}

/** Print the figures (the closing note and docs/operations.md quote them). */
function report(label: string, gaps: Gaps, refitted: number, confirmed: number): void {
  const lines = [`tracking ${label}: ${gaps.ratios.length} points, |served - cold| / eps p50 ${quantile(gaps.ratios, 0.5).toFixed(3)} p99 ${quantile(gaps.ratios, 0.99).toFixed(3)} max ${gaps.worst.ratio.toFixed(3)} (${gaps.worst.where}); slices refitted ${refitted}, confirmed ${confirmed}`];
  for (const [k, v] of Object.entries(gaps.by).sort()) lines.push(`  ${k}: ${v.length} points, p99 ${quantile(v, 0.99).toFixed(3)}, max ${Math.max(...v).toFixed(3)}`);
  console.log(lines.join('\n'));
}

/**
 * The assertions: over every point of the check grid (the quotes and |k| <= 1) p99 within eps (most points are
 * refitted slices, equal to the cold fit); on CONFIRMED slices (the gate's own decisions) never beyond eps, inside the
 * quoted range and beyond it.
 */
function assertTracking(gaps: Gaps): void {
  expect(quantile(gaps.ratios, 0.99), gaps.worst.where).toBeLessThanOrEqual(1);
  for (const bucket of ['in-confirmed', 'out-confirmed']) {
    const xs = gaps.by[bucket] ?? [];
    expect(xs.length === 0 ? 0 : Math.max(...xs), `${bucket}: ${gaps.worst.where}`).toBeLessThanOrEqual(1);
  }
}

describe('tracking tolerance: served surfaces within eps of a cold fit while the marks move', () => {
  it.each([
    ['maksm05', 101],
    ['pitspa', 202],
    ['schepal', 303],
  ] as const)('real chain %s with drift, forward moves, noise and a jump', (id, seed) => {
    const { gaps, refitted, confirmed } = track(realPath(id, 24, seed));
    report(id, gaps, refitted, confirmed);
    assertTracking(gaps);
    expect(confirmed).toBeGreaterThan(0);
  }, 240_000);

  it("the simulator's market, second by second", () => {
    const now = Date.UTC(2026, 10, 27, 12, 0, 0);
    const h = prepareSimulatedHistory({ seed: 11, hours: 0.01, stepS: 1, everyS: 1, clock: () => now, sources: ['DERIBIT'] });
    const printer = new TwinMarketPrinter(h.spec);
    const start = Math.round((now - h.spec.startMs) / 1000 / h.spec.stepS);
    const views: ChainView[] = [];
    for (let s = 0; s <= 24; s++) views.push(printer.viewsAt(start + s).find((v) => v.pair.base === 'BTC')!);
    const { gaps, refitted, confirmed, byModel } = track(views);
    report('simulator', gaps, refitted, confirmed);
    console.log(`  by model: ${JSON.stringify(byModel)}`);
    assertTracking(gaps);
    // the gate earns its keep: at the simulator's pace a good share of the SVI slices (the gated model: SABR and
    // Vanna-Volga are refitted on any change, trackingGate false; expiries under 2 days too) are confirmed
    const svi = byModel.SVI!;
    expect(svi.confirmed).toBeGreaterThan(0.15 * (svi.confirmed + svi.refitted));
  }, 240_000);
});
