/**
 * Compaction of the history store (issue 24 "resolution and size you can reason about"): behind the newest data,
 * - rows older than HISTORY_FULL_H hours keep only tier 1 (the first surface and curve of each HISTORY_BUCKET_S
 *   bucket per key; src/history/recorder.ts); iVSummary points are tier 1 by construction;
 * - rows older than HISTORY_RETENTION_D days are deleted; funding points are kept (one an hour per perpetual: the
 *   live service holds months of them, and so must an as-of answer);
 * - a fit is deleted when no kept surface can refer to it: tier-1 surfaces are checked by an anti-join; a tier-0
 *   surface refers only to fits at most `reemitAfterS` older than itself (the recorder writes an older fit again),
 *   so no kept tier-0 surface refers to a fit older than the full-resolution cut minus that age;
 * - a curve older than the full-resolution cut is deleted unless a kept tier-1 surface refers to it (its
 *   (source, pair, sequence, observation time)), or it is tier 1 itself.
 * All in one transaction (serialized with the writes), then CHECKPOINT: DuckDB reuses the freed blocks, so the file
 * stops growing once the retention is full (it does not shrink).
 *
 * `nowS` is the newest observation time (the service clock), never the machine's wall clock, so a replay of last
 * month compacts against last month.
 */
import type { HistoryStore } from './store.js';
import { reemitAfterS } from './recorder.js';

/** What one compaction deleted (rows per table) and how long it took. */
export interface CompactionResult {
  readonly surfaces: number;
  readonly fits: number;
  readonly curves: number;
  readonly ivSummary: number;
  readonly ms: number;
}

/** Options of {@link compact}. */
export interface CompactionOptions {
  /** Reference time, Unix s (the newest data). */
  readonly nowS: number;
  readonly fullH: number;
  readonly retentionD: number;
}

/** Run one compaction (see module docstring). @throws whatever DuckDB throws (the transaction is rolled back) */
export async function compact(store: HistoryStore, o: CompactionOptions): Promise<CompactionResult> {
  const t0 = performance.now();
  const fullCut = Math.min(o.nowS - o.fullH * 3600, o.nowS);
  const keepCut = o.nowS - o.retentionD * 86400;
  const fitCut = fullCut - reemitAfterS(o.fullH) - 60;
  const r = await store.transaction(async () => ({
    surfaces: await store.run('DELETE FROM surfaces WHERE obs < $1 AND (tier = 0 OR obs < $2)', [fullCut, keepCut]),
    ivSummary: await store.run('DELETE FROM iv_summary WHERE obs < $1', [keepCut]),
    fits: await store.run('DELETE FROM fits WHERE obs < $1 AND fit_id NOT IN (SELECT unnest(fit_ids) FROM surfaces WHERE tier = 1)', [fitCut]),
    curves: await store.run(
      `DELETE FROM forward_curves c WHERE c.obs < $1 AND (c.tier = 0 OR c.obs < $2) AND NOT EXISTS
         (SELECT 1 FROM surfaces s WHERE s.tier = 1 AND s.source = c.source AND s.pair = c.pair AND s.sequence = c.sequence AND s.obs = c.obs)`,
      [fullCut, keepCut],
    ),
  }));
  if (r.ivSummary > 0) store.ivSummaryVersions.deletedBefore(keepCut);
  if (r.surfaces + r.fits + r.curves + r.ivSummary > 0) await store.serialized(() => store.run('CHECKPOINT'));
  return { ...r, ms: performance.now() - t0 };
}
