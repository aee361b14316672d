/**
 * Start-up log lines that say what the service is doing while it comes up, from the normalized events:
 * - per exchange, once its first instrument listing has arrived (no new listing for `quietMs`):
 *   "DERIBIT: 1710 instruments loaded (BTC/USD 812 options + 9 futures + 1 perpetual, ...)";
 * - per exchange, the first funding history received: "DERIBIT: funding history loaded (4 perpetuals, 2880 points)";
 * - per (source, pair), its first calibrated SVI surface (the one readiness waits for), from the cache's updates:
 *   "first surface calibrated: DERIBIT BTC/USD, 12 expiries in 85 ms".
 * - per exchange as the feeds start: "DERIBIT: connecting for BTC/USD, ETH/USD" ({@link logFeedsStarting}).
 * (Connects are logged by the adapters; the ready line, with the dashboard URL, by src/main.ts.)
 */
import { buffer, debounceTime, filter, share, Subscription, type Observable } from 'rxjs';
import type { FundingRate, InstrumentDefinition, MarketEvent } from '../domain/events.js';
import type { CacheUpdate } from '../cache/marketCache.js';
import type { Source } from '../domain/markets.js';
import type { Logger } from '../domain/logger.js';

/** What the start-up log needs of a logger. */
export type StartupLogger = Pick<Logger, 'info'>;

/** A running start-up log; close() stops listening. */
export interface StartupLog {
  close(): void;
}

/** Plural helper: `1 option`, `2 options`. */
function count(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** One summary line of an instrument listing burst: counts per pair and type. */
export function summarizeInstruments(defs: readonly InstrumentDefinition[]): { total: number; text: string; byPair: Record<string, Record<string, number>> } {
  const byPair: Record<string, Record<string, number>> = {};
  for (const d of defs) {
    const key = `${d.base}/${d.quote}`;
    const m = (byPair[key] ??= {});
    m[d.type] = (m[d.type] ?? 0) + 1;
  }
  const words: Record<string, string> = { option: 'option', future: 'future', perpetual: 'perpetual' };
  const text = Object.entries(byPair)
    .map(([pair, m]) => `${pair} ${Object.entries(m).map(([t, n]) => count(n, words[t] ?? t)).join(' + ')}`)
    .join(', ');
  return { total: defs.length, text, byPair };
}

/**
 * Log the start-up milestones seen on `events$` (see the module comment). Each is logged once per exchange.
 * @param quietMs a listing is complete when no instrument definition arrived for this long (default 500)
 * @param cacheUpdates$ the cache's updates (first calibrated surface per pair); none: no such lines
 */
export function attachStartupLog(
  events$: Observable<MarketEvent>,
  logger: StartupLogger,
  quietMs = 500,
  cacheUpdates$?: Observable<CacheUpdate>,
): StartupLog {
  const subs = new Subscription();
  if (cacheUpdates$) {
    const calibrated = new Set<string>();
    subs.add(
      cacheUpdates$.subscribe((u) => {
        if (u.type !== 'surface' || u.snapshot.model !== 'SVI') return;
        const s = u.snapshot;
        const pair = `${s.pair.base}/${s.pair.quote}`;
        const key = `${s.source}:${pair}`;
        if (calibrated.has(key)) return;
        calibrated.add(key);
        const ms = Math.round(s.calibrationMs);
        logger.info(
          { source: s.source, pair, expiries: s.slices.length, ms },
          `first surface calibrated: ${s.source} ${pair}, ${s.slices.length} ${s.slices.length === 1 ? 'expiry' : 'expiries'} in ${ms} ms`,
        );
      }),
    );
  }
  const listed = new Set<Source>();
  const funded = new Set<Source>();
  const shared$ = events$.pipe(share());

  const instruments$ = shared$.pipe(filter((e): e is InstrumentDefinition => e.kind === 'instrument' && !listed.has(e.source)));
  subs.add(
    instruments$.pipe(buffer(instruments$.pipe(debounceTime(quietMs)))).subscribe((defs) => {
      const bySource = new Map<Source, InstrumentDefinition[]>();
      for (const d of defs) {
        if (listed.has(d.source)) continue;
        let arr = bySource.get(d.source);
        if (!arr) bySource.set(d.source, (arr = []));
        arr.push(d);
      }
      for (const [source, arr] of bySource) {
        listed.add(source);
        const s = summarizeInstruments(arr);
        logger.info({ source, instruments: s.total, byPair: s.byPair }, `${source}: ${s.total} instruments loaded (${s.text})`);
      }
    }),
  );

  const funding$ = shared$.pipe(filter((e): e is FundingRate => e.kind === 'funding' && !funded.has(e.source)));
  subs.add(
    funding$.pipe(buffer(funding$.pipe(debounceTime(quietMs)))).subscribe((pts) => {
      const bySource = new Map<Source, FundingRate[]>();
      for (const p of pts) {
        if (funded.has(p.source)) continue;
        let arr = bySource.get(p.source);
        if (!arr) bySource.set(p.source, (arr = []));
        arr.push(p);
      }
      for (const [source, arr] of bySource) {
        funded.add(source);
        const ids = new Set(arr.map((p) => p.instrumentId));
        logger.info({ source, perpetuals: [...ids], points: arr.length }, `${source}: funding history loaded (${count(ids.size, 'perpetual')}, ${count(arr.length, 'point')})`);
      }
    }),
  );
  return { close: () => subs.unsubscribe() };
}

/** Log one "connecting" line per feed about to start, with the pairs expected of it. */
export function logFeedsStarting(
  logger: StartupLogger,
  sources: readonly Source[],
  expected: ReadonlyArray<{ source: Source; pair: { base: string; quote: string } }>,
): void {
  for (const source of sources) {
    const pairs = expected.filter((p) => p.source === source).map((p) => `${p.pair.base}/${p.pair.quote}`);
    logger.info({ source, pairs }, `${source}: connecting${pairs.length ? ` for ${pairs.join(', ')}` : ''}`);
  }
}
