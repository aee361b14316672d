/**
 * The history store's series of {@link ServiceMetrics} (src/metrics/serviceMetrics.ts): the recorder's counters
 * (src/history/recorder.ts RecorderStats), read at scrape time.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { cumulativeCounter, type CumulativeCounts } from './cumulativeCounts.js';

/** What the metrics read of the history recorder (src/history/recorder.ts RecorderStats), at scrape time. */
export interface HistoryStatsLike {
  readonly surfaces: number;
  readonly fits: number;
  readonly curves: number;
  readonly ivSummary: number;
  readonly funding: number;
  readonly failedBatches: number;
  readonly droppedRows: number;
  /** Milliseconds the last flush took (its commit included). */
  readonly lastFlushMs: number;
  /** The store's rendered-day cache of series text (src/history/renderedDays.ts), when there is a store. */
  readonly seriesCache?: { readonly hits: number; readonly misses: number; readonly bytes: number };
}

/** Registers the history series: rows by table, failed writes, dropped rows, last flush duration (absent while `history()` gives null). */
export function registerHistorySeries(registry: Registry, history: () => HistoryStatsLike | null, counts: CumulativeCounts): void {
  const registers = [registry];
  new Counter({
    name: 'volsurf_history_rows_total',
    help: 'Rows the history store was given to write, by table (surfaces, fits, curves, iv_summary, funding)',
    labelNames: ['table'],
    registers,
    collect() {
      const s = history();
      if (!s) return;
      const by = { surfaces: s.surfaces, fits: s.fits, curves: s.curves, iv_summary: s.ivSummary, funding: s.funding };
      for (const [table, n] of Object.entries(by)) counts.add(this, `hrows:${table}`, { table }, n);
    },
  });
  const failed = { name: 'volsurf_history_failed_writes_total', help: 'History store writes that failed (their rows are kept and written again with the next flush)', key: 'hfail' };
  cumulativeCounter(registry, counts, failed, () => history()?.failedBatches ?? null);
  const dropped = { name: 'volsurf_history_dropped_rows_total', help: 'Rows dropped because the history store stayed unwritable past 2 million pending rows', key: 'hdrop' };
  cumulativeCounter(registry, counts, dropped, () => history()?.droppedRows ?? null);
  const hits = { name: 'volsurf_history_series_cache_hits_total', help: 'Whole days of a series answer served from the rendered-day cache (src/history/renderedDays.ts)', key: 'hsch' };
  cumulativeCounter(registry, counts, hits, () => history()?.seriesCache?.hits ?? null);
  const misses = { name: 'volsurf_history_series_cache_misses_total', help: 'Whole days of a series answer rendered by the store (not cached, or written to since)', key: 'hscm' };
  cumulativeCounter(registry, counts, misses, () => history()?.seriesCache?.misses ?? null);
  new Gauge({
    name: 'volsurf_history_series_cache_bytes',
    help: 'Series text kept rendered by day (bounded by HISTORY_SERIES_CACHE_MB)',
    registers,
    collect() {
      this.reset();
      const c = history()?.seriesCache;
      if (c) this.set(c.bytes);
    },
  });
  new Gauge({
    name: 'volsurf_history_last_flush_seconds',
    help: 'Duration of the last history write (one transaction per HISTORY_FLUSH_MS)',
    registers,
    collect() {
      this.reset();
      const s = history();
      if (s) this.set(s.lastFlushMs / 1000);
    },
  });
}
