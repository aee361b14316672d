/**
 * POST /api/v1/global/optionValuation/euBarrier through fastify inject() on buildApp, with a MarketCache
 * holding a constructed SVI surface (src/quant/surface.ts) and forward curve (src/quant/forwardCurve.ts).
 * Checks: the numbers equal the quant replication on the cache's smile; in + out = the vanilla endpoint's
 * value; digital call + put = 100 %; every validation rule of the spec's field table answers a 400 naming
 * the item; 503 on stale data.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { expiryPoint } from '../../src/cache/expiryPoint.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import type { SurfaceSnapshot } from '../../src/cache/snapshot.js';
import { MarketClock } from '../../src/domain/clock.js';
import type { Pair, Source } from '../../src/domain/markets.js';
import { valueEuBarrier } from '../../src/quant/barrier.js';
import { ForwardCurve } from '../../src/quant/forwardCurve.js';
import { VolSurface } from '../../src/quant/surface.js';

const OBS = 1_750_000_000;
const DAY = 86400;
const YEAR = 365 * DAY;
const BTC: Pair = { base: 'BTC', quote: 'USD' };
const ETH: Pair = { base: 'ETH', quote: 'USD' };
const EXP30 = OBS + 30 * DAY;

/** A DERIBIT-like SVI surface: ATM vol 60 %, put skew (rho -0.3), forwards S (1 + 0.05 T). */
function putMarket(cache: MarketCache, source: Source, pair: Pair, spot: number): void {
  const Ts = [7, 30, 90, 180].map((d) => (d * DAY) / YEAR);
  const curve = new ForwardCurve(spot, Ts.map((T) => ({ expirationTimestamp: OBS + Math.round(T * YEAR), T, forward: spot * (1 + 0.05 * T) })));
  const surface = new VolSurface(
    Ts.map((T) => ({
      expirationTimestamp: OBS + Math.round(T * YEAR),
      T,
      forward: curve.forward(T),
      params: { a: 0.36 * T * 0.85, b: 0.36 * T * 0.5, rho: -0.3, m: 0, sigma: 0.3 },
    })),
  );
  const snap: SurfaceSnapshot = {
    source,
    pair,
    model: 'SVI',
    observationTimestamp: OBS,
    spot,
    slices: [],
    surface,
    forwardCurve: curve,
    calibrationMs: 1,
    sequence: 1,
  };
  cache.putSurface(snap);
  cache.putForwardCurve({ source, pair, observationTimestamp: OBS, spot, points: [], curve, sequence: 1 });
  cache.touch(source, pair, OBS);
}

let app: FastifyInstance;
let cache: MarketCache;
let clock: MarketClock;

beforeAll(async () => {
  clock = new MarketClock(OBS);
  cache = new MarketCache(clock, 30, [
    { source: 'DERIBIT', pair: BTC },
    { source: 'DERIBIT', pair: ETH },
  ]);
  putMarket(cache, 'DERIBIT', BTC, 60_000);
  putMarket(cache, 'DERIBIT', ETH, 3_000);
  cache.setFeedConnected('DERIBIT', true);
  app = await buildApp({ cache });
});
afterAll(async () => {
  await app.close();
});

function item(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    instrumentId: 'b1',
    baseCurrency: 'BTC',
    quoteCurrency: 'USD',
    source: 'DERIBIT',
    volatilityModel: 'SVI',
    europeanBarrierOptionType: 'CALL',
    expirationTimestamp: EXP30,
    strike: 62_000,
    barrierType: 'UP_AND_OUT',
    barrier: 72_000,
    ...over,
  };
}

async function post(body: unknown, url = '/api/v1/global/optionValuation/euBarrier') {
  const res = await app.inject({ method: 'POST', url, payload: body as object });
  return { status: res.statusCode, body: res.json() as any };
}

function paths(body: any): string[] {
  return (body.details ?? []).map((d: { path: string }) => d.path);
}

describe('euBarrier: values', () => {
  it('answers the replication on the cache smile, with the market fields of the expiry', async () => {
    const r = await post([item(), item({ instrumentId: 'b2', europeanBarrierOptionType: 'DIGITAL_PUT', strike: undefined, barrierType: undefined, barrier: 55_000 })]);
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(2);
    const p = expiryPoint(cache.getSurface('DERIBIT', BTC, 'SVI')!, EXP30);
    const call = valueEuBarrier({ F: p.forward, T: p.T, smile: p.vol, smileSlope: p.volSlope, type: 'CALL', K: 62_000, B: 72_000, barrierType: 'UP_AND_OUT' });
    const dp = valueEuBarrier({ F: p.forward, T: p.T, smile: p.vol, smileSlope: p.volSlope, type: 'DIGITAL_PUT', B: 55_000 });
    expect(r.body[0]).toEqual({
      instrumentId: 'b1',
      observationTimestamp: OBS,
      impliedVolatility: p.vol(62_000),
      spotPrice: 60_000,
      forwardPrice: p.forward,
      ...Object.fromEntries(Object.entries(call).filter(([k]) => k !== 'impliedVolatility')),
    });
    expect(r.body[1].instrumentId).toBe('b2');
    expect(r.body[1].impliedVolatility).toBe(p.vol(55_000));
    expect(r.body[1].percentPrice).toBe(dp.percentPrice);
    expect(r.body[0].percentPrice).toBeGreaterThan(0);
  });

  it('in + out = the vanilla endpoint value (coin price x 100) for CALL and PUT, every barrier direction', async () => {
    for (const [type, strike, barrier] of [['CALL', 62_000, 72_000], ['PUT', 58_000, 50_000], ['CALL', 58_000, 55_000]] as const) {
      const van = await post(
        [{ instrumentId: 'v', baseCurrency: 'BTC', quoteCurrency: 'USD', amount: 1, vanillaOptionType: type, source: 'DERIBIT', priceMethod: 'DERIBIT', expirationTimestamp: EXP30, strike, volatilityModel: 'SVI' }],
        '/api/v1/global/optionValuation/vanilla',
      );
      expect(van.status).toBe(200);
      const vanillaPercent = 100 * van.body[0].valueBase;
      const r = await post(
        (['UP_AND_OUT', 'UP_AND_IN', 'DOWN_AND_OUT', 'DOWN_AND_IN'] as const).map((bt, i) => item({ instrumentId: `x${i}`, europeanBarrierOptionType: type, strike, barrier, barrierType: bt })),
      );
      expect(r.status).toBe(200);
      const [uo, ui, dout, di] = r.body.map((x: any) => x.percentPrice);
      expect(uo + ui).toBeCloseTo(vanillaPercent, 10);
      expect(dout + di).toBeCloseTo(vanillaPercent, 10);
      expect(r.body[0].impliedVolatility).toBe(van.body[0].impliedVolatility);
    }
  });

  it('digital call + digital put = 100 %; a strike or barrierType on a digital is ignored', async () => {
    const r = await post([
      item({ instrumentId: 'dc', europeanBarrierOptionType: 'DIGITAL_CALL', strike: undefined, barrierType: undefined, barrier: 63_000 }),
      item({ instrumentId: 'dp', europeanBarrierOptionType: 'DIGITAL_PUT', strike: undefined, barrierType: undefined, barrier: 63_000 }),
      item({ instrumentId: 'dc2', europeanBarrierOptionType: 'DIGITAL_CALL', strike: 1, barrierType: 'DOWN_AND_IN', barrier: 63_000 }),
    ]);
    expect(r.status).toBe(200);
    expect(r.body[0].percentPrice + r.body[1].percentPrice).toBeCloseTo(100, 12);
    const { instrumentId: _a, ...dc } = r.body[0];
    const { instrumentId: _b, ...dc2 } = r.body[2];
    expect(dc2).toEqual(dc);
  });

  it('ETH/USD and the XCHG_A alias are served', async () => {
    const r = await post([item({ baseCurrency: 'ETH', source: 'XCHG_A', strike: 3_100, barrier: 3_600 })]);
    expect(r.status).toBe(200);
    expect(r.body[0].spotPrice).toBe(3_000);
  });
});

describe('euBarrier: validation (400 naming the item)', () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['source other than DERIBIT', { source: 'OKX' }, '[0].source'],
    ['source XCHG_C', { source: 'XCHG_C' }, '[0].source'],
    ['unknown source', { source: 'KRAKEN' }, '[0].source'],
    ['pair SOL/USDC', { baseCurrency: 'SOL', quoteCurrency: 'USDC' }, '[0].baseCurrency'],
    ['quote USDC', { quoteCurrency: 'USDC' }, '[0].baseCurrency'],
    ['base XRP', { baseCurrency: 'XRP' }, '[0].baseCurrency'],
    ['quote EUR', { quoteCurrency: 'EUR' }, '[0].quoteCurrency'],
    ['source missing', { source: undefined }, '[0].source'],
    ['option type missing', { europeanBarrierOptionType: undefined }, '[0].europeanBarrierOptionType'],
    ['model SABR', { volatilityModel: 'SABR' }, '[0].volatilityModel'],
    ['model VANNA_VOLGA', { volatilityModel: 'VANNA_VOLGA' }, '[0].volatilityModel'],
    ['unknown option type', { europeanBarrierOptionType: 'ONE_TOUCH' }, '[0].europeanBarrierOptionType'],
    ['unknown barrier type', { barrierType: 'KNOCK_OUT' }, '[0].barrierType'],
    ['strike missing on a CALL', { strike: undefined }, '[0].strike'],
    ['strike missing on a FORWARD', { europeanBarrierOptionType: 'FORWARD', strike: undefined }, '[0].strike'],
    ['barrierType missing on a PUT', { europeanBarrierOptionType: 'PUT', barrierType: undefined }, '[0].barrierType'],
    ['strike 0', { strike: 0 }, '[0].strike'],
    ['strike negative', { strike: -5 }, '[0].strike'],
    ['barrier 0', { barrier: 0 }, '[0].barrier'],
    ['barrier missing', { barrier: undefined }, '[0].barrier'],
    ['expiry in the past', { expirationTimestamp: OBS - 1 }, '[0].expirationTimestamp'],
    ['expiry missing', { expirationTimestamp: undefined }, '[0].expirationTimestamp'],
    ['instrumentId missing', { instrumentId: undefined }, '[0].instrumentId'],
    ['instrumentId empty', { instrumentId: '' }, '[0].instrumentId'],
    ['baseCurrency missing', { baseCurrency: undefined }, '[0].baseCurrency'],
    ['volatilityModel missing', { volatilityModel: undefined }, '[0].volatilityModel'],
  ];
  for (const [name, over, path] of cases) {
    it(`${name} -> 400 at ${path}`, async () => {
      const r = await post([item(over)]);
      expect(r.status).toBe(400);
      expect(r.body.statusCode).toBe(400);
      expect(paths(r.body)).toContain(path);
    });
  }

  it('batch of 0 or 51 items -> 400; 50 items -> 200', async () => {
    expect((await post([])).status).toBe(400);
    const many = (n: number) => Array.from({ length: n }, (_, i) => item({ instrumentId: `i${i}` }));
    const r51 = await post(many(51));
    expect(r51.status).toBe(400);
    expect(r51.body.details[0].message).toMatch(/1 to 50/);
    const r50 = await post(many(50));
    expect(r50.status).toBe(200);
    expect(r50.body).toHaveLength(50);
  });

  it('a body that is not an array -> 400; duplicate instrumentId -> 400; every bad item is named', async () => {
    expect((await post(item())).status).toBe(400);
    const dup = await post([item(), item()]);
    expect(dup.status).toBe(400);
    expect(paths(dup.body)).toEqual(['[1].instrumentId']);
    const multi = await post([item(), item({ instrumentId: 'b2', source: 'OKX' }), item({ instrumentId: 'b3', strike: undefined })]);
    expect(multi.status).toBe(400);
    expect(paths(multi.body)).toEqual(['[1].source', '[2].strike']);
  });
});

describe('euBarrier: market state', () => {
  it('503 when the data is stale, naming why', async () => {
    clock.advance(OBS + 31);
    try {
      const r = await post([item()]);
      expect(r.status).toBe(503);
      expect(r.body.message).toMatch(/stale/);
    } finally {
      cache.touch('DERIBIT', BTC, OBS + 31);
      cache.touch('DERIBIT', ETH, OBS + 31);
    }
    expect((await post([item()])).status).toBe(200);
  });
});
