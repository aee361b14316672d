/**
 * MarketCache for API replicas (src/cache/marketCache.ts): staleness judged per document kind, and the hold that
 * keeps every answer (and /ready) at 503 while a replica catches up. Service clock injected; no broker.
 */
import { describe, expect, it } from 'vitest';
import { MarketCache } from '../../src/cache/marketCache.js';
import { buildApp } from '../../src/api/app.js';
import type { Clock } from '../../src/domain/clock.js';
import { makeSurface } from '../metrics/helpers.js';

const BTC = { base: 'BTC', quote: 'USD' } as const;
const T0 = 1_790_000_000;

function setup(byDocument: boolean) {
  const clock = { t: T0, now() { return this.t; } } as Clock & { t: number };
  const cache = new MarketCache(clock, 30, [{ source: 'DERIBIT', pair: BTC }]);
  cache.judgeByDocumentTime(byDocument);
  const svi = makeSurface({ observationTimestamp: T0 - 50, sequence: 3 });
  cache.putSurface(svi);
  cache.putSurface(makeSurface({ observationTimestamp: T0 - 5, model: 'SABR', sequence: 9 }));
  cache.putForwardCurve({ source: 'DERIBIT', pair: BTC, observationTimestamp: T0 - 2, spot: 1, points: [], curve: svi.forwardCurve, sequence: 9 });
  cache.touch('DERIBIT', BTC, T0 - 2); // the pair's newest document of any kind
  return { cache, clock };
}

describe('per-kind staleness and the hold (replica cache)', () => {
  it('a surface observed more than STALE_AFTER_S ago is stale although the forward curve and another model are fresh', () => {
    const { cache } = setup(true);
    const u = cache.unavailable('DERIBIT', BTC, 'SVI');
    expect(u?.reason).toBe('stale');
    expect(u && 'sinceS' in u ? u.sinceS : null).toBe(T0 - 50);
    expect(u?.message).toBe(`market data for DERIBIT BTC/USD is stale: SVI surface observed at ${new Date((T0 - 50) * 1000).toISOString()}, 50 s ago (limit 30 s)`);
    expect(cache.unavailable('DERIBIT', BTC, 'SABR')).toBeNull();
    expect(cache.unavailable('DERIBIT', BTC, null)).toBeNull(); // forward curve, 2 s old
  });

  it('the forward curve by its own time; at exactly STALE_AFTER_S still fresh, past it stale', () => {
    const { cache, clock } = setup(true);
    clock.t = T0 - 2 + 30;
    expect(cache.unavailable('DERIBIT', BTC, null)).toBeNull();
    clock.t += 0.5;
    expect(cache.unavailable('DERIBIT', BTC, null)?.message).toMatch(/stale: forward curve observed at .*, 31 s ago \(limit 30 s\)$/);
  });

  it('without document freshness (calibrator) the pair-level rule stays: newest market data of the pair', () => {
    const { cache } = setup(false);
    expect(cache.unavailable('DERIBIT', BTC, 'SVI')).toBeNull();
  });

  it('a hold answers every query and /ready with its status and message, until it is lifted', async () => {
    const { cache } = setup(true);
    let caughtUp = false;
    cache.setHold(() => (caughtUp ? null : { status: 'catching-up', message: 'catching up with Kafka: 1 of 3 partitions ...' }));
    expect(cache.unavailable('DERIBIT', BTC, 'SABR')).toEqual({ reason: 'warming-up', message: 'catching up with Kafka: 1 of 3 partitions ...' });
    const app = await buildApp({ cache });
    try {
      let r = await app.inject({ method: 'GET', url: '/ready' });
      expect(r.statusCode).toBe(503);
      expect(r.json()).toMatchObject({ status: 'catching-up', message: 'catching up with Kafka: 1 of 3 partitions ...', missing: [] });
      r = await app.inject({ method: 'GET', url: '/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SABR' });
      expect(r.statusCode).toBe(503);
      expect(r.json().message).toBe('catching up with Kafka: 1 of 3 partitions ...');
      caughtUp = true;
      r = await app.inject({ method: 'GET', url: '/ready' });
      expect(r.statusCode).toBe(200);
      expect(r.json().status).toBe('ready');
      expect((await app.inject({ method: 'GET', url: '/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SABR' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});
