/**
 * The calibration worker pool (streams/calibrationPool.ts) on the real recorded Deribit BTC chains: pairs are
 * spread over the workers and stay on theirs, the pool's fits are the in-thread fitter's fits (same numbers),
 * a fast pair queued behind a slow one goes first, and the production worker never loads simulator code.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { normalizeDeribit } from '../../adapters/deribit/normalize.js';
import { ChainState, type ChainView } from '../../streams/chainState.js';
import { ChainFitter } from '../../src/quant/chain/chainFitter.js';
import { FitYielded } from '../../src/quant/chain/fitMemory.js';
import type { ChainFit } from '../../src/domain/chainFit.js';
import { CalibrationPool, FitWithdrawnError, defaultPoolSize } from '../../streams/calibrationPool.js';
import { HistoryWorker } from '../../adapters/simulator/historyPool.js';
import type { Pair } from '../../src/domain/markets.js';

/** The chain of a recorded file as `pair`; with `expiries`, only the options of its first that many expiries. */
function chainView(file: string, pair: Pair, expiries = Infinity): ChainView {
  const st = new ChainState('DERIBIT', pair);
  const events = [];
  for (const line of readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = normalizeDeribit(JSON.parse(line), 0);
    if (!r.ok) continue;
    for (const e of r.events) if (e.kind === 'option' || e.kind === 'future' || e.kind === 'index') events.push(e);
  }
  const kept = new Set([...new Set(events.flatMap((e) => (e.kind === 'option' ? [e.expirationTimestamp] : [])))].sort((a, b) => a - b).slice(0, expiries));
  for (const e of events) if (e.kind !== 'option' || kept.has(e.expirationTimestamp)) st.apply(e);
  return st.view();
}

const BIG = 'data/replay/deribit-btc-chain-2026-05-26T1927Z.jsonl'; // 878 options, 11 expiries
const A = chainView(BIG, { base: 'BTC', quote: 'USD' });
// a fast pair: the same chain's first two expiries only (a fit several times quicker than the whole chain's)
const B = chainView(BIG, { base: 'ETH', quote: 'USD' }, 2);
const C = chainView(BIG, { base: 'SOL', quote: 'USDC' });

/** A fit without its wall-clock timings (they differ from run to run). */
function numbers(f: ChainFit): unknown {
  // (the work done, sliceWork, differs by design: a retry reuses what the yielded fit refitted)
  return JSON.parse(JSON.stringify(f, (k, v) => (k === 'calibrationMs' || k === 'sliceWork' ? undefined : v)));
}

/**
 * The same structure and every string equal, numbers within `rel` relative (absolute near 0); the paths that differ.
 * (A slice reused by a later pass is carried through its model's carryForward, exact in exact arithmetic only: SVI's
 * parameters come back within about 1e-11 relative.)
 */
function mismatches(a: unknown, b: unknown, rel: number, path = ''): string[] {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) <= rel * Math.max(1, Math.abs(a), Math.abs(b)) ? [] : [`${path}: ${a} vs ${b}`];
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b ? [] : [`${path}: ${String(a)} vs ${String(b)}`];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].flatMap((k) => mismatches((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], rel, `${path}.${k}`));
}

describe('CalibrationPool', () => {
  const pools: CalibrationPool[] = [];
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close()));
  });

  it('is sized one worker per core minus one, at least one; a bad size is refused', () => {
    expect(defaultPoolSize()).toBeGreaterThanOrEqual(1);
    expect(() => new CalibrationPool({}, 0)).toThrow(RangeError);
    expect(() => new CalibrationPool({}, 1.5)).toThrow(RangeError);
  });

  it('spreads pairs over the workers, keeps each on its worker, and fits exactly as the in-thread fitter', async () => {
    const pool = new CalibrationPool({}, 2);
    pools.push(pool);
    const local = new ChainFitter();
    const [fa, fb] = await Promise.all([pool.fit(A), pool.fit(B)]);
    const st = pool.stats();
    expect(st.workers).toBe(2);
    expect(new Set(Object.values(st.assignment))).toEqual(new Set([0, 1]));
    expect(numbers(fa)).toEqual(numbers(local.fit(A)));
    expect(numbers(fb)).toEqual(numbers(local.fit(B)));
    // the second fit of a pair runs on the same worker, with that pair's memory (same as the local fitter's second fit)
    const fa2 = await pool.fit(A);
    expect(pool.stats().assignment).toEqual(st.assignment);
    expect(numbers(fa2)).toEqual(numbers(local.fit(A)));
    expect(fa.models.find((m) => m.model === 'SVI')!.slices.length).toBe(11);
  });

  /** A one-worker pool that has learnt each pair's fit time, and a recorder of the order in which fits finish. */
  async function warmPool() {
    const pool = new CalibrationPool({}, 1);
    pools.push(pool);
    for (let i = 0; i < 2; i++) for (const v of [A, B, C]) await pool.fit(v);
    const order: string[] = [];
    const tag = (p: Promise<ChainFit>, name: string) => p.then(() => order.push(name));
    return { pool, order, tag };
  }
  const incremental = (v: ChainView): ChainView => ({ ...v, full: false, changedExpiries: [] });
  const urgent = (v: ChainView): ChainView => ({ ...incremental(v), refitOnly: [] });

  it('runs a fast pair queued behind a slow one first (shortest expected fit first)', async () => {
    const { pool, order, tag } = await warmPool();
    const exp = pool.stats().expectedMs;
    expect(exp['live:DERIBIT:ETH/USD']!).toBeLessThan(exp['live:DERIBIT:SOL/USDC']!);
    // A runs at once; C (slow) and B (fast) wait for the worker: B goes before C although queued after it
    await Promise.all([tag(pool.fit(incremental(A)), 'A'), tag(pool.fit(incremental(C)), 'C'), tag(pool.fit(incremental(B)), 'B')]);
    expect(order).toEqual(['A', 'B', 'C']);
  });

  it('a full fit (e.g. after a reconnect) goes before incremental ones in the queue', async () => {
    const { pool, order, tag } = await warmPool();
    // A runs at once; B (fast, incremental) and C (slow, full) wait: C goes first
    await Promise.all([tag(pool.fit(incremental(A)), 'A'), tag(pool.fit(incremental(B)), 'B'), tag(pool.fit({ ...C, full: true }), 'C')]);
    expect(order).toEqual(['A', 'C', 'B']);
  });

  it('an urgent partial fit goes before regular incremental ones, after a full one', async () => {
    const { pool, order, tag } = await warmPool();
    // B runs at once; then the full A, the urgent C, and last the regular B queued before them
    await Promise.all([tag(pool.fit(incremental(B)), 'B'), tag(pool.fit(incremental(B)), 'B2'), tag(pool.fit(urgent(C)), 'C'), tag(pool.fit({ ...A, full: true }), 'A')]);
    expect(order).toEqual(['B', 'A', 'C', 'B2']);
  });

  it("the periodic safety net's full fit does not jump the queue (its data is not stale)", async () => {
    const { pool, order, tag } = await warmPool();
    // A runs at once; the urgent B goes before the periodic full C queued before it
    await Promise.all([tag(pool.fit(incremental(A)), 'A'), tag(pool.fit({ ...C, full: true, periodic: true }), 'C'), tag(pool.fit(urgent(B)), 'B')]);
    expect(order).toEqual(['A', 'B', 'C']);
  });

  it('a fit withdrawn while it waits for the worker is rejected and never runs; a full fit once started runs to its end', async () => {
    const pool = new CalibrationPool({}, 1);
    pools.push(pool);
    await pool.fit(A);
    const running = new AbortController();
    const queued = new AbortController();
    const first = pool.fit(B, undefined, running.signal);
    const second = pool.fit(C, undefined, queued.signal).catch((e: Error) => e);
    running.abort(); // B has started: too late
    queued.abort(); // C still waits: withdrawn
    expect((await first).version).toBe(B.version);
    expect(await second).toBeInstanceOf(FitWithdrawnError);
    expect(pool.stats().queued).toBe(0);
    const aborted = new AbortController();
    aborted.abort();
    await expect(pool.fit(C, undefined, aborted.signal)).rejects.toBeInstanceOf(FitWithdrawnError);
  });

  it('a running regular fit yields its worker to an urgent one at a slice boundary, keeps what it refitted, and its retry equals an unbroken fit', async () => {
    const pool = new CalibrationPool({}, 1);
    pools.push(pool);
    await pool.fit(A);
    await pool.fit(B);
    // every mark of A moved: a regular incremental pass refits all of its expiries (3 models x 11), warm
    const moved: ChainView = { ...incremental(A), options: A.options.map((o) => ({ ...o, markIv: o.markIv + 0.004 })), version: A.version + 1 };
    const order: string[] = [];
    const regular = pool.fit(moved).then(
      () => order.push('regular done'),
      (e: Error) => order.push(e instanceof FitWithdrawnError ? 'regular yielded' : `regular failed: ${e.message}`),
    );
    // queued while that pass runs (the worker has not even read it yet): it asks the pass to yield
    const urgentB = pool.fit(urgent(B)).then(() => order.push('urgent done'));
    await Promise.all([regular, urgentB]);
    expect(order).toEqual(['regular yielded', 'urgent done']);
    expect(pool.stats()).toMatchObject({ yieldRequests: 1, yielded: 1 });
    // asked again, with another urgent fit queued behind it at once: a pair yields at most once in a row (no
    // starvation), so this one runs to its end; the slices refitted before the yield are reused, the rest refitted,
    // and the numbers are those of a fitter that was never interrupted
    const order2: string[] = [];
    const retriedP = pool.fit(moved).then((f) => (order2.push('regular'), f));
    const urgentB2 = pool.fit(urgent(B)).then(() => order2.push('urgent'));
    const [retried] = await Promise.all([retriedP, urgentB2]);
    expect(order2).toEqual(['regular', 'urgent']);
    expect(pool.stats()).toMatchObject({ yieldRequests: 1, yielded: 1 });
    const local = new ChainFitter();
    local.fit(A);
    expect(mismatches(numbers(retried), numbers(local.fit(moved)), 1e-9)).toEqual([]);
    // its own signal aborted while it runs (its pair's urgent refit arrived): a regular incremental fit yields too
    const third: ChainView = { ...moved, options: moved.options.map((o) => ({ ...o, markIv: o.markIv - 0.004 })), version: moved.version + 2 };
    const own = new AbortController();
    const running = pool.fit(third, undefined, own.signal).catch((e: Error) => e);
    own.abort();
    expect(await running).toBeInstanceOf(FitWithdrawnError);
    expect(pool.stats()).toMatchObject({ yieldRequests: 2, yielded: 2 });
    await pool.fit(third);
    // a full or urgent fit is never asked to yield, nor a regular one with nothing behind it that must not wait
    const again: ChainView = { ...moved, options: moved.options.map((o) => ({ ...o, markIv: o.markIv + 0.004 })), version: moved.version + 1 };
    await Promise.all([pool.fit(again), pool.fit(incremental(B))]);
    await Promise.all([pool.fit({ ...A, full: true }), pool.fit(urgent(B))]);
    expect(pool.stats()).toMatchObject({ yieldRequests: 2, yielded: 2 });
  });

  it("the periodic safety net's full fit yields its worker to an urgent one too; a full fit after a start or reconnect does not", async () => {
    const pool = new CalibrationPool({}, 1);
    pools.push(pool);
    await pool.fit(A);
    await pool.fit(B);
    const order: string[] = [];
    const periodic = pool.fit({ ...A, full: true, periodic: true }).then(
      () => order.push('periodic done'),
      (e: Error) => order.push(e instanceof FitWithdrawnError ? 'periodic yielded' : `periodic failed: ${e.message}`),
    );
    const urgentB = pool.fit(urgent(B)).then(() => order.push('urgent done'));
    await Promise.all([periodic, urgentB]);
    expect(order).toEqual(['periodic yielded', 'urgent done']);
    expect(pool.stats()).toMatchObject({ yieldRequests: 1, yielded: 1 });
    // (a completed fit of A: its next fit could be asked to yield again)
    await pool.fit(incremental(A));
    const order2: string[] = [];
    await Promise.all([pool.fit({ ...A, full: true }).then(() => order2.push('full')), pool.fit(urgent(B)).then(() => order2.push('urgent'))]);
    expect(order2).toEqual(['full', 'urgent']);
    expect(pool.stats()).toMatchObject({ yieldRequests: 1, yielded: 1 });
  });

  it('a fit that yields after a whole model leaves the cumulative counts as they were: its retry equals an uninterrupted fit', () => {
    const moved: ChainView = { ...incremental(A), options: A.options.map((o) => ({ ...o, markIv: o.markIv * 1.03 })), version: A.version + 1 };
    const interrupted = new ChainFitter();
    interrupted.fit(A);
    // the 11 SVI slices refit (10 questions), then SABR's first two: yield before SABR's third slice
    let asked = 0;
    expect(() => interrupted.fit(moved, 'live', () => ++asked > 12)).toThrow(FitYielded);
    expect(asked).toBe(13);
    expect(interrupted.memoryOf('DERIBIT', A.pair)!.lastPass.get('SVI')!.refitted).toBe(11);
    const retried = interrupted.fit(moved);
    const plain = new ChainFitter();
    plain.fit(A);
    expect(mismatches(numbers(retried), numbers(plain.fit(moved)), 1e-9)).toEqual([]);
    // a full view never asks
    expect(() => new ChainFitter().fit(A, 'live', () => true)).not.toThrow();
  });

  it('fails queued fits after close', async () => {
    const pool = new CalibrationPool({}, 1);
    const p1 = pool.fit(A).catch((e: Error) => e);
    const p2 = pool.fit(B).catch((e: Error) => e);
    await pool.close();
    expect(String(await p2)).toMatch(/closed/);
    await p1;
    await expect(pool.fit(A)).rejects.toThrow(/closed/);
  });

  it('the history worker stops when idle and comes back for the next seed point, with the same numbers', async () => {
    const w = new HistoryWorker({}, 100);
    try {
      const spec = { seed: 7, startMs: Date.UTC(2026, 4, 26, 0, 0), stepS: 300, sources: ['DERIBIT' as const] };
      const a = await w.fitHistory(spec, 2);
      expect(a.length).toBe(4); // the four Deribit pairs
      for (let i = 0; i < 100 && w.idleStops === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(w.idleStops).toBe(1);
      // a new thread: its twin market steps from the start again to the same path
      const b = await w.fitHistory(spec, 2);
      expect(b.map((f) => f.spot)).toEqual(a.map((f) => f.spot));
      expect(b.map((f) => f.observationTimestamp)).toEqual(a.map((f) => f.observationTimestamp));
    } finally {
      await w.close();
    }
  });

  it('the production calibration worker imports no simulator module', () => {
    const src = readFileSync(new URL('../../streams/calibrationWorker.ts', import.meta.url), 'utf8');
    const imports = [...src.matchAll(/^import .* from '([^']+)'/gm)].map((m) => m[1]!);
    expect(imports).toContain('../src/quant/chain/chainFitter.js');
    // the chain fit and its own imports: none under adapters/simulator or adapters/simulator/history
    const seen = new Set<string>();
    const walk = (url: URL): void => {
      if (seen.has(url.href)) return;
      seen.add(url.href);
      const text = readFileSync(url, 'utf8');
      for (const m of text.matchAll(/^import (?!type )[^;]*? from '(\.[^']+)'/gms)) walk(new URL(m[1]!.replace(/\.js$/, '.ts'), url));
    };
    walk(new URL('../../streams/calibrationWorker.ts', import.meta.url));
    const loaded = [...seen].map((u) => u.replace(/^.*?\/(streams|adapters|src)\//, '$1/'));
    expect(loaded.length).toBeGreaterThan(3);
    expect(loaded.filter((p) => p.includes('simulator') || p.includes('simulatedHistory'))).toEqual([]);
  });
});
