/**
 * HistoryRecorder: writes every cache update (surface snapshot, forward curve, new funding point) to the
 * {@link HistoryStore}, batched (one transaction per HISTORY_FLUSH_MS, default 1 s: the most a crash loses).
 *
 * What is kept and how (docs/operations.md "History"):
 * - every surface and curve, `tier` 1 for the first of each HISTORY_BUCKET_S bucket of observation time per key
 *   (kept for HISTORY_RETENTION_D days), else 0 (kept HISTORY_FULL_H hours; src/history/compaction.ts);
 * - a fit is written once and referred to by id while the served slice keeps it (same parameters, diagnostics and
 *   input count); a fit older than {@link reemitAfterS} is written again under a new id, so that every tier-0
 *   surface refers only to fits at most that old (the compaction's guarantee);
 * - the iVSummary figures of every tier-1 surface (src/cache/history.ts summarizeSurface, the same figures GET
 *   iVSummary answers);
 * - a surface's curve is the forward-curve snapshot its curve object was built in (src/cache/snapshotBuilder.ts
 *   forwardCurveSnapshotOf); it is written with the surface when not written yet (an API replica's surfaces carry
 *   their own curve).
 *
 * The event loop only converts snapshots into rows (a few microseconds per slice) and SQL text; DuckDB commits on
 * its own thread. A failed write is logged and its batch kept for the next flush (nothing is dropped while the
 * store answers); past {@link MAX_PENDING_ROWS} pending rows the oldest are dropped with an error log.
 */
import type { Subscription } from 'rxjs';
import type { Logger } from 'pino';
import type { CacheUpdate, MarketCache } from '../cache/marketCache.js';
import { summarizeSurface } from '../cache/history.js';
import { forwardCurveSnapshotOf } from '../cache/snapshotBuilder.js';
import type { ForwardCurveSnapshot, SurfaceSnapshot } from '../cache/snapshot.js';
import type { FundingRate } from '../domain/events.js';
import { batchSize, emptyBatch, FIT_DIAG_COLUMNS, type FitRow, type HistoryBatch, type HistoryStore, type SurfaceRow } from './store.js';

/** Pending rows past which the oldest batch is dropped (a store that stopped answering for minutes). */
export const MAX_PENDING_ROWS = 2_000_000;

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

/** Whether two fit rows hold the same fit (ids and times aside). */
function sameFit(a: FitRow, b: FitRow): boolean {
  const eq = (x: readonly number[], y: readonly number[]): boolean => x.length === y.length && x.every((v, i) => Object.is(v, y[i]));
  return (
    a.inputCount === b.inputCount &&
    a.paramNames === b.paramNames &&
    a.diagNames === b.diagNames &&
    a.diagRest === b.diagRest &&
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
  batches: number;
  failedBatches: number;
  droppedRows: number;
  lastFlushMs: number;
}

export class HistoryRecorder {
  private batch: HistoryBatch = emptyBatch();
  private retry: HistoryBatch[] = [];
  /** Smallest observation time of the rows recorded and not committed yet (null: everything is committed). */
  private batchFromS: number | null = null;
  private uncommittedFromS: number | null = null;
  private readonly fits = new Map<string, FitMemo>();
  private readonly lastBucket = new Map<string, number>();
  private readonly curvesWritten = new Map<string, string>();
  private readonly sub: Subscription;
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> | null = null;
  private readonly reemitS: number;
  readonly stats: RecorderStats = { surfaces: 0, fits: 0, curves: 0, funding: 0, ivSummary: 0, batches: 0, failedBatches: 0, droppedRows: 0, lastFlushMs: 0 };

  constructor(private readonly o: HistoryRecorderOptions) {
    this.reemitS = reemitAfterS(o.fullH);
    this.sub = o.cache.updates$.subscribe((u) => this.onUpdate(u));
    this.timer = setInterval(() => void this.flush(), o.flushMs);
    this.timer.unref();
  }

  /**
   * Observation time (Unix s) of the oldest surface, curve or funding point recorded but not committed yet, or null:
   * a read of a time before it sees everything (src/history/runtime.ts `sync`).
   */
  oldestUncommittedS(): number | null {
    const a = this.batchFromS;
    const b = this.uncommittedFromS;
    return a === null ? b : b === null ? a : Math.min(a, b);
  }

  private onUpdate(u: CacheUpdate): void {
    const t = u.type === 'funding' ? u.point.timestamp : u.snapshot.observationTimestamp;
    if (this.batchFromS === null || t < this.batchFromS) this.batchFromS = t;
    try {
      if (u.type === 'surface') this.recordSurface(u.snapshot);
      else if (u.type === 'forwardCurve') this.recordCurve(u.snapshot);
      else this.recordFunding(u.point);
    } catch (err) {
      this.o.logger?.error({ err }, 'history: could not record an update');
    }
  }

  /** Whether `obs` opens a new bucket for `key` (and remember it). */
  private firstOfBucket(key: string, obs: number): boolean {
    const b = Math.floor(obs / this.o.bucketS);
    if (this.lastBucket.get(key) === b) return false;
    this.lastBucket.set(key, b);
    return true;
  }

  private recordCurve(c: ForwardCurveSnapshot, tier?: 0 | 1): void {
    const pair = `${c.pair.base}/${c.pair.quote}`;
    const pk = `${c.source}:${pair}`;
    const id = `${c.sequence}@${c.observationTimestamp}`;
    if (this.curvesWritten.get(pk) === id) return;
    this.curvesWritten.set(pk, id);
    const first = this.firstOfBucket(`curve:${pk}`, c.observationTimestamp);
    this.batch.curves.push({
      source: c.source,
      pair,
      sequence: c.sequence,
      obs: c.observationTimestamp,
      tier: tier ?? (first ? 1 : 0),
      spot: c.spot,
      expiries: c.points.map((p) => p.expirationTimestamp),
      T: c.points.map((p) => p.T),
      forwards: c.points.map((p) => p.forward),
      origins: c.points.map((p) => p.origin),
    });
    this.stats.curves++;
  }

  private recordSurface(s: SurfaceSnapshot): void {
    if (s.slices.length === 0) return;
    const pair = `${s.pair.base}/${s.pair.quote}`;
    const key = `${s.source}:${pair}:${s.model}`;
    const tier: 0 | 1 = this.firstOfBucket(key, s.observationTimestamp) ? 1 : 0;
    const curve = forwardCurveSnapshotOf(s.forwardCurve);
    if (curve) this.recordCurve(curve, tier === 1 ? 1 : undefined);
    const fitIds = s.slices.map((sl) => {
      const fk = `${key}:${sl.expirationTimestamp}`;
      const memo = this.fits.get(fk);
      const fresh = memo !== undefined && s.observationTimestamp - memo.row.obs < this.reemitS;
      // the same frozen objects as the last surface's slice: the same fit (a reused slice)
      if (memo && fresh && memo.params === sl.params && memo.fit === sl.fit && memo.row.inputCount === sl.quotes.length) return memo.row.fitId;
      const row = this.fitRow(s, pair, sl);
      if (memo && fresh && sameFit(memo.row, row)) {
        this.fits.set(fk, { row: memo.row, params: sl.params, fit: sl.fit });
        return memo.row.fitId;
      }
      const stored: FitRow = { ...row, fitId: this.o.store.newFitId() };
      this.batch.fits.push(stored);
      this.stats.fits++;
      this.fits.set(fk, { row: stored, params: sl.params, fit: sl.fit });
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
    if (tier === 1) this.recordSummary(s);
  }

  /** The fit row of one served slice (id 0: given when it is written). */
  private fitRow(s: SurfaceSnapshot, pair: string, sl: SurfaceSnapshot['slices'][number]): FitRow {
    const params = Object.entries(sl.params);
    const nums: number[] = [];
    const rest: Record<string, unknown> = {};
    const order: string[] = [];
    let warnings: string | null = null;
    for (const [k, v] of Object.entries(sl.fit)) {
      if (v === undefined) continue;
      order.push(k);
      if (k === 'warnings') warnings = JSON.stringify(v);
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
      diagWarnings: warnings,
    };
  }

  private recordSummary(s: SurfaceSnapshot): void {
    this.batch.ivSummary.push({ source: s.source, pair: `${s.pair.base}/${s.pair.quote}`, model: s.model, sequence: s.sequence, summary: summarizeSurface(s) });
    this.stats.ivSummary++;
  }

  private recordFunding(p: FundingRate): void {
    this.batch.funding.push({
      source: p.source,
      instrumentId: p.instrumentId,
      timestamp: p.timestamp,
      interest: p.interest,
      base: p.base,
      quote: p.quote,
      intervalHours: p.intervalHours,
    });
    this.stats.funding++;
  }

  /**
   * Record a surface that was served before this process's cache saw it (the simulator's pre-run history): written
   * like a live one.
   */
  recordPast(s: SurfaceSnapshot): void {
    this.onUpdate({ type: 'surface', snapshot: s });
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
          let pending = this.retry.reduce((n, b) => n + batchSize(b), 0);
          while (pending > MAX_PENDING_ROWS && this.retry.length > 1) {
            const dropped = this.retry.shift()!;
            pending -= batchSize(dropped);
            this.stats.droppedRows += batchSize(dropped);
            this.o.logger?.error({ rows: batchSize(dropped) }, 'HISTORY STORE NOT WRITABLE: oldest pending rows dropped');
          }
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

  /** Stop recording, commit what is pending. */
  async close(): Promise<void> {
    this.sub.unsubscribe();
    clearInterval(this.timer);
    await this.flush();
  }
}
