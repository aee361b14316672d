/**
 * A history store in memory holding what a test cache holds now (its surfaces, forward curves and funding points),
 * for apps built with buildApp() in tests: their as-of queries and series endpoints then answer from it.
 */
import type { HistoryAccess } from '../../src/api/asOf.js';
import type { MarketCache } from '../../src/cache/marketCache.js';
import { HistoryRecorder } from '../../src/history/recorder.js';
import { HistoryStore } from '../../src/history/store.js';

/** Record everything `cache` holds into a fresh in-memory store; the caller closes `store` when done. */
export async function memoryHistory(cache: MarketCache): Promise<HistoryAccess & { store: HistoryStore }> {
  const store = await HistoryStore.open(':memory:');
  const rec = new HistoryRecorder({ store, cache, bucketS: 60, fullH: 24, flushMs: 60_000 });
  for (const s of cache.allSurfaces()) cache.putSurface(s);
  for (const s of cache.allSurfaces()) {
    const c = cache.getForwardCurve(s.source, s.pair);
    if (c) cache.putForwardCurve(c);
  }
  await rec.close();
  // funding points already held emit no update again: written as rows
  await store.write({
    surfaces: [],
    fits: [],
    curves: [],
    ivSummary: [],
    funding: cache.funding.instruments().flatMap((i) =>
      cache.fundingRange(i.source, i.instrumentId, 0, Number.MAX_SAFE_INTEGER, 1_000_000).map((p) => ({
        source: i.source,
        instrumentId: i.instrumentId,
        timestamp: p.timestamp,
        interest: p.interest,
        base: i.pair.base,
        quote: i.pair.quote,
        intervalHours: i.intervalHours,
        published: p.timestamp,
      })),
    ),
  });
  await rec.close();
  return { store };
}
