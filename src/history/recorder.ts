/**
 * HistoryRecorder: writes every cache update (surface snapshot, forward curve, new funding point) to the
 * {@link HistoryStore}, batched (one transaction per HISTORY_FLUSH_MS, default 1 s: the most a crash loses).
 *
 * What is kept and how (docs/operations.md "History"):
 * - every surface and curve with its observation time and the time the service PUBLISHED it (the service clock when
 *   the cache emitted it; for a past recorded later, its observation time): as-of answers select by publication, so
 *   an as-of answer is the one the service gave at that instant, not a surface observed before it but published
 *   after;
 * - `tier` 1 for the first surface of each HISTORY_BUCKET_S bucket of observation time per key (kept for
 *   HISTORY_RETENTION_D days), else 0 (kept HISTORY_FULL_H hours; src/history/compaction.ts);
 * - a fit is written once and referred to by id while the served slice keeps it (same parameters, diagnostics and
 *   input count); a fit older than {@link reemitAfterS} is written again under a new id, so that every tier-0
 *   surface refers only to fits at most that old (the compaction's guarantee);
 * - the iVSummary figures (src/cache/history.ts summarizeSurface, the numbers GET iVSummary answers) of the first
 *   surface of each HISTORY_BUCKET_S bucket and of each {@link MEMORY_HISTORY_BUCKET_S} bucket (the in-memory 24 h
 *   history's points, so that as-of 24 h changes use the point the live ones used);
 * - a surface's curve is the forward-curve snapshot its curve object was built in (src/cache/snapshotBuilder.ts
 *   forwardCurveSnapshotOf); it is written with the surface when not written yet.
 * The live stream and a past recorded later (the simulator's pre-run, a Kafka rebuild: {@link recordPast}) keep
 * separate bucket, curve and fit memories, so that interleaving them changes neither. Live updates observed at or
 * before the newest surface the store held of their key when it opened are skipped (an API replica re-reads its
 * compacted topics at start: they are stored already).
 *
 * The event loop converts snapshots into rows (a few microseconds per slice) and appends the fits (DuckDB's
 * appender); the other rows cross as SQL text that DuckDB parses and commits on its own thread. A failed write is
 * logged and its rows kept for the next flush; past {@link MAX_PENDING_ROWS} pending rows the oldest are dropped
 * (error log, counted) and the memories cleared, so that later surfaces write their fits and curves again.
 */
import type { Subscription } from 'rxjs';
import type { Logger } from 'pino';
import type { CacheUpdate, MarketCache } from '../cache/marketCache.js';
import { summarizeSurface } from '../cache/history.js';
import { forwardCurveSnapshotOf } from '../cache/snapshotBuilder.js';
import type { ForwardCurveSnapshot, SurfaceSnapshot } from '../cache/snapshot.js';
import type { FundingRate } from '../domain/events.js';
import { batchSize, emptyBatch, FIT_DIAG_COLUMNS, type FitRow, type HistoryBatch, type HistoryStore, type SurfaceRow } from './store.js';

/** Pending rows past which the oldest batch is dropped (a store unwritable for minutes; about 500 bytes a row). */
export const MAX_PENDING_ROWS = 200_000;
/** The in-memory 24 h history's bucket (src/cache/history.ts SurfaceHistory default), seconds. */
export const MEMORY_HISTORY_BUCKET_S = 300;

/** Options of {@link HistoryRecorder}. */
export interface HistoryRecorderOptions {
  readonly store: HistoryStore;
  readonly cache: MarketCache;
  /** Bucket of the long-kept tier, seconds (HISTORY_BUCKET_S). */
  readonly bucketS: number;
  /** Hours every row is kept (HISTORY_FULL_H): decides {@link reemitAfterS}. */
  readonly fullH: number;
  /** Milliseconds between flushes (HISTORY_FLUSH_MS). */
  readonly flushMs: number;
  /** Per key `SOURCE:BASE/QUOTE:MODEL`, the newest observation time the store held when it opened: live updates up to it are skipped. */
  readonly storedUpTo?: ReadonlyMap<string, number>;
  readonly logger?: Logger;
}

/** Age (s) past which a still-served fit is written again: min(1 h, half the full-resolution window), at least 60 s. */
export function reemitAfterS(fullH: number): number {
  return Math.max(60, Math.min(3600, (fullH * 3600) / 2));
}

/** The last fit written for a (key, expiry), and the slice objects it was written from. */
interface FitMemo {
  readonly row: FitRow;
  readonly params: object;
  readonly fit: object;
}

/** What one stream of updates (live, or a past recorded later) remembers between updates. */
interface StreamMemory {
  readonly fits: Map<string, FitMemo>;
  /** Last bucket seen per key and bucket size. */
  readonly lastBucket: Map<string, number>;
  /** Last curve written per pair (`sequence@obs`). */
  readonly curvesWritten: Map<string, string>;
}

const newMemory = (): StreamMemory => ({ fits: new Map(), lastBucket: new Map(), curvesWritten: new Map() });

/** Whether two fit rows hold the same fit (ids and times aside). */
function sameFit(a: FitRow, b: FitRow): boolean {
  const eq = (x: readonly number[], y: readonly number[]): boolean => x.length === y.length && x.every((v, i) => Object.is(v, y[i]));
  return (
    a.inputCount === b.inputCount &&
    a.paramNames === b.paramNames &&
    a.diagNames === b.diagNames &&
    a.diagRest === b.diagRest &&
    a.diagMethod === b.diagMethod &&
    a.diagWarnings === b.diagWarnings &&
    eq(a.params, b.params) &&
    eq(a.diagValues, b.diagValues)
  );
}

/** Counters of the recorder (metrics, tests). */
export interface RecorderStats {
  surfaces: number;
  fits: number;
  curves: number;
  funding: number;
  ivSummary: number;
  /** Live updates skipped as stored already (observed before the store's newest surface of their key at open). */
  skipped: number;
  batches: number;
  failedBatches: number;
  droppedRows: number;
  lastFlushMs: number;
}

/**
 * Records `cache.updates$` (and pasts given to {@link HistoryRecorder.recordPast}) into the store, one transaction per
 * `flushMs` (module docstring). Never throws from an update: a row that cannot be built is logged and skipped.
 */
export class HistoryRecorder {
  private batch: HistoryBatch = emptyBatch();
  private retry: HistoryBatch[] = [];
  /** Smallest publication time of the rows recorded and not committed yet (null: everything is committed). */
  private batchFromS: number | null = null;
  private uncommittedFromS: number | null = null;
  private live: StreamMemory = newMemory();
  private past: StreamMemory = newMemory();
  private readonly sub: Subscription;
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> | null = null;
  private readonly reemitS: number;
  readonly stats: RecorderStats = { surfaces: 0, fits: 0, curves: 0, funding: 0, ivSummary: 0, skipped: 0, batches: 0, failedBatches: 0, droppedRows: 0, lastFlushMs: 0 };

  constructor(private readonly o: HistoryRecorderOptions) {
    this.reemitS = reemitAfterS(o.fullH);
    this.sub = o.cache.updates$.subscribe((u) => this.onUpdate(u, this.live, o.cache.clock.now()));
    this.timer = setInterval(() => void this.flush(), o.flushMs);
    this.timer.unref();
  }

  /**
   * Publication time (Unix s, service clock) of the oldest row recorded but not committed yet, or null: a read as of
   * a time before it sees everything that was published then (src/history/runtime.ts `sync`).
   */
  oldestUncommittedS(): number | null {
    const a = this.batchFromS;
    const b = this.uncommittedFromS;
    return a === null ? b : b === null ? a : Math.min(a, b);
  }

  private onUpdate(u: CacheUpdate, mem: StreamMemory, published: number): void {
    try {
      if (u.type === 'surface') this.recordSurface(u.snapshot, mem, published);
      else if (u.type === 'forwardCurve') this.recordCurve(u.snapshot, mem, published);
      else this.recordFunding(u.point, published);
      if (this.batchFromS === null || published < this.batchFromS) this.batchFromS = published;
    } catch (err) {
      this.o.logger?.error({ err: (err as Error).message }, 'history: could not record an update');
    }
  }

  /** Whether `obs` opens a new `bucketS` bucket for `key` in `mem` (and remember it). */
  private firstOfBucket(mem: StreamMemory, key: string, obs: number, bucketS: number): boolean {
    const k = `${bucketS}:${key}`;
    const b = Math.floor(obs / bucketS);
    if (mem.lastBucket.get(k) === b) return false;
    mem.lastBucket.set(k, b);
    return true;
  }

  private recordCurve(c: ForwardCurveSnapshot, mem: StreamMemory, published: number, tier?: 0 | 1): void {
    const pair = `${c.pair.base}/${c.pair.quote}`;
    const pk = `${c.source}:${pair}`;
    const id = `${c.sequence}@${c.observationTimestamp}`;
    if (mem.curvesWritten.get(pk) === id) return;
    mem.curvesWritten.set(pk, id);
    const first = this.firstOfBucket(mem, `curve:${pk}`, c.observationTimestamp, this.o.bucketS);
    this.batch.curves.push({
      source: c.source,
      pair,
      sequence: c.sequence,
      obs: c.observationTimestamp,
      published,
      tier: tier ?? (first ? 1 : 0),
      spot: c.spot,
      expiries: c.points.map((p) => p.expirationTimestamp),
      T: c.points.map((p) => p.T),
      forwards: c.points.map((p) => p.forward),
      origins: c.points.map((p) => p.origin),
    });
    this.stats.curves++;
  }

  private recordSurface(s: SurfaceSnapshot, mem: StreamMemory, published: number): void {
    if (s.slices.length === 0) return;
    const pair = `${s.pair.base}/${s.pair.quote}`;
    const key = `${s.source}:${pair}:${s.model}`;
    const storedUpTo = mem === this.live ? this.o.storedUpTo?.get(key) : undefined;
    if (storedUpTo !== undefined && s.observationTimestamp <= storedUpTo) {
      this.stats.skipped++;
      return;
    }
    const tier: 0 | 1 = this.firstOfBucket(mem, key, s.observationTimestamp, this.o.bucketS) ? 1 : 0;
    const memoryPoint = this.firstOfBucket(mem, key, s.observationTimestamp, MEMORY_HISTORY_BUCKET_S);
    const curve = forwardCurveSnapshotOf(s.forwardCurve);
    if (curve) this.recordCurve(curve, mem, published, tier === 1 ? 1 : undefined);
    const fitIds = s.slices.map((sl) => {
      const fk = `${key}:${sl.expirationTimestamp}`;
      const memo = mem.fits.get(fk);
      const fresh = memo !== undefined && Math.abs(s.observationTimestamp - memo.row.obs) < this.reemitS;
      // the same frozen objects as the last surface's slice: the same fit (a reused slice)
      if (memo && fresh && memo.params === sl.params && memo.fit === sl.fit && memo.row.inputCount === sl.quotes.length) return memo.row.fitId;
      const row = this.fitRow(s, pair, sl);
      if (memo && fresh && sameFit(memo.row, row)) {
        mem.fits.set(fk, { row: memo.row, params: sl.params, fit: sl.fit });
        return memo.row.fitId;
      }
      const stored: FitRow = { ...row, fitId: this.o.store.newFitId() };
      this.batch.fits.push(stored);
      this.stats.fits++;
      mem.fits.set(fk, { row: stored, params: sl.params, fit: sl.fit });
      return stored.fitId;
    });
    const counts = s.arbitrage?.counts as Record<string, number> | undefined;
    // counts as a placeholder keeps the field's place; its values go to countValues
    const arbitrage = s.arbitrage ? JSON.stringify({ ...s.arbitrage, counts: null }) : null;
    const row: SurfaceRow = {
      source: s.source,
      pair,
      model: s.model,
      sequence: s.sequence,
      obs: s.observationTimestamp,
      published,
      tier,
      spot: s.spot,
      calibrationMs: s.calibrationMs,
      expiries: s.slices.map((sl) => sl.expirationTimestamp),
      T: s.slices.map((sl) => sl.T),
      forwards: s.slices.map((sl) => sl.forward),
      fitIds,
      arbitrage,
      countNames: counts ? Object.keys(counts).join(',') : '',
      countValues: counts ? Object.values(counts) : [],
      skipped: s.skipped ? JSON.stringify(s.skipped) : null,
    };
    this.batch.surfaces.push(row);
    this.stats.surfaces++;
    if (tier === 1 || memoryPoint) {
      this.batch.ivSummary.push({ source: s.source, pair, model: s.model, sequence: s.sequence, summary: summarizeSurface(s) });
      this.stats.ivSummary++;
    }
  }

  /** The fit row of one served slice (id 0: given when it is written). */
  private fitRow(s: SurfaceSnapshot, pair: string, sl: SurfaceSnapshot['slices'][number]): FitRow {
    const params = Object.entries(sl.params);
    const nums: number[] = [];
    const rest: Record<string, unknown> = {};
    const order: string[] = [];
    let warnings: string | null = null;
    let method: string | null = null;
    for (const [k, v] of Object.entries(sl.fit)) {
      if (v === undefined) continue;
      order.push(k);
      if (k === 'warnings') warnings = JSON.stringify(v);
      else if (k === 'method' && typeof v === 'string') method = v;
      else if (typeof v === 'number' && Number.isFinite(v) && nums.length < FIT_DIAG_COLUMNS) nums.push(v);
      else rest[k] = v;
    }
    return {
      fitId: 0,
      source: s.source,
      pair,
      model: s.model,
      expiry: sl.expirationTimestamp,
      obs: s.observationTimestamp,
      inputCount: sl.quotes.length,
      paramNames: params.map(([k]) => k).join(','),
      params: params.map(([, v]) => v),
      // every field in order: the numeric ones take their values from diagValues in turn, `warnings` its column
      diagNames: order.join(','),
      diagValues: nums,
      diagRest: JSON.stringify(rest),
      diagMethod: method,
      diagWarnings: warnings,
    };
  }

  private recordFunding(p: FundingRate, published: number): void {
    this.batch.funding.push({
      source: p.source,
      instrumentId: p.instrumentId,
      timestamp: p.timestamp,
      interest: p.interest,
      base: p.base,
      quote: p.quote,
      intervalHours: p.intervalHours,
      published,
    });
    this.stats.funding++;
  }

  /**
   * Record a surface served before this process's cache saw it (the simulator's pre-run history, a Kafka rebuild):
   * written like a live one, published at its observation time, with a memory of its own.
   */
  recordPast(s: SurfaceSnapshot): void {
    this.onUpdate({ type: 'surface', snapshot: s }, this.past, s.observationTimestamp);
  }

  /** Commit everything recorded so far; resolves when committed (or when the write failed and was kept for retry). */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    const batches = [...this.retry];
    this.retry = [];
    if (batchSize(this.batch) > 0) batches.push(this.batch);
    this.batch = emptyBatch();
    const from = this.oldestUncommittedS();
    this.batchFromS = null;
    this.uncommittedFromS = from;
    if (batches.length === 0) {
      this.uncommittedFromS = null;
      return Promise.resolve();
    }
    const t0 = performance.now();
    this.flushing = (async () => {
      for (let i = 0; i < batches.length; i++) {
        try {
          await this.o.store.write(batches[i]!);
          this.stats.batches++;
        } catch (err) {
          this.stats.failedBatches++;
          this.o.logger?.error({ err: String(err) }, 'history: write failed; the batch is kept for the next flush');
          this.retry.push(...batches.slice(i));
          this.batchFromS = this.batchFromS === null ? from : Math.min(this.batchFromS, from ?? Infinity);
          this.dropPastLimit();
          break;
        }
      }
      this.stats.lastFlushMs = performance.now() - t0;
    })().finally(() => {
      this.uncommittedFromS = null;
      this.flushing = null;
    });
    return this.flushing;
  }

  /** Drop the oldest pending batches past MAX_PENDING_ROWS; clear the memories (later surfaces write their fits again). */
  private dropPastLimit(): void {
    let pending = this.retry.reduce((n, b) => n + batchSize(b), 0) + batchSize(this.batch);
    let dropped = 0;
    while (pending > MAX_PENDING_ROWS && this.retry.length > 0) {
      const b = this.retry.shift()!;
      pending -= batchSize(b);
      dropped += batchSize(b);
    }
    if (dropped === 0) return;
    this.stats.droppedRows += dropped;
    // a fit or curve in a dropped batch may still be referred to by the memories: forget them
    this.live = newMemory();
    this.past = newMemory();
    this.o.logger?.error({ rows: dropped, pending }, 'HISTORY STORE NOT WRITABLE: oldest pending rows dropped');
  }

  /** Stop recording, commit what is pending. */
  async close(): Promise<void> {
    this.sub.unsubscribe();
    clearInterval(this.timer);
    await this.flush();
  }
}
