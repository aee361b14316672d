/**
 * Incremental refits (issue 12 item 1, src/quant/chain/chainFit.ts): on the real recorded Deribit chains, a view that is
 * not `full` refits only the expiries whose inputs changed, warm; every other expiry reuses its last fit carried to
 * the new T. The served surfaces must equal a COLD fit of the same view (a fresh FitMemory, every expiry fitted from
 * scratch) within the tracking tolerance's floor (0.05 vol point, issue 22; it was 0.01 before the refit gate) at
 * every quote and on a log-moneyness grid, for SVI, SABR and Vanna-Volga.
 * The cold fit is the reference: it is what the service served before incremental refits existed.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { normalizeDeribit } from '../../adapters/deribit/normalize.js';
import type { OptionQuote } from '../../src/domain/events.js';
import { buildModelSurface } from '../../src/quant/chain/modelSurface.js';
import { ChainState, type ChainView } from '../../streams/chainState.js';
import { buildSnapshots } from '../../src/cache/snapshotBuilder.js';
import { ChainFitter } from '../../src/quant/chain/chainFitter.js';
import { FitMemory } from '../../src/quant/chain/fitMemory.js';
import { fitChain } from '../../src/quant/chain/chainFit.js';
import type { ChainFit } from '../../src/domain/chainFit.js';
import { MODEL_REGISTRY } from '../../src/quant/models/index.js';
import { TRACKING_MIN_VOL_PTS } from '../../src/quant/chain/sliceGate.js';
import type { VolatilityModel } from '../../src/domain/volatilityModels.js';

const FILES = ['data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl', 'data/replay/deribit-btc-chain-2020-05-14T0541Z.jsonl'];

/** A chain state holding the recorded chain, and its option quotes by instrument. */
function loadState(file: string): { st: ChainState; options: OptionQuote[] } {
  const st = new ChainState('DERIBIT', PAIR);
  const options: OptionQuote[] = [];
  for (const line of readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = normalizeDeribit(JSON.parse(line), 0);
    if (!r.ok) continue;
    for (const e of r.events) {
      if (e.kind === 'option') options.push(e);
      if (e.kind === 'option' || e.kind === 'future' || e.kind === 'index') st.apply(e);
    }
  }
  return { st, options };
}

/** Largest |served IV difference| (vol points) between two fits, over every quote and a k grid of every slice. */
function maxGapVolPts(a: ChainFit, b: ChainFit): { gap: number; where: string } {
  let gap = 0;
  let where = '';
  for (const ma of a.models) {
    const mb = b.models.find((m) => m.model === ma.model)!;
    expect(mb.slices.map((s) => s.expirationTimestamp)).toEqual(ma.slices.map((s) => s.expirationTimestamp));
    const sa = buildModelSurface(ma.model, ma.slices);
    const sb = buildModelSurface(mb.model, mb.slices);
    for (const s of ma.slices) {
      const ks = [...s.quotes.map((q) => q.k), ...Array.from({ length: 41 }, (_, i) => -1 + i / 20)];
      for (const k of ks) {
        const d = 100 * Math.abs(sa.impliedVolAtLogMoneyness(s.T, k) - sb.impliedVolAtLogMoneyness(s.T, k));
        if (d > gap) {
          gap = d;
          where = `${ma.model} expiry ${s.expirationTimestamp} k ${k.toFixed(3)}`;
        }
      }
    }
  }
  return { gap, where };
}

/** The chains' pair. */
const PAIR = { base: 'BTC', quote: 'USD' } as const;

/** Expiries of a fit (5 quotes or more: sparse ones are not in the per-expiry memory) whose T moved by more than the model's limit over `dtS`. */
function movedBeyondLimit(fit: ChainFit, model: VolatilityModel, dtS: number): number {
  const svi = fit.models.find((m) => m.model === 'SVI')!;
  return svi.slices.filter((s) => s.quotes.length > 4 && dtS / (s.T * 365 * 86400 + dtS) > MODEL_REGISTRY[model].reuseMaxTChange).length;
}

/** The cold fit of a view: a fresh memory, every expiry fitted from scratch. */
const cold = (view: ChainView): ChainFit => fitChain({ ...view, full: true }, {}, new FitMemory());

describe.each(FILES)('incremental refits on %s', (file) => {
  it('one expiry re-marked: only it is refitted (warm), the served surfaces equal a cold fit within 0.05 vp', () => {
    const { st, options } = loadState(file);
    const fitter = new ChainFitter();
    const v1 = st.view();
    expect(v1.full).toBe(true);
    fitter.fit(v1);
    // re-mark the middle expiry's options by +-0.3 vol point (alternating), 2 s later
    const expiries = [...new Set(options.map((o) => o.expirationTimestamp))].sort((x, y) => x - y);
    const target = expiries[Math.floor(expiries.length / 2)]!;
    let j = 0;
    for (const o of options.filter((x) => x.expirationTimestamp === target)) {
      st.apply({ ...o, markIv: o.markIv + (j++ % 2 ? 0.003 : -0.003), timestamp: o.timestamp + 2, receivedAt: o.receivedAt + 2 });
    }
    const v2 = st.view(v1.version);
    expect(v2.full).toBe(false);
    expect(v2.changedExpiries).toEqual([target]);
    const inc = fitter.fit(v2);
    const memory = fitter.memoryOf('DERIBIT', PAIR)!;
    for (const model of ['SVI', 'SABR', 'VANNA_VOLGA'] as const) {
      const pass = memory.lastPass.get(model)!;
      // the re-marked expiry, plus (SVI) a sparse-mode slice that borrows its shape from it when one follows, plus
      // the expiries whose T moved beyond the model's reuse limit in these 2 s
      const moved = movedBeyondLimit(inc, model, 2);
      if (model !== 'VANNA_VOLGA') expect(moved, model).toBe(0);
      expect(pass.refitted, model).toBeGreaterThanOrEqual(1);
      expect(pass.refitted, model).toBeLessThanOrEqual(2 + moved);
      expect(pass.warm, model).toBe(pass.refitted);
      expect(pass.reused, model).toBeGreaterThanOrEqual(expiries.length - 3 - moved);
    }
    const { gap, where } = maxGapVolPts(inc, cold(v2));
    expect(gap, where).toBeLessThan(TRACKING_MIN_VOL_PTS);
  });

  it.each([1, 60, 600])("nothing re-marked, T moves on (%i s later): reused while T moved little (under the model's limit), else refitted warm; equal to a cold fit within 0.05 vp", (dtS) => {
    const { st } = loadState(file);
    const fitter = new ChainFitter();
    const v1 = st.view();
    fitter.fit(v1);
    // the observation time (and so every T) moves on, no quote changes
    const later: ChainView = { ...st.view(v1.version), observationTimestamp: v1.observationTimestamp + dtS, full: false, changedExpiries: [] };
    const inc = fitter.fit(later);
    const memory = fitter.memoryOf('DERIBIT', PAIR)!;
    const svi = inc.models.find((m) => m.model === 'SVI')!;
    for (const model of ['SVI', 'SABR', 'VANNA_VOLGA'] as const) {
      const moved = movedBeyondLimit(inc, model, dtS);
      const pass = memory.lastPass.get(model)!;
      expect(pass.refitted, model).toBe(moved);
      expect(pass.warm, model).toBe(moved);
      if (dtS === 1 && model !== 'VANNA_VOLGA') expect(moved).toBe(0);
    }
    const { gap, where } = maxGapVolPts(inc, cold(later));
    expect(gap, where).toBeLessThan(TRACKING_MIN_VOL_PTS);
    // a reused slice says when it was actually fitted
    for (const s of svi.slices) {
      if (s.quotes.length > 4) expect(s.fit.fittedAt).toBe(dtS / (s.T * 365 * 86400 + dtS) <= MODEL_REGISTRY.SVI.reuseMaxTChange ? v1.observationTimestamp : later.observationTimestamp);
    }
  });

  it('snapshots share the frozen quote lists of unchanged slices with the previous snapshot, never of a changed one', () => {
    const { st, options } = loadState(file);
    const fitter = new ChainFitter();
    const v1 = st.view();
    const r1 = buildSnapshots(fitter.fit(v1), 1);
    const expiries = [...new Set(options.map((o) => o.expirationTimestamp))].sort((x, y) => x - y);
    const target = expiries[Math.floor(expiries.length / 2)]!;
    for (const o of options.filter((x) => x.expirationTimestamp === target)) st.apply({ ...o, markIv: o.markIv + 0.003, timestamp: o.timestamp + 1, receivedAt: o.receivedAt + 1 });
    const fit2 = fitter.fit(st.view(v1.version));
    const r2 = buildSnapshots(fit2, 2, r1);
    const unshared = buildSnapshots(fit2, 2);
    let shared = 0;
    for (const s2 of r2.surfaces) {
      const s1 = r1.surfaces.find((s) => s.model === s2.model)!;
      const u = unshared.surfaces.find((s) => s.model === s2.model)!;
      for (const sl of s2.slices) {
        const before = s1.slices.find((x) => x.expirationTimestamp === sl.expirationTimestamp)!;
        expect(sl.quotes === before.quotes, `${s2.model} ${sl.expirationTimestamp}`).toBe(sl.expirationTimestamp !== target);
        if (sl.quotes === before.quotes) shared++;
        expect(Object.isFrozen(sl.quotes)).toBe(true);
        // what is served is the same as a snapshot built without sharing
        expect(sl.quotes).toEqual(u.slices.find((x) => x.expirationTimestamp === sl.expirationTimestamp)!.quotes);
      }
    }
    expect(shared).toBeGreaterThanOrEqual(3 * (expiries.length - 3));
  });

  it('a full view refits every expiry cold', () => {
    const { st } = loadState(file);
    const fitter = new ChainFitter();
    const v1 = st.view();
    fitter.fit(v1);
    fitter.fit({ ...st.view(v1.version), full: true });
    const memory = fitter.memoryOf('DERIBIT', PAIR)!;
    for (const model of ['SVI', 'SABR', 'VANNA_VOLGA'] as const) {
      const pass = memory.lastPass.get(model)!;
      expect(pass.reused, model).toBe(0);
      expect(pass.warm, model).toBe(0);
      expect(pass.refitted, model).toBeGreaterThan(5);
    }
  });
});

describe('calendar-ceiling wing repairs in incremental refits (real chain 2026-05-26 19:27Z)', () => {
  it('a repair whose two fits are unchanged is served again, carried, not refitted (equal to a fresh repair); a refitted neighbour refits it', () => {
    const { st, options } = loadState(FILES[0]!);
    const fitter = new ChainFitter();
    const v1 = st.view();
    const first = fitter.fit(v1);
    // the recorded chain has a slice whose extrapolated wing had to be kept under the next expiry's
    const svi = first.models.find((m) => m.model === 'SVI')!;
    const i = svi.slices.findIndex((s) => s.fit.method.includes('calendar ceiling'));
    expect(i).toBeGreaterThanOrEqual(0);
    const repairedAt = svi.slices[i]!.expirationTimestamp;
    const nextAt = svi.slices[i + 1]!.expirationTimestamp;
    const memory = fitter.memoryOf('DERIBIT', PAIR)!;
    expect(memory.lastPass.get('SVI')).toMatchObject({ ceilingRefitted: expect.any(Number), ceilingReused: 0 });

    // re-mark an expiry away from that pair, 2 s later: the repair is reused, carried to the new T
    const far = svi.slices.find((s, j) => Math.abs(j - i) > 2 && s.quotes.length > 4)!.expirationTimestamp;
    const remark = (expiry: number, dIv: number, dtS: number): void => {
      let j = 0;
      for (const o of options.filter((x) => x.expirationTimestamp === expiry)) {
        st.apply({ ...o, markIv: o.markIv + (j++ % 2 ? dIv : -dIv), timestamp: o.timestamp + dtS, receivedAt: o.receivedAt + dtS });
      }
    };
    remark(far, 0.003, 2);
    const v2 = st.view(v1.version);
    // the same view fitted by a twin memory that forgets its repairs: the reference (a fresh warm repair)
    const twin = new ChainFitter();
    twin.fit(v1);
    for (const m of twin.memoryOf('DERIBIT', PAIR)!.wingRepairs.values()) m.clear();
    const fresh = twin.fit(v2);
    const inc = fitter.fit(v2);
    expect(memory.lastPass.get('SVI')!.ceilingReused).toBeGreaterThanOrEqual(1);
    const served = inc.models.find((m) => m.model === 'SVI')!.slices.find((s) => s.expirationTimestamp === repairedAt)!;
    expect(served.fit.status).toBe('repaired');
    expect(served.fit.method).toContain('calendar ceiling');
    const { gap, where } = maxGapVolPts(inc, fresh);
    expect(gap, where).toBeLessThan(1e-3);
    expect(maxGapVolPts(inc, cold(v2)).gap).toBeLessThan(TRACKING_MIN_VOL_PTS);

    // re-mark the next expiry (its fit changes): the repair of the slice before it is refitted
    remark(nextAt, 0.003, 4);
    const v3 = st.view(v2.version);
    const inc3 = fitter.fit(v3);
    const pass3 = memory.lastPass.get('SVI')!;
    expect(pass3.ceilingRefitted).toBeGreaterThanOrEqual(1);
    expect(maxGapVolPts(inc3, cold(v3)).gap).toBeLessThan(TRACKING_MIN_VOL_PTS);
  });
});
