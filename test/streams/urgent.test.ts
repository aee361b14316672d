/**
 * Urgent partial refits (issue 12, freshness): a mark that moved by at least the urgency threshold against the mark
 * its expiry was last refitted to is refitted at once, alone, without waiting for the throttle; every other expiry
 * keeps its last fit until the next regular recalibration. Checked on the real recorded Deribit chain:
 * - ChainState says which expiries are urgent, measured against the last view that refitted them (so a slow drift
 *   becomes urgent once it adds up to the threshold), and never while a full fit is due;
 * - the fitter refits only those expiries; the urgent expiry's served smile equals a COLD fit of the same data
 *   within 0.01 vol point, the deferred ones keep their earlier fit (and say so in fittedAt), and the next regular
 *   view refits them, equal to a cold fit of the whole chain within 0.01 vol point;
 * - the pipeline publishes the urgent refit (one, for a burst of frames) after the 5 ms coalescing window, long before
 *   the throttle elapses (fake timers: no wall clock), does nothing
 *   for a move under the threshold until the throttle elapses, and with the threshold off waits for the throttle.
 */
import { readFileSync } from 'node:fs';
import { Subject } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { normalizeDeribit } from '../../adapters/deribit/normalize.js';
import { buildModelSurface } from '../../src/quant/chain/modelSurface.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { MarketClock } from '../../src/domain/clock.js';
import type { FutureQuote, IndexPrice, MarketEvent, OptionQuote } from '../../src/domain/events.js';
import { ChainFitter } from '../../src/quant/chain/chainFitter.js';
import { FitMemory } from '../../src/quant/chain/fitMemory.js';
import { fitChain } from '../../src/quant/chain/chainFit.js';
import type { ChainFit, ExpirySlice } from '../../src/domain/chainFit.js';
import { ChainState, smoothedMoveVolPts, type ChainView } from '../../streams/chainState.js';
import { startPipelines, URGENT_COALESCE_MS } from '../../streams/pipeline.js';
import { FitWithdrawnError } from '../../streams/calibrationPool.js';
import { Rng } from '../../adapters/simulator/rng.js';

const FILE = 'data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl';
const PAIR = { base: 'BTC', quote: 'USD' } as const;
type ChainEvent = OptionQuote | FutureQuote | IndexPrice;

/** The recorded chain's option, future and index events, in file order. */
function loadEvents(): ChainEvent[] {
  const out: ChainEvent[] = [];
  for (const line of readFileSync(new URL(`../../${FILE}`, import.meta.url), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = normalizeDeribit(JSON.parse(line), 0);
    if (!r.ok) continue;
    for (const e of r.events) if (e.kind === 'option' || e.kind === 'future' || e.kind === 'index') out.push(e);
  }
  return out;
}

const optionsOf = (events: readonly ChainEvent[]): OptionQuote[] => events.filter((e): e is OptionQuote => e.kind === 'option');

/** Expiries with many quotes, ascending (the ones fitted on their own, not in a sparse mode). */
function fullExpiries(options: readonly OptionQuote[]): number[] {
  const n = new Map<number, number>();
  for (const o of options) n.set(o.expirationTimestamp, (n.get(o.expirationTimestamp) ?? 0) + 1);
  return [...n].filter(([, c]) => c >= 30).map(([e]) => e).sort((a, b) => a - b);
}

/** The options of `expiry` re-marked by `dVol` (fraction), `dtS` seconds later. */
const remark = (options: readonly OptionQuote[], expiry: number, dVol: number, dtS: number): OptionQuote[] =>
  options.filter((o) => o.expirationTimestamp === expiry).map((o) => ({ ...o, markIv: o.markIv + dVol, timestamp: o.timestamp + dtS, receivedAt: o.receivedAt + dtS }));

/** Largest |served IV difference| (vol points) of two fits on the given expiries, at every quote and for |k| <= 1. */
function gapVolPts(a: ChainFit, b: ChainFit, expiries: readonly number[]): number {
  let gap = 0;
  for (const ma of a.models) {
    const mb = b.models.find((m) => m.model === ma.model)!;
    const sa = buildModelSurface(ma.model, ma.slices);
    const sb = buildModelSurface(mb.model, mb.slices);
    for (const s of ma.slices) {
      if (!expiries.includes(s.expirationTimestamp)) continue;
      for (const k of [...s.quotes.map((q) => q.k), ...Array.from({ length: 41 }, (_, i) => -1 + i / 20)]) {
        gap = Math.max(gap, 100 * Math.abs(sa.impliedVolAtLogMoneyness(s.T, k) - sb.impliedVolAtLogMoneyness(s.T, k)));
      }
    }
  }
  return gap;
}

const cold = (view: ChainView): ChainFit => fitChain({ ...view, full: true, refitOnly: undefined }, {}, new FitMemory());

describe('ChainState urgency', () => {
  const events = loadEvents();
  // the state's final quote of each instrument (the recording has several ticks of some): re-marking those moves each
  // instrument by exactly the amount asked, with no intermediate state in between
  const options = [...new Map(optionsOf(events).map((o) => [o.instrument, o])).values()];
  const [e1, e2, e3] = [fullExpiries(options)[2]!, fullExpiries(options)[4]!, fullExpiries(options)[6]!];

  it("an expiry is urgent once its smile moved >= the threshold against the marks of its last refit; one mark's noise is not a move", () => {
    const st = new ChainState('DERIBIT', PAIR, { urgentVolPts: 0.25 });
    for (const e of events) st.apply(e);
    // nothing fitted yet: a full fit is due, nothing can be urgent
    for (const o of remark(options, e3, 0.01, 1)) st.apply(o);
    expect(st.hasUrgent(0)).toBe(false);
    const v1 = st.view();
    expect(v1.full).toBe(true);
    expect(st.urgentView(v1.version)).toBeNull();
    // one mark of a 30+ quote expiry re-marked by 0.6 vol point: idiosyncratic, the smoothed move is small
    const one = options.filter((o) => o.expirationTimestamp === e1).sort((a, b) => a.strike - b.strike)[10]!;
    st.apply({ ...one, markIv: one.markIv + 0.006, timestamp: one.timestamp + 2 });
    expect(st.hasUrgent(v1.version)).toBe(false);
    // every mark of e2 re-drawn with independent noise of 0.2 vol point (as the simulator re-draws its mark noise):
    // more than a fifth of them move by the threshold or more, the expiry is not urgent
    const z = new Rng(7);
    const noisy = remark(options, e2, 0, 2).map((o) => ({ ...o, markIv: o.markIv + 0.002 * z.normal() }));
    expect(noisy.filter((o, i) => Math.abs(o.markIv - remark(options, e2, 0, 2)[i]!.markIv) >= 0.0025).length).toBeGreaterThan(noisy.length / 5);
    for (const o of noisy) st.apply(o);
    expect(st.hasUrgent(v1.version)).toBe(false);
    // a slow parallel drift of e1 (0.05 vol point a step) becomes urgent once it adds up to the threshold
    for (const o of remark(options, e1, 0.0005, 3)) st.apply(o);
    for (const o of remark(options, e1, 0.001, 4)) st.apply(o);
    expect(st.hasUrgent(v1.version)).toBe(false);
    for (const o of remark(options, e1, 0.003, 5)) st.apply(o);
    expect(st.hasUrgent(v1.version)).toBe(true);
    // a wing move: e3's lowest third of strikes marked down 0.8 vol point, the rest unchanged
    const e3Strikes = [...new Set(options.filter((o) => o.expirationTimestamp === e3).map((o) => o.strike))].sort((a, b) => a - b);
    const wingTop = e3Strikes[Math.floor(e3Strikes.length / 3)]!;
    for (const o of remark(options, e3, 0, 6)) st.apply(o.strike < wingTop ? { ...o, markIv: o.markIv - 0.008 } : o);
    const u = st.urgentView(v1.version)!;
    expect(u.refitOnly).toEqual([e1, e3].sort((a, b) => a - b));
    expect(u.full).toBe(false);
    // handed to a view: no longer urgent, and the new marks are the reference
    expect(st.hasUrgent(v1.version)).toBe(false);
    for (const o of remark(options, e1, 0.004, 7)) st.apply(o);
    expect(st.hasUrgent(v1.version)).toBe(false);
    for (const o of remark(options, e1, 0.006, 8)) st.apply(o);
    expect(st.hasUrgent(v1.version)).toBe(true);
    // a regular view covers every expiry
    st.view(v1.version);
    expect(st.hasUrgent(v1.version)).toBe(false);
    // a full fit due (e.g. after a reconnect) is never replaced by a partial one
    for (const o of remark(options, e1, -0.01, 9)) st.apply(o);
    st.requireFull(st.version);
    expect(st.hasUrgent(v1.version)).toBe(false);
    expect(st.urgentView(v1.version)).toBeNull();
  });

  it('a small expiry: one edge strike re-marked (call and put) is not a move, all of them are; a tilt is urgent whatever order its ticks arrive in', () => {
    // an expiry of 5 strikes (10 quotes): the recorded first expiry's 5 strikes nearest the forward
    const first = options.filter((o) => o.expirationTimestamp === fullExpiries(options)[0]!);
    const F = first[0]!.forward;
    const five = [...new Set(first.map((o) => o.strike))].sort((a, b) => Math.abs(a - F) - Math.abs(b - F)).slice(0, 5).sort((a, b) => a - b);
    const small = first.filter((o) => five.includes(o.strike));
    expect(small).toHaveLength(10);
    const st = new ChainState('DERIBIT', PAIR, { urgentVolPts: 0.25 });
    for (const e of events) if (e.kind !== 'option' || small.includes(e)) st.apply(e);
    const v1 = st.view();
    const at = (o: OptionQuote, dVol: number, dt: number): OptionQuote => ({ ...o, markIv: o.markIv + dVol, timestamp: o.timestamp + dt });
    // the top strike's call and put up 0.3 vol point: the linear fit through 5 strikes gives it 0.18
    for (const o of small) if (o.strike === five[4]) st.apply(at(o, 0.003, 1));
    expect(st.hasUrgent(v1.version)).toBe(false);
    // every strike up 0.3 vol point
    for (const o of small) st.apply(at(o, 0.003, 2));
    expect(st.hasUrgent(v1.version)).toBe(true);

    // a tilt of e1 (+-0.3 vol point at its outermost strikes), its ticks in order of decreasing move: the few that move
    // by the threshold come first, when the smoothed move of the expiry is still under it; ticks that each move less
    // than the threshold complete it
    const big = new ChainState('DERIBIT', PAIR, { urgentVolPts: 0.25 });
    for (const e of events) big.apply(e);
    const w1 = big.view();
    const e1Quotes = options.filter((o) => o.expirationTimestamp === e1);
    const ks = e1Quotes.map((o) => Math.log(o.strike / o.forward));
    const [lo, hi] = [Math.min(...ks), Math.max(...ks)];
    const tilt = (o: OptionQuote): number => 0.003 * ((2 * (Math.log(o.strike / o.forward) - lo)) / (hi - lo) - 1);
    const ticks = [...e1Quotes].sort((a, b) => Math.abs(tilt(b)) - Math.abs(tilt(a)));
    let urgentAfter = -1;
    ticks.forEach((o, i) => {
      big.apply(at(o, tilt(o), 3));
      if (urgentAfter < 0 && big.hasUrgent(w1.version)) urgentAfter = i;
    });
    const bigTicks = ticks.filter((o) => Math.abs(tilt(o)) >= 0.0025).length;
    expect(bigTicks).toBeGreaterThan(0);
    expect(urgentAfter).toBeGreaterThanOrEqual(bigTicks);
    expect(big.hasUrgent(w1.version)).toBe(true);
  });

  it('smoothedMoveVolPts: a parallel shift and a tilt pass whole, a single mark is damped, degenerate inputs are safe', () => {
    const k = Array.from({ length: 30 }, (_, i) => -0.6 + (1.2 * i) / 29);
    // parallel shift: exactly the shift; a linear tilt: its largest end
    expect(smoothedMoveVolPts(k, k.map(() => 0.7))).toBeCloseTo(0.7, 12);
    expect(smoothedMoveVolPts(k, k.map((x) => 0.5 * x))).toBeCloseTo(0.3, 12);
    // a quadratic (butterfly) move is reproduced exactly
    expect(smoothedMoveVolPts(k, k.map((x) => x * x))).toBeCloseTo(0.36, 12);
    // one mark of 30 moved by 1 vol point: the quadratic least-squares leverage of that point, well under 1
    const spike = k.map((_, i) => (i === 15 ? 1 : 0));
    const smoothed = smoothedMoveVolPts(k, spike);
    expect(smoothed).toBeGreaterThan(0);
    expect(smoothed).toBeLessThan(0.2);
    // few quotes: linear from 4, the mean below 4; one strike (call and put): the mean
    expect(smoothedMoveVolPts([-0.1, 0, 0.1, 0.2], [1, 1, 1, 1])).toBeCloseTo(1, 12);
    expect(smoothedMoveVolPts([-0.1, 0.1], [1, 0])).toBeCloseTo(0.5, 12);
    expect(smoothedMoveVolPts([0.05, 0.05], [0.4, 0.2])).toBeCloseTo(0.3, 12);
    expect(smoothedMoveVolPts([], [])).toBe(0);
  });

  it('off by default, and rejects a negative threshold', () => {
    const st = new ChainState('DERIBIT', PAIR);
    for (const e of events) st.apply(e);
    const v1 = st.view();
    for (const o of remark(options, e1, 0.05, 1)) st.apply(o);
    expect(st.hasUrgent(v1.version)).toBe(false);
    expect(() => new ChainState('DERIBIT', PAIR, { urgentVolPts: -1 })).toThrow(RangeError);
  });
});

describe('urgent partial refit on the real chain', () => {
  const events = loadEvents();
  const options = optionsOf(events);
  const expiries = fullExpiries(options);
  const target = expiries[Math.floor(expiries.length / 2)]!;
  const drifting = expiries[1]!;

  it('refits only the urgent expiry (equal to a cold fit within 0.01 vp); the drifting one keeps its fit until the next regular view', () => {
    const st = new ChainState('DERIBIT', PAIR, { urgentVolPts: 0.25 });
    for (const e of events) st.apply(e);
    const fitter = new ChainFitter();
    const v1 = st.view();
    fitter.fit(v1);
    // a parallel shift of +2 vol points on one expiry; 0.1 vol point of drift on another
    for (const o of remark(options, drifting, 0.001, 2)) st.apply(o);
    for (const o of remark(options, target, 0.02, 2)) st.apply(o);
    const u = st.urgentView(v1.version)!;
    expect(u.refitOnly).toEqual([target]);
    const partial = fitter.fit(u);
    const memory = fitter.memoryOf('DERIBIT', PAIR)!;
    for (const model of ['SVI', 'SABR', 'VANNA_VOLGA'] as const) {
      const pass = memory.lastPass.get(model)!;
      // the drifting expiry; Vanna-Volga also defers the expiries whose T moved beyond its (tight) reuse limit
      if (model === 'VANNA_VOLGA') expect(pass.deferred, model).toBeGreaterThanOrEqual(1);
      else expect(pass.deferred, model).toBe(1);
      expect(pass.refitted, model).toBe(1);
    }
    const reference = cold(u);
    // the urgent expiry is served as a cold fit of its new marks would serve it
    expect(gapVolPts(partial, reference, [target])).toBeLessThan(0.01);
    // it moved by about the shift
    const svi = partial.models.find((m) => m.model === 'SVI')!;
    const sTarget = svi.slices.find((s) => s.expirationTimestamp === target)!;
    expect(sTarget.fit.fittedAt).toBe(u.observationTimestamp);
    const atmBefore = buildModelSurface('SVI', cold(v1).models.find((m) => m.model === 'SVI')!.slices).impliedVolAtLogMoneyness(sTarget.T, 0);
    const atmAfter = buildModelSurface('SVI', svi.slices).impliedVolAtLogMoneyness(sTarget.T, 0);
    expect(100 * (atmAfter - atmBefore)).toBeGreaterThan(1.8);
    expect(100 * (atmAfter - atmBefore)).toBeLessThan(2.2);
    // the drifting expiry was not refitted: it says when it was
    const sDrift = svi.slices.find((s) => s.expirationTimestamp === drifting)!;
    expect(sDrift.fit.fittedAt).toBe(v1.observationTimestamp);

    // the next regular view refits the deferred expiry: the whole chain equals a cold fit
    const v2 = st.view(v1.version);
    expect(v2.refitOnly).toBeUndefined();
    const regular = fitter.fit(v2);
    expect(fitter.memoryOf('DERIBIT', PAIR)!.lastPass.get('SVI')!.deferred).toBe(0);
    expect(regular.models.find((m) => m.model === 'SVI')!.slices.find((s) => s.expirationTimestamp === drifting)!.fit.fittedAt).toBe(v2.observationTimestamp);
    expect(gapVolPts(regular, cold(v2), expiries)).toBeLessThan(0.01);
  });
});

describe('pipeline: urgent moves are published before the throttle elapses', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const THROTTLE_MS = 60_000;

  /** The recorded chain, its expiries with many quotes, and the one the tests shift. */
  function chain() {
    const events = loadEvents();
    const options = optionsOf(events);
    const expiries = fullExpiries(options);
    return { events, options, expiries, target: expiries[Math.floor(expiries.length / 2)]! };
  }

  /** Pipelines on fake timers (no wall clock), fitting in this thread unless `fit` is given. */
  function run(urgentVolPts: number, fit?: (view: ChainView, signal?: AbortSignal) => Promise<ChainFit>, fullRefitEveryMs = 3_600_000) {
    // (performance.now, which times the periodic safety net, is faked only when a test sets that period)
    const timers = ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] as const;
    vi.useFakeTimers({ toFake: fullRefitEveryMs < 3_600_000 ? [...timers, 'performance'] : [...timers] });
    const events$ = new Subject<MarketEvent>();
    const cache = new MarketCache(new MarketClock(0), 1e9, [{ source: 'DERIBIT', pair: PAIR }]);
    const silent = { info: () => {}, warn: () => {}, error: () => {} };
    const kinds: string[] = [];
    const p = startPipelines(events$, {
      cache,
      clock: new MarketClock(0),
      throttleMs: THROTTLE_MS,
      logger: silent,
      fullRefitEveryMs,
      urgentVolPts,
      onCalibrated: (r) => kinds.push(r.partial ? 'urgent' : 'regular'),
      ...(fit ? { fit } : {}),
    });
    const svi = () => cache.getSurface('DERIBIT', PAIR, 'SVI');
    return { events$, p, svi, kinds };
  }

  /**
   * A worker the test releases one fit at a time: a fit waits until `land()`, and can be withdrawn (its signal)
   * until then. `outcome` records each fit as it lands or is withdrawn.
   */
  function heldWorker() {
    const fitter = new ChainFitter();
    const views: ChainView[] = [];
    const outcome: string[] = [];
    let release: (() => void) | null = null;
    const fit = (view: ChainView, signal?: AbortSignal): Promise<ChainFit> =>
      new Promise((resolve, reject) => {
        views.push(view);
        signal?.addEventListener('abort', () => {
          outcome.push('withdrawn');
          reject(new FitWithdrawnError());
        });
        release = () => {
          outcome.push(view.refitOnly ? 'urgent' : view.full ? 'full' : 'regular');
          resolve(fitter.fit(view));
        };
      });
    /** Release the fit waiting, and let the promise chain settle. */
    const land = async (): Promise<void> => {
      release!();
      for (let i = 0; i < 5; i++) await Promise.resolve();
    };
    return { fit, views, outcome, land };
  }

  /** A pipeline on a {@link heldWorker} fed the recorded chain: its first (full) fit asked for, not landed yet. */
  function heldPipeline(events: readonly ChainEvent[], fullRefitEveryMs?: number) {
    const worker = heldWorker();
    const r = run(0.25, worker.fit, fullRefitEveryMs);
    for (const e of events) r.events$.next(e);
    vi.advanceTimersByTime(THROTTLE_MS);
    return { worker, ...r };
  }

  it('a +2 vol point shift of one expiry is served at once; a 0.1 vol point drift waits for the throttle', () => {
    const { events, options, expiries, target } = chain();
    const { events$, p, svi, kinds } = run(0.25);
    try {
      for (const e of events) events$.next(e);
      expect(svi()).toBeUndefined();
      vi.advanceTimersByTime(THROTTLE_MS);
      const first = svi()!;
      expect(first.sequence).toBe(1);
      const slice = (s: typeof first) => s.slices.find((x) => x.expirationTimestamp === target)!;
      const atm0 = Math.sqrt(first.surface.totalVariance(slice(first).T, 0) / slice(first).T);

      // the shift (its frames back to back): published once the coalescing window has passed, in ONE urgent refit
      for (const o of remark(options, target, 0.02, 2)) events$.next(o);
      expect(svi()!.sequence).toBe(1);
      vi.advanceTimersByTime(URGENT_COALESCE_MS);
      const after = svi()!;
      expect(after.sequence).toBe(2);
      expect(kinds).toEqual(['regular', 'urgent']);
      expect(100 * (Math.sqrt(after.surface.totalVariance(slice(after).T, 0) / slice(after).T) - atm0)).toBeGreaterThan(1.8);
      expect(p.isSettled()).toBe(false);

      // a drift under the threshold on another expiry: nothing until the throttle elapses
      const seq = after.sequence;
      for (const o of remark(options, expiries[1]!, 0.001, 3)) events$.next(o);
      expect(svi()!.sequence).toBe(seq);
      vi.advanceTimersByTime(THROTTLE_MS);
      expect(svi()!.sequence).toBe(seq + 1);
      expect(kinds[kinds.length - 1]).toBe('regular');
      expect(p.isSettled()).toBe(true);
    } finally {
      p.subscription.unsubscribe();
    }
  });

  it('a shift that arrives while the first (full) fit is in flight is refitted as soon as that fit lands, not at the next throttle', async () => {
    const { events, options, target } = chain();
    const { worker, events$, p, svi } = heldPipeline(events);
    try {
      expect(worker.views.map((v) => v.full)).toEqual([true]);
      // the shift arrives while the full fit is in flight
      for (const o of remark(options, target, 0.02, 2)) events$.next(o);
      vi.advanceTimersByTime(URGENT_COALESCE_MS);
      expect(worker.views.length).toBe(1);
      await worker.land();
      vi.advanceTimersByTime(URGENT_COALESCE_MS);
      expect(worker.views.length).toBe(2);
      expect(worker.views[1]!.refitOnly).toEqual([target]);
      await worker.land();
      expect(svi()!.sequence).toBe(2);
      const s = svi()!.slices.find((x) => x.expirationTimestamp === target)!;
      expect(s.fit.fittedAt).toBe(worker.views[1]!.observationTimestamp);
    } finally {
      p.subscription.unsubscribe();
    }
  });

  it('an urgent refit withdraws the regular fit still waiting for a worker, runs first, and the regular one runs after it', async () => {
    const { events, options, expiries, target } = chain();
    const { worker, events$, p, svi } = heldPipeline(events);
    try {
      await worker.land();
      // a drift under the threshold: the regular fit is asked for and waits for the worker
      for (const o of remark(options, expiries[1]!, 0.001, 2)) events$.next(o);
      vi.advanceTimersByTime(THROTTLE_MS);
      expect(worker.views.length).toBe(2);
      expect(worker.views[1]!.refitOnly).toBeUndefined();
      // the shift: the urgent refit withdraws it and goes first
      for (const o of remark(options, target, 0.02, 3)) events$.next(o);
      vi.advanceTimersByTime(URGENT_COALESCE_MS);
      for (let i = 0; i < 5; i++) await Promise.resolve();
      expect(worker.views.length).toBe(3);
      expect(worker.views[2]!.refitOnly).toEqual([target]);
      await worker.land();
      // then the regular one, taken from the latest state
      expect(worker.views.length).toBe(4);
      expect(worker.views[3]!.refitOnly).toBeUndefined();
      expect(worker.views[3]!.changedExpiries).toEqual(expect.arrayContaining([expiries[1]!, target]));
      await worker.land();
      expect(worker.outcome).toEqual(['full', 'withdrawn', 'urgent', 'regular']);
      expect(svi()!.sequence).toBe(3);
      expect(p.isSettled()).toBe(true);
    } finally {
      p.subscription.unsubscribe();
    }
  });

  it('a regular trigger that finds a move still in its coalescing window refits the move first (urgent), then the regular view', async () => {
    const { events, options, expiries, target } = chain();
    const { worker, events$, p, svi } = heldPipeline(events);
    try {
      await worker.land();
      // a drift under the threshold opens the throttle window; the shift arrives 1 ms before it closes
      for (const o of remark(options, expiries[1]!, 0.001, 2)) events$.next(o);
      vi.advanceTimersByTime(THROTTLE_MS - 1);
      for (const o of remark(options, target, 0.02, 3)) events$.next(o);
      vi.advanceTimersByTime(1);
      // the regular trigger fired first (the shift's coalescing window is still open): the shift goes first
      expect(worker.views.length).toBe(2);
      expect(worker.views[1]!.refitOnly).toEqual([target]);
      await worker.land();
      vi.advanceTimersByTime(URGENT_COALESCE_MS);
      for (let i = 0; i < 5; i++) await Promise.resolve();
      expect(worker.views.length).toBe(3);
      expect(worker.views[2]!.refitOnly).toBeUndefined();
      expect(worker.views[2]!.changedExpiries).toEqual(expect.arrayContaining([expiries[1]!, target]));
      await worker.land();
      expect(worker.outcome).toEqual(['full', 'urgent', 'regular']);
      expect(svi()!.sequence).toBe(3);
      expect(p.isSettled()).toBe(true);
    } finally {
      p.subscription.unsubscribe();
    }
  });

  it("the periodic safety net's full fit withdrawn for an urgent refit is asked again as a full fit (the net is not skipped)", async () => {
    const { events, options, expiries, target } = chain();
    const { worker, events$, p } = heldPipeline(events, 2 * THROTTLE_MS);
    try {
      await worker.land();
      // past the safety net's period, a drift under the threshold: the regular view is the periodic full one
      vi.advanceTimersByTime(2 * THROTTLE_MS);
      for (const o of remark(options, expiries[1]!, 0.001, 2)) events$.next(o);
      vi.advanceTimersByTime(THROTTLE_MS);
      expect(worker.views.length).toBe(2);
      expect(worker.views[1]).toMatchObject({ full: true, periodic: true });
      // the shift: the urgent refit withdraws it and goes first
      for (const o of remark(options, target, 0.02, 3)) events$.next(o);
      vi.advanceTimersByTime(URGENT_COALESCE_MS);
      for (let i = 0; i < 5; i++) await Promise.resolve();
      expect(worker.views[2]!.refitOnly).toEqual([target]);
      await worker.land();
      // then the safety net again, as a full fit of the latest state
      expect(worker.views.length).toBe(4);
      expect(worker.views[3]).toMatchObject({ full: true, periodic: true });
      await worker.land();
      expect(worker.outcome).toEqual(['full', 'withdrawn', 'urgent', 'full']);
      expect(p.isSettled()).toBe(true);
    } finally {
      p.subscription.unsubscribe();
    }
  });

  it('refitAllFull (end of a replay): a full cold fit of the latest state at once; settled only once it is done', async () => {
    const { events } = chain();
    const { worker, p, svi } = heldPipeline(events);
    try {
      await worker.land();
      expect(p.isSettled()).toBe(true);
      p.refitAllFull();
      expect(worker.views.length).toBe(2);
      expect(worker.views[1]!.full).toBe(true);
      expect(p.isSettled()).toBe(false);
      await worker.land();
      expect(p.isSettled()).toBe(true);
      expect(svi()!.sequence).toBe(2);
      // no change since: a trigger now has nothing to fit
      vi.advanceTimersByTime(THROTTLE_MS);
      expect(worker.views.length).toBe(2);
    } finally {
      p.subscription.unsubscribe();
    }
  });

  it('a fit whose snapshots cannot be built (a stored slice its model refuses) fails alone: the last good surface stays, the next fit is served', async () => {
    const { events, options, target } = chain();
    const fitter = new ChainFitter();
    let fits = 0;
    // the second fit's SVI slices lose their parameter `a` (SVI's fromRecord refuses them)
    const fit = async (view: ChainView): Promise<ChainFit> => {
      const f = fitter.fit(view);
      if (++fits !== 2) return f;
      const unreadable = (s: ExpirySlice): ExpirySlice => ({ ...s, params: Object.fromEntries(Object.entries(s.params).filter(([name]) => name !== 'a')) });
      return { ...f, models: f.models.map((m) => (m.model === 'SVI' ? { ...m, slices: m.slices.map(unreadable) } : m)) };
    };
    const { events$, p, svi } = run(0, fit);
    const settle = async () => {
      for (let i = 0; i < 10; i++) await Promise.resolve();
    };
    try {
      for (const e of events) events$.next(e);
      vi.advanceTimersByTime(THROTTLE_MS);
      await settle();
      expect(svi()!.sequence).toBe(1);
      for (const o of remark(options, target, 0.02, 2)) events$.next(o);
      vi.advanceTimersByTime(THROTTLE_MS);
      await settle();
      expect(fits).toBe(2);
      expect(svi()!.sequence).toBe(1);
      for (const o of remark(options, target, 0.03, 2)) events$.next(o);
      vi.advanceTimersByTime(THROTTLE_MS);
      await settle();
      expect(fits).toBe(3);
      // the stream goes on; no sequence number is spent on the fit that failed
      expect(svi()!.sequence).toBe(2);
    } finally {
      p.subscription.unsubscribe();
    }
  });

  it('with the threshold off (0), the shift waits for the throttle', () => {
    const { events, options, target } = chain();
    const { events$, p, svi, kinds } = run(0);
    try {
      for (const e of events) events$.next(e);
      vi.advanceTimersByTime(THROTTLE_MS);
      expect(svi()!.sequence).toBe(1);
      for (const o of remark(options, target, 0.02, 2)) events$.next(o);
      expect(svi()!.sequence).toBe(1);
      vi.advanceTimersByTime(THROTTLE_MS);
      expect(svi()!.sequence).toBe(2);
      expect(kinds).toEqual(['regular', 'regular']);
    } finally {
      p.subscription.unsubscribe();
    }
  });
});
