/**
 * The history store round trip (src/history): every surface of a real calibrated Deribit chain is recorded, read
 * back as-of and rebuilt with the calibrator's constructors; the rebuilt surface answers the same numbers, bit for
 * bit, as the one served (the as-of promise of issue 24), and the file survives a close and reopen.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MarketCache } from '../../src/cache/marketCache.js';
import { surfaceDocument } from '../../src/api/documents.js';
import { surfaceFromMessage, forwardCurveFromMessage } from '../../src/kafka/rebuild.js';
import { HistoryStore } from '../../src/history/store.js';
import { HistoryRecorder } from '../../src/history/recorder.js';
import { curveAsOf, keptRange, summaryNearest, surfaceAsOf } from '../../src/history/reads.js';
import { summarizeSurface } from '../../src/cache/history.js';
import { realChainCache } from '../helpers/realChainCache.js';

const dir = mkdtempSync(join(tmpdir(), 'history-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('history store', () => {
  const rc = realChainCache();
  const served = rc.cache.allSurfaces();
  const curve = rc.cache.getForwardCurve('DERIBIT', rc.pair)!;

  it('reads back every model of a real chain bit-identical, and after a reopen', async () => {
    const path = join(dir, 'a', 'history.duckdb');
    let store = await HistoryStore.open(path);
    const cache = new MarketCache(rc.clock, 30);
    const rec = new HistoryRecorder({ store, cache, bucketS: 60, fullH: 24, flushMs: 60_000 });
    for (const s of served) cache.putSurface(s);
    cache.putForwardCurve(curve);
    await rec.close();
    expect(rec.stats.surfaces).toBe(served.length);
    expect(rec.stats.curves).toBe(1);

    const check = async (st: HistoryStore): Promise<void> => {
      for (const s of served) {
        const m = await surfaceAsOf(st, { source: 'DERIBIT', pair: 'BTC/USD', model: s.model }, s.observationTimestamp, 30);
        expect(m, s.model).not.toBeNull();
        const rebuilt = surfaceFromMessage(m!);
        expect(surfaceDocument(rebuilt)).toEqual(surfaceDocument(s));
        // the smile itself, far into the wings and between expiries
        for (const T of [0.001, 0.02, 0.1, 0.5, 1.5]) {
          for (const k of [-1.5, -0.3, 0, 0.2, 1.2]) {
            const F = s.forwardCurve.forward(T);
            expect(Object.is(rebuilt.surface.impliedVol(T, F * Math.exp(k), F), s.surface.impliedVol(T, F * Math.exp(k), F))).toBe(true);
          }
        }
        expect(summarizeSurface(rebuilt)).toEqual(summarizeSurface(s));
        // the iVSummary figures of the first (tier-1) snapshot of the bucket
        const sum = await summaryNearest(st, { source: 'DERIBIT', pair: 'BTC/USD', model: s.model }, s.observationTimestamp, 1);
        expect(sum).toEqual(summarizeSurface(s));
      }
      const c = await curveAsOf(st, { source: 'DERIBIT', pair: 'BTC/USD' }, curve.observationTimestamp + 5, 30);
      expect(forwardCurveFromMessage(c!).points).toEqual(curve.points);
      // nothing before the first publication, nothing once it is older than the lookback
      expect(await surfaceAsOf(st, { source: 'DERIBIT', pair: 'BTC/USD', model: 'SVI' }, curve.observationTimestamp - 0.001, 30)).toBeNull();
      expect(await surfaceAsOf(st, { source: 'DERIBIT', pair: 'BTC/USD', model: 'SVI' }, curve.observationTimestamp + 31, 30)).toBeNull();
      expect(await keptRange(st)).toEqual({ from: curve.observationTimestamp, to: curve.observationTimestamp });
    };
    await check(store);
    await store.close();
    store = await HistoryStore.open(path);
    await check(store);
    await store.close();
  });
});
