import { describe, expect, it } from 'vitest';
import { MarketCache } from '../../src/cache/marketCache.js';
import { MarketClock } from '../../src/domain/clock.js';
import type { SurfaceSnapshot } from '../../src/cache/snapshot.js';

const BTC = { base: 'BTC', quote: 'USD' } as const;

function fakeSurface(obs: number): SurfaceSnapshot {
  return {
    source: 'DERIBIT',
    pair: BTC,
    model: 'SVI',
    observationTimestamp: obs,
    spot: 100,
    slices: [],
    surface: { impliedVol: () => 0.5, totalVariance: () => 0.25 },
    forwardCurve: { spot: 100, forward: () => 100, fixedYields: () => [], constMatYields: () => [] },
    calibrationMs: 1,
    sequence: 1,
  };
}

describe('MarketCache freshness', () => {
  it('says not-connected, warming-up, stale by age, stale by disconnect, and ok', () => {
    const clock = new MarketClock(1000);
    const cache = new MarketCache(clock, 30, [{ source: 'DERIBIT', pair: BTC }]);
    expect(cache.unavailable('OKX', BTC, 'SVI')?.reason).toBe('not-connected');
    expect(cache.unavailable('DERIBIT', BTC, 'SVI')?.reason).toBe('warming-up');
    expect(cache.missing()).toHaveLength(1);

    cache.putSurface(fakeSurface(1000));
    cache.touch('DERIBIT', BTC, 1000);
    cache.setFeedConnected('DERIBIT', true);
    expect(cache.unavailable('DERIBIT', BTC, 'SVI')).toBeNull();
    expect(cache.missing()).toHaveLength(0);

    clock.advance(1031); // 31 s without data
    const u = cache.unavailable('DERIBIT', BTC, 'SVI');
    expect(u?.reason).toBe('stale');
    expect(u?.message).toContain('1970-01-01T00:16:40.000Z');

    cache.touch('DERIBIT', BTC, 1031);
    expect(cache.unavailable('DERIBIT', BTC, 'SVI')).toBeNull();
    cache.setFeedConnected('DERIBIT', false);
    const d = cache.unavailable('DERIBIT', BTC, 'SVI');
    expect(d?.reason).toBe('stale');
    expect(d?.message).toContain('disconnected');
    // the value is still held: a disconnect erases nothing
    expect(cache.getSurface('DERIBIT', BTC, 'SVI')?.observationTimestamp).toBe(1000);
  });

  it('emits funding updates only for new points', () => {
    const cache = new MarketCache(new MarketClock(0), 30);
    const seen: number[] = [];
    cache.updates$.subscribe((u) => u.type === 'funding' && seen.push(u.point.timestamp));
    const p = { kind: 'funding', source: 'DERIBIT', instrumentId: 'BTC-PERPETUAL', base: 'BTC', quote: 'USD', interest: 1e-6, intervalHours: 1, timestamp: 3600 } as const;
    cache.addFunding(p);
    cache.addFunding(p);
    cache.addFunding({ ...p, timestamp: 7200 });
    expect(seen).toEqual([3600, 7200]);
  });
});
