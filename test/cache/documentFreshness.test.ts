/**
 * MarketCache for API replicas (src/cache/marketCache.ts): staleness judged per document kind, and the hold that
 * keeps every answer (and /ready) at 503 while a replica catches up. Service clock injected; no broker.
 */
import { describe, expect, it } from 'vitest';
import { FUNDING_GRACE_S, MarketCache } from '../../src/cache/marketCache.js';
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

  it('funding on a replica: a query reaching an overdue point is 503 stale; one ending before it is answered', async () => {
    const { cache, clock } = setup(true);
    const hour = Math.floor(T0 / 3600) * 3600;
    for (let h = 5; h >= 2; h--) {
      cache.addFunding({ kind: 'funding', source: 'DERIBIT', instrumentId: 'BTC-PERPETUAL', base: 'BTC', quote: 'USD', interest: 1e-5 * h, intervalHours: 1, timestamp: hour - h * 3600 });
    }
    // newest point hour-2h: the next (hour-1h) is overdue once its grace (FUNDING_GRACE_S) has passed
    clock.t = hour - 3600 + FUNDING_GRACE_S; // exactly at the grace: not yet overdue
    expect(cache.fundingUnavailable('DERIBIT', 'BTC-PERPETUAL', clock.t)).toBeNull();
    clock.t += 1;
    const u = cache.fundingUnavailable('DERIBIT', 'BTC-PERPETUAL', clock.t);
    expect(u?.reason).toBe('stale');
    expect(u?.message).toBe(
      `funding rates of DERIBIT BTC-PERPETUAL are stale: newest point settled at ${new Date((hour - 7200) * 1000).toISOString()}, the next (every 1 h) is ${FUNDING_GRACE_S + 1} s overdue (grace ${FUNDING_GRACE_S} s)`,
    );
    // a range that ends before the missing point is complete
    expect(cache.fundingUnavailable('DERIBIT', 'BTC-PERPETUAL', hour - 3601)).toBeNull();
    const app = await buildApp({ cache });
    try {
      const q = (end: number) => `/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=BTC-PERPETUAL&startTime=${hour - 86400}&endTime=${end}`;
      let r = await app.inject({ method: 'GET', url: q(Math.floor(clock.t)) });
      expect(r.statusCode).toBe(503);
      expect(r.json().message).toMatch(/^funding rates of DERIBIT BTC-PERPETUAL are stale/);
      r = await app.inject({ method: 'GET', url: q(hour - 7200) });
      expect(r.statusCode).toBe(200);
      expect(r.json().map((p: { timestamp: number }) => p.timestamp)).toEqual([hour - 7200, hour - 10800, hour - 14400, hour - 18000]);
      // the calibrator's rule (no document freshness) answers the history as it is
      cache.judgeByDocumentTime(false);
      expect((await app.inject({ method: 'GET', url: q(Math.floor(clock.t)) })).statusCode).toBe(200);
      // and a hold holds funding too
      cache.setHold(() => ({ status: 'catching-up', message: 'catching up with Kafka: funding-updates/0 ...' }));
      r = await app.inject({ method: 'GET', url: q(hour - 7200) });
      expect(r.statusCode).toBe(503);
      expect(r.json().message).toBe('catching up with Kafka: funding-updates/0 ...');
      expect((await app.inject({ method: 'GET', url: '/api/v1/global/data/fundingInstruments?source=DERIBIT' })).statusCode).toBe(503);
    } finally {
      await app.close();
    }
  });
});
