/**
 * GET /api/v1/global/data/iVSummary (interface-spec section 8) through fastify inject() on constructed
 * surfaces (test/helpers/linearSmileSurface.ts: the smile sigma(k) = s0 + s1 k at every maturity, expected
 * figures by an independent bisection): the spec's fields for every model, the 24 h changes against a
 * constructed history (and null without one or beyond the 30-minute tolerance), and the errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { summarizeSurface } from '../../src/cache/history.js';
import type { VolatilityModel } from '../../src/cache/snapshot.js';
import { MarketClock } from '../../src/domain/clock.js';
import { VOLATILITY_MODELS } from '../../src/domain/volatilityModels.js';
import { expectedFigures, LISTED_DAYS, linearSmileSnapshot } from '../helpers/linearSmileSurface.js';

const OBS = 1_780_000_000;
const BTC = { base: 'BTC', quote: 'USD' } as const;
const ETH = { base: 'ETH', quote: 'USD' } as const;
const SLOPE: Record<VolatilityModel, number> = { SVI: -0.2, SABR: -0.15, VANNA_VOLGA: 0.1, ESSVI: -0.05 };

let app: FastifyInstance;
let cache: MarketCache;

beforeAll(async () => {
  cache = new MarketCache(new MarketClock(OBS), 30, [
    { source: 'DERIBIT', pair: BTC },
    { source: 'DERIBIT', pair: ETH },
  ]);
  app = await buildApp({ cache });
  for (const model of VOLATILITY_MODELS) cache.putSurface(linearSmileSnapshot({ obs: OBS, s0: 0.6, s1: SLOPE[model], model }));
  cache.putSurface(linearSmileSnapshot({ obs: OBS, s0: 0.7, s1: -0.3, model: 'SVI', pair: ETH, spot: 3000 }));
  cache.touch('DERIBIT', BTC, OBS);
  cache.touch('DERIBIT', ETH, OBS);
  cache.setFeedConnected('DERIBIT', true);
  // ETH SVI: a history point 24 h - 10 min before the surface, with another smile
  cache.history.record(linearSmileSnapshot({ obs: OBS - 86400 + 600, s0: 0.65, s1: -0.25, model: 'SVI', pair: ETH, spot: 3000 }));
  // BTC SABR: only a point 24 h + 45 min before: outside the 30-minute tolerance
  cache.history.record(linearSmileSnapshot({ obs: OBS - 86400 - 2700, s0: 0.5, s1: -0.1, model: 'SABR' }));
});

afterAll(async () => {
  await app?.close();
});

const get = (q: string) => app.inject({ method: 'GET', url: `/api/v1/global/data/iVSummary?${q}` });
const ENTRY_KEYS = ['atmVol', 'delta10Bfly', 'delta10Skew', 'delta25Bfly', 'delta25Skew', 'diffAtmVol', 'diffDelta10Bfly', 'diffDelta10Skew', 'diffDelta25Bfly', 'diffDelta25Skew', 'expirationTimestamp'];

describe('GET iVSummary', () => {
  for (const model of VOLATILITY_MODELS) {
    it(`${model}: listed and constant-maturity entries with the known figures`, async () => {
      const r = await get(`baseCurrency=BTC&quoteCurrency=USD&source=XCHG_A&volatilityModel=${model}`);
      expect(r.statusCode).toBe(200);
      const b = r.json();
      expect(b).toMatchObject({ baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'XCHG_A', volatilityModel: model, observationTimestamp: OBS });
      expect(b.volatilityListed).toHaveLength(LISTED_DAYS.length);
      expect(b.volatilityConstMat.map((e: { constMat: string }) => e.constMat)).toEqual(['1W', '2W', '1M', '2M', '3M', '6M', '9M']);
      for (const e of b.volatilityListed) expect(Object.keys(e).sort()).toEqual(ENTRY_KEYS);
      for (const e of b.volatilityConstMat) expect(Object.keys(e).sort()).toEqual([...ENTRY_KEYS, 'constMat'].sort());
      for (const e of [...b.volatilityListed, ...b.volatilityConstMat]) {
        const x = expectedFigures(0.6, SLOPE[model], (e.expirationTimestamp - OBS) / (365 * 86400));
        expect(e.atmVol).toBeCloseTo(x.atmVol, 12);
        expect(e.delta25Skew).toBeCloseTo(x.rr25, 9);
        expect(e.delta10Skew).toBeCloseTo(x.rr10, 9);
        expect(e.delta25Bfly).toBeCloseTo(x.bf25, 9);
        expect(e.delta10Bfly).toBeCloseTo(x.bf10, 9);
        // BTC SVI has no history; BTC SABR's only point is 45 min too old: changes are null
        expect([e.diffAtmVol, e.diffDelta10Skew, e.diffDelta25Skew, e.diffDelta10Bfly, e.diffDelta25Bfly]).toEqual([null, null, null, null, null]);
      }
      expect(b.diffReferenceTimestamp).toBeNull();
    });
  }

  it('24 h changes against the history point nearest to 24 h ago', async () => {
    const r = await get('baseCurrency=ETH&quoteCurrency=USD&source=DERIBIT&volatilityModel=SVI');
    expect(r.statusCode).toBe(200);
    const b = r.json();
    expect(b.diffReferenceTimestamp).toBe(OBS - 86400 + 600);
    for (const e of b.volatilityConstMat) {
      const T = (e.expirationTimestamp - OBS) / (365 * 86400);
      const now = expectedFigures(0.7, -0.3, T);
      const then = expectedFigures(0.65, -0.25, T);
      expect(e.diffAtmVol).toBeCloseTo(now.atmVol - then.atmVol, 12);
      expect(e.diffDelta25Skew).toBeCloseTo(now.rr25 - then.rr25, 9);
      expect(e.diffDelta10Skew).toBeCloseTo(now.rr10 - then.rr10, 9);
      expect(e.diffDelta25Bfly).toBeCloseTo(now.bf25 - then.bf25, 9);
      expect(e.diffDelta10Bfly).toBeCloseTo(now.bf10 - then.bf10, 9);
    }
    // the history point's listed expiries (then + 3, 10, ... days) are not today's: no listed change
    expect(b.volatilityListed.every((e: { diffAtmVol: unknown }) => e.diffAtmVol === null)).toBe(true);
    // the same numbers as the summary of the cached snapshot
    const snap = cache.getSurface('DERIBIT', ETH, 'SVI')!;
    expect(b.volatilityListed.map((e: { atmVol: number }) => e.atmVol)).toEqual(summarizeSurface(snap).listed.map((e) => e.atmVol));
  });

  it('errors: unsupported pair or model 400 naming the field, missing parameters 400, no surface yet 503', async () => {
    const bad = await get('baseCurrency=SOL&quoteCurrency=USD&source=DERIBIT&volatilityModel=SVI');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details[0].path).toBe('baseCurrency');
    const model = await get('baseCurrency=BTC&quoteCurrency=USD&source=DERIBIT&volatilityModel=HESTON');
    expect(model.statusCode).toBe(400);
    expect(model.json().details[0].path).toBe('volatilityModel');
    const missing = await get('baseCurrency=BTC&quoteCurrency=USD');
    expect(missing.statusCode).toBe(400);
    expect(missing.json().details.map((d: { path: string }) => d.path).sort()).toEqual(['source', 'volatilityModel']);
    const warming = await get('baseCurrency=ETH&quoteCurrency=USD&source=DERIBIT&volatilityModel=SABR');
    expect(warming.statusCode).toBe(503);
    expect(warming.json().message).toMatch(/warming up/);
    const okx = await get('baseCurrency=BTC&quoteCurrency=USD&source=OKX&volatilityModel=SVI');
    expect(okx.statusCode).toBe(503);
    expect(okx.json().message).toMatch(/not connected/);
  });
});
