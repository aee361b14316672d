/**
 * Configuration of the history store (docs/operations.md "History"): where the database file lives and what
 * resolution is kept for how long. Merged into src/config.ts's schema.
 */
import { z } from 'zod';

export const HISTORY_CONFIG_SHAPE = {
  /**
   * Folder of the history database (`history.duckdb` inside); created when missing. `off` runs without a store
   * (no as-of answers, no series; the iVSummary 24 h changes come from memory only). Relative paths are taken
   * from the working directory. One process at a time may open a store: a second one logs an error and runs
   * without.
   */
  HISTORY_DIR: z.string().min(1).default('data/history'),
  /** Hours behind the newest data during which every published surface, curve and summary is kept. */
  HISTORY_FULL_H: z.coerce.number().min(0).max(24 * 30).default(24),
  /** Beyond HISTORY_FULL_H: one surface (and its curve and iVSummary figures) per this many seconds per key. */
  HISTORY_BUCKET_S: z.coerce.number().int().min(1).max(86400).default(60),
  /** Days kept at all; older rows are deleted by the compaction. */
  HISTORY_RETENTION_D: z.coerce.number().positive().max(3650).default(30),
  /** Milliseconds between two batched writes (the most a crash can lose). */
  HISTORY_FLUSH_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  /**
   * Megabytes of series text kept rendered by whole UTC day (src/history/renderedDays.ts): a month of 1-minute points
   * of one key and constant maturity is about 11.4 MB of JSON. 0 keeps none (every answer rendered by the store).
   */
  HISTORY_SERIES_CACHE_MB: z.coerce.number().min(0).max(16_384).default(64),
} as const;
