/**
 * The history store of a running service (issue 24): opens the database file, records every cache update
 * (./recorder.ts), compacts on a timer (./compaction.ts), restores the in-memory 24 h iVSummary history from the
 * store at start (so the 24 h changes survive a restart), and gives the API its {@link HistoryAccess}.
 *
 * Failure to open (the file held by another process, a bad path) is logged as an error and the service runs on
 * without a store: as-of and series answer 404 with the reason; nothing else changes.
 */
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { MarketCache } from '../cache/marketCache.js';
import type { SurfaceSnapshot } from '../cache/snapshot.js';
import { parseSourcePairs } from '../domain/markets.js';
import { VOLATILITY_MODELS, type VolatilityModel } from '../domain/volatilityModels.js';
import { compact, type CompactionResult } from './compaction.js';
import { HistoryRecorder } from './recorder.js';
import { keptRange, summariesBetween, summaryKeys } from './reads.js';
import { HistoryStore } from './store.js';

/** How the history is configured (src/history/config.ts). */
export interface HistorySettings {
  readonly HISTORY_DIR: string;
  readonly HISTORY_FULL_H: number;
  readonly HISTORY_BUCKET_S: number;
  readonly HISTORY_RETENTION_D: number;
  readonly HISTORY_FLUSH_MS: number;
  readonly HISTORY_SERIES_CACHE_MB: number;
}

/** Milliseconds between two compactions. */
export const COMPACTION_EVERY_MS = 10 * 60_000;
/** Seconds of iVSummary points restored into the in-memory history at start (its retention). */
const RESTORE_S = 25 * 3600;

/** The running history of a service. */
export interface ServiceHistory {
  /** The store, or null (off, or failed to open: see `reason`). */
  readonly store: HistoryStore | null;
  readonly reason?: string;
  readonly recorder: HistoryRecorder | null;
  /** Make sure everything observed up to `asOf` (Unix s) and recorded is committed (flushes when some is pending). */
  sync(asOf: number): Promise<void>;
  /**
   * Record a surface served before this process saw it (the simulator's pre-run, a Kafka replica's restore), unless
   * the store already holds surfaces at or after `fromS` (a restart must not write a second past over the first).
   */
  pastRecorder(fromS: number): Promise<((s: SurfaceSnapshot) => void) | null>;
  /**
   * Record a surface read back from Kafka's `surface-history` at start when the store misses it: newer than the
   * newest surface the store held of its (source, pair, model) when it opened, and older than the opening (what is
   * published after that is recorded live): a replica rebuilding its history, or a restart recovering the last
   * second a crash lost.
   */
  recordMissing(s: SurfaceSnapshot): void;
  /** While set: why as-of answers must wait (the Kafka rebuild in progress); null when ready. */
  pending(): string | null;
  /**
   * How far before `asOf` (Unix s) a surface may have been observed and still count as served then, seconds:
   * `staleAfterS` within HISTORY_FULL_H of now, `staleAfterS` + HISTORY_BUCKET_S beyond (one surface a bucket kept).
   */
  lookbackS(asOf: number): number;
  /** Mark the history as being rebuilt until `done` settles (as-of answers 503 meanwhile). */
  rebuilding(done: Promise<unknown>, what: string): void;
  /** Run one compaction now (tests, tools). */
  compactNow(): Promise<CompactionResult | null>;
  /** Commit what is pending and close the file. */
  close(): Promise<void>;
}

/**
 * Open the store per `settings` (HISTORY_DIR=off: none), start recording `cache`, restore its 24 h history.
 * Never throws: a store that cannot be opened gives a history without one (logged).
 */
export async function startHistory(settings: HistorySettings, cache: MarketCache, logger: Logger): Promise<ServiceHistory> {
  const off = (reason: string): ServiceHistory => ({
    store: null,
    reason,
    recorder: null,
    sync: async () => undefined,
    pastRecorder: async () => null,
    recordMissing: () => undefined,
    pending: () => null,
    lookbackS: () => cache.staleAfterS,
    rebuilding: () => undefined,
    compactNow: async () => null,
    close: async () => undefined,
  });
  if (settings.HISTORY_DIR.toLowerCase() === 'off') return off('this deployment runs without a history store (HISTORY_DIR=off)');
  const path = resolve(join(settings.HISTORY_DIR, 'history.duckdb'));
  let store: HistoryStore;
  try {
    store = await HistoryStore.open(path, { renderedDaysBytes: settings.HISTORY_SERIES_CACHE_MB * 1024 * 1024 });
  } catch (err) {
    const reason = `the history store ${path} could not be opened: ${(err as Error).message.split('\n')[0]}`;
    logger.error({ err: (err as Error).message }, `${reason}; running without history (as-of and series answer 404)`);
    return off(reason);
  }
  const restored = await restoreMemoryHistory(store, cache).catch((err: unknown) => {
    logger.warn({ err: (err as Error).message }, 'history: restoring the 24 h iVSummary history from the store failed');
    return 0;
  });
  const newestAtOpen = new Map(
    (await store.query('SELECT source, pair, model, max(obs) AS t FROM surfaces GROUP BY ALL')).map((r) => [`${String(r.source)}:${String(r.pair)}:${String(r.model)}`, r.t as number]),
  );
  let rebuild: string | null = null;
  // what the cache publishes from now on is recorded live; the rebuild takes only what came before
  const openedAtS = cache.clock.now();
  const recorder = new HistoryRecorder({
    store,
    cache,
    bucketS: settings.HISTORY_BUCKET_S,
    fullH: settings.HISTORY_FULL_H,
    flushMs: settings.HISTORY_FLUSH_MS,
    storedUpTo: newestAtOpen,
    logger: logger.child({ component: 'history' }),
  });
  const compaction = scheduleCompaction(store, settings, cache, logger);
  logger.info({ path, restoredPoints: restored, fullH: settings.HISTORY_FULL_H, bucketS: settings.HISTORY_BUCKET_S, retentionD: settings.HISTORY_RETENTION_D }, 'history store open');
  return {
    store,
    recorder,
    async sync(asOf) {
      // something observed at or before asOf is still pending (or being committed): commit it first
      const pending = recorder.oldestUncommittedS();
      if (pending !== null && pending <= asOf) await recorder.flush();
    },
    recordMissing(s) {
      const newest = newestAtOpen.get(`${s.source}:${s.pair.base}/${s.pair.quote}:${s.model}`);
      if (s.observationTimestamp < openedAtS && (newest === undefined || s.observationTimestamp > newest)) recorder.recordPast(s);
    },
    pending: () => rebuild,
    lookbackS: (asOf) => (asOf >= cache.clock.now() - settings.HISTORY_FULL_H * 3600 ? cache.staleAfterS : cache.staleAfterS + settings.HISTORY_BUCKET_S),
    rebuilding(done, what) {
      rebuild = `the history store is being rebuilt from ${what}: as-of answers wait until it is done`;
      const clear = (): void => {
        rebuild = null;
        void recorder.flush();
      };
      done.then(clear, clear);
    },
    async pastRecorder(fromS) {
      const range = await keptRange(store);
      if (range && range.to >= fromS) return null;
      return (s) => recorder.recordPast(s);
    },
    compactNow: compaction.now,
    async close() {
      await compaction.stop();
      await recorder.close();
      await store.close();
    },
  };
}

/**
 * The compaction (./compaction.ts) of `store`: now at start, then every COMPACTION_EVERY_MS, against the later of the
 * service clock and the newest stored surface (a replay's store is judged by its own data). `now` runs one at once;
 * `stop` ends the timer and waits for a running one.
 */
function scheduleCompaction(
  store: HistoryStore,
  settings: HistorySettings,
  cache: MarketCache,
  logger: Logger,
): { now: () => Promise<CompactionResult>; stop: () => Promise<void> } {
  const now = async (): Promise<CompactionResult> => {
    const range = await keptRange(store);
    const nowS = Math.max(cache.clock.now(), range?.to ?? -Infinity);
    return compact(store, { nowS, fullH: settings.HISTORY_FULL_H, retentionD: settings.HISTORY_RETENTION_D });
  };
  let compacting: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    compacting = now()
      .then((r) => logger.info({ ...r }, 'history compacted'))
      .catch((err: unknown) => logger.error({ err: (err as Error).message }, 'history compaction failed'));
  }, COMPACTION_EVERY_MS);
  timer.unref();
  compacting = now().catch((err: unknown) => logger.error({ err: (err as Error).message }, 'history compaction failed'));
  return {
    now,
    async stop() {
      clearInterval(timer);
      await compacting;
    },
  };
}

/**
 * Fill the cache's in-memory 24 h iVSummary history from the store's points of the 25 h before now (before the
 * store's newest point when that is later, and always in replay, whose clock starts at 0 and follows the file);
 * returns how many points it took.
 */
async function restoreMemoryHistory(store: HistoryStore, cache: MarketCache): Promise<number> {
  const newest = (await store.query('SELECT max(obs) AS t FROM iv_summary'))[0]?.t;
  if (typeof newest !== 'number') return 0;
  const now = Math.max(cache.clock.now(), newest);
  let n = 0;
  for (const k of await summaryKeys(store)) {
    const parsed = parseSourcePairs(`${k.source}:${k.pair}`);
    if (!('pairs' in parsed) || !(VOLATILITY_MODELS as readonly string[]).includes(k.model)) continue;
    const { source, pair } = parsed.pairs[0]!;
    for (const s of await summariesBetween(store, k, now - RESTORE_S, now)) {
      if (cache.history.recordSummary(source, pair, k.model as VolatilityModel, s)) n++;
    }
  }
  return n;
}
