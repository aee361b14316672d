/**
 * Input limits (src/api/limits.ts, docs/operations.md "Input limits"), 405 on undeclared methods, and the live
 * OpenAPI document (src/api/plugins/openapiLive.ts), through fastify inject() on a cache calibrated from the
 * REAL recorded Deribit BTC chain (test/helpers/realChainCache.ts), clock at its observation time.
 *
 * The issue's findings are replayed exactly: expirationTimestamp 1.1e308 on vanilla (was a 500), byStrike at
 * 6.4e16 with a 7e12 strike (was a 200 with `impliedVolatility: null`), TRACE (was a 404).
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/app.js';
import { memoryHistory } from '../helpers/historyStore.js';
import { EXPIRY_HORIZON_S, MAX_NOTIONAL, MAX_PRICE, MAX_UNIX_TIME_S, MONEYNESS_FACTOR } from '../../src/api/limits.js';
import { DOC_EXPIRY_MARGIN_S } from '../../src/api/plugins/openapiLive.js';
import { realChainCache, type RealChainCache } from '../helpers/realChainCache.js';

type Json = Record<string, any>;

let m: RealChainCache;
let app: FastifyInstance;
let now: number;

const pair = { baseCurrency: 'BTC', quoteCurrency: 'USD' } as const;
const VANILLA = '/api/v1/global/optionValuation/vanilla';
const BY_STRIKE = '/api/v1/global/data/iV/byStrike';
const BY_DELTA = '/api/v1/global/data/iV/byDelta';
const BARRIER = '/api/v1/global/optionValuation/euBarrier';
const RISK = '/api/v1/global/scenarios/riskScenarios';

const vanilla = (over: Json) => [{ instrumentId: 'v', ...pair, amount: 1, vanillaOptionType: 'CALL', source: 'DERIBIT', priceMethod: 'DERIBIT', expirationTimestamp: m.expiries[3], strike: 80_000, volatilityModel: 'SVI', ...over }];
const byStrike = (over: Json) => [{ instrumentId: 's', ...pair, source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: m.expiries[3], strike: 80_000, ...over }];
const byDelta = (over: Json) => [{ instrumentId: 'd', ...pair, source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: m.expiries[3], delta: 0.25, ...over }];
const barrier = (over: Json) => [{ instrumentId: 'b', ...pair, source: 'DERIBIT', volatilityModel: 'SVI', europeanBarrierOptionType: 'CALL', expirationTimestamp: m.expiries[3], strike: 80_000, barrierType: 'UP_AND_OUT', barrier: 100_000, ...over }];
const risk = (over: Json) => ({
  riskScenarioInstruments: [{ instrumentId: 'r', size: 1, ...pair, source: 'DERIBIT', priceMethod: 'DERIBIT', instrumentType: 'CALL', volatilityModel: 'SVI', expirationTimestamp: m.expiries[3], strike: 80_000, ...over }],
  riskScenarioParameters: { priceRangeSteps: 2, priceRange: 0.1, volRangeUp: 0.05, volRangeDown: 0.05 },
});

async function post(url: string, payload: unknown) {
  const r = await app.inject({ method: 'POST', url, payload: payload as object });
  return { status: r.statusCode, body: r.json() as Json };
}

/** The messages of a 400's details, joined. */
const detailText = (b: Json) => (b.details as Array<{ path: string; message: string }>).map((d) => `${d.path}: ${d.message}`).join(' | ');

let history: Awaited<ReturnType<typeof memoryHistory>> | null = null;

beforeAll(async () => {
  m = realChainCache(undefined, 1e9);
  now = m.clock.now();
  const obs = Math.floor(now / 3600) * 3600;
  for (let h = 0; h < 24; h++) {
    m.cache.addFunding({ kind: 'funding', source: 'DERIBIT', instrumentId: 'BTC-PERPETUAL', base: 'BTC', quote: 'USD', interest: 1e-5, intervalHours: 1, timestamp: obs - h * 3600 });
  }
  history = await memoryHistory(m.cache);
  app = await buildApp({ cache: m.cache, history });
});
afterAll(async () => {
  await app?.close();
  await history?.store.close();
});

describe('the issue findings, replayed', () => {
  it('vanilla with expirationTimestamp 1.1e308: 400 naming the timestamp limit (was a 500)', async () => {
    const r = await post(VANILLA, vanilla({ expirationTimestamp: 1.1e308 }));
    expect(r.status).toBe(400);
    expect(detailText(r.body)).toContain(`[0].expirationTimestamp: Must be <= ${MAX_UNIX_TIME_S}`);
    expect(detailText(r.body)).toContain('timestamp limit');
  });

  it('byStrike at 6.4e16 with a 7e12 strike: 400 (was a 200 with impliedVolatility null)', async () => {
    const r = await post(BY_STRIKE, byStrike({ expirationTimestamp: 6.4e16, strike: 7e12 }));
    expect(r.status).toBe(400);
    expect(detailText(r.body)).toMatch(/\[0\]\.expirationTimestamp: .*timestamp limit/);
    expect(detailText(r.body)).toMatch(/\[0\]\.strike: .*price limit/);
  });

  it('TRACE, PUT, DELETE, PATCH, OPTIONS on declared paths: 405 with Allow; unknown paths stay 404', async () => {
    for (const method of ['TRACE', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const) {
      const r = await app.inject({ method, url: VANILLA });
      expect(r.statusCode, method).toBe(405);
      expect(r.headers.allow, method).toBe('POST');
      expect(r.json()).toMatchObject({ statusCode: 405, error: 'Method Not Allowed' });
      const g = await app.inject({ method, url: '/api/v1/global/data/surface?source=DERIBIT' });
      expect(g.statusCode, method).toBe(405);
      expect(g.headers.allow, method).toBe('GET, HEAD');
      const u = await app.inject({ method, url: '/api/v1/global/data/nothing' });
      expect(u.statusCode, method).toBe(404);
      expect(u.headers.allow).toBeUndefined();
    }
    // a GET on a POST-only path is a 405 as well, and the declared method still works
    const g = await app.inject({ method: 'GET', url: BY_STRIKE });
    expect(g.statusCode).toBe(405);
    expect(g.headers.allow).toBe('POST');
    expect((await post(BY_STRIKE, byStrike({}))).status).toBe(200);
  });
});

describe('the expiry window: from the service clock to 10 years after it', () => {
  it('every endpoint with an expiry: just inside is 200, one day beyond 10 years is a 400 naming the limit', async () => {
    const inside = Math.floor(now + EXPIRY_HORIZON_S) - 60;
    const beyond = Math.ceil(now + EXPIRY_HORIZON_S) + 86400;
    const cases: Array<[string, (o: Json) => unknown, string]> = [
      [VANILLA, vanilla, '[0].expirationTimestamp'],
      [BY_STRIKE, byStrike, '[0].expirationTimestamp'],
      [BY_DELTA, byDelta, '[0].expirationTimestamp'],
      [BARRIER, barrier, '[0].expirationTimestamp'],
      [RISK, risk, 'riskScenarioInstruments[0].expirationTimestamp'],
    ];
    for (const [url, body, path] of cases) {
      const ok = await post(url, body({ expirationTimestamp: inside }));
      if (url === BY_DELTA) {
        // 10 years out the surface (constant-vol extrapolation past the last listed expiry) has no 25-delta
        // call strike: a 400 on delta, not on the expiry
        expect(ok.status === 200 || (ok.status === 400 && ok.body.details[0].path === '[0].delta'), JSON.stringify(ok.body).slice(0, 300)).toBe(true);
        expect((await post(url, body({ expirationTimestamp: m.expiries.at(-1)! }))).status).toBe(200);
      } else expect(ok.status, `${url} ${JSON.stringify(ok.body).slice(0, 300)}`).toBe(200);
      const bad = await post(url, body({ expirationTimestamp: beyond }));
      expect(bad.status, url).toBe(400);
      expect(detailText(bad.body), url).toContain(`${path}: Must be at most 10 years (${EXPIRY_HORIZON_S} s, the expiry horizon limit)`);
    }
  });

  it('10 years out, the figures are finite numbers (a forward extrapolated 10 years, its vol, the Greeks)', async () => {
    const r = await post(VANILLA, vanilla({ expirationTimestamp: Math.floor(now + EXPIRY_HORIZON_S) - 60 }));
    for (const [k, v] of Object.entries(r.body[0] as Json)) if (k !== 'instrumentId') expect(Number.isFinite(v), k).toBe(true);
    expect(r.body[0].impliedVolatility).toBeGreaterThan(0.05);
    expect(r.body[0].impliedVolatility).toBeLessThan(5);
  });
});

describe('prices and notionals', () => {
  it('strike and barrier must lie within 100x of the forward; the message gives the bounds', async () => {
    const F = m.forwards[3]!;
    const inside = await post(BY_STRIKE, byStrike({ strike: F * MONEYNESS_FACTOR * 0.999 }));
    expect(inside.status).toBe(200);
    expect(inside.body[0].impliedVolatility).toBeGreaterThan(0);
    const far = await post(BY_STRIKE, byStrike({ strike: F * MONEYNESS_FACTOR * 1.01 }));
    expect(far.status).toBe(400);
    expect(detailText(far.body)).toMatch(/\[0\]\.strike: Must be within 100x of the expiry's forward [\d.]+ \(the moneyness limit\): from [\d.]+ to [\d.]+/);
    const low = await post(VANILLA, vanilla({ strike: F / MONEYNESS_FACTOR / 1.01 }));
    expect(low.status).toBe(400);
    expect(detailText(low.body)).toContain('moneyness limit');
    const b = await post(BARRIER, barrier({ barrier: F * 150 }));
    expect(b.status).toBe(400);
    expect(detailText(b.body)).toContain('[0].barrier: Must be within 100x');
    const s = await post(RISK, risk({ strike: F / 150 }));
    expect(s.status).toBe(400);
    expect(detailText(s.body)).toContain('riskScenarioInstruments[0].strike: Must be within 100x');
  });

  it('strike above the price limit, amount and size above the notional limit: 400 naming the limit', async () => {
    const k = await post(VANILLA, vanilla({ strike: MAX_PRICE * 2 }));
    expect(detailText(k.body)).toContain(`[0].strike: Must be <= ${MAX_PRICE} (the price limit)`);
    const a = await post(VANILLA, vanilla({ amount: -MAX_NOTIONAL * 2 }));
    expect(a.status).toBe(400);
    expect(detailText(a.body)).toContain(`[0].amount: Must be >= -${MAX_NOTIONAL} (the notional limit)`);
    const s = await post(RISK, risk({ size: 1.1e308 }));
    expect(s.status).toBe(400);
    expect(detailText(s.body)).toContain('notional limit');
    // the largest notional still gives finite figures, proportional to the amount
    const one = await post(VANILLA, vanilla({}));
    const big = await post(VANILLA, vanilla({ amount: MAX_NOTIONAL }));
    expect(big.status).toBe(200);
    expect(big.body[0].valueBase / one.body[0].valueBase).toBeCloseTo(MAX_NOTIONAL, -1);
  });

  it('fundingRates times above the timestamp limit: 400, never a 500', async () => {
    for (const t of ['1.1e308', '1e400', String(MAX_UNIX_TIME_S + 1)]) {
      const r = await app.inject({ method: 'GET', url: `/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=BTC-PERPETUAL&startTime=0&endTime=${t}` });
      expect(r.statusCode, t).toBe(400);
    }
    const ok = await app.inject({ method: 'GET', url: `/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=BTC-PERPETUAL&startTime=0&endTime=${MAX_UNIX_TIME_S}` });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toHaveLength(24);
  });
});

describe('the live OpenAPI document', () => {
  let doc: Json;
  beforeAll(async () => {
    doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  });

  it('is valid OpenAPI 3.0 with the combinators added', async () => {
    await SwaggerParser.validate(structuredClone(doc) as never);
  });

  it('states the expiry window of the service clock on every expirationTimestamp of a request body', () => {
    let seen = 0;
    for (const ops of Object.values(doc.paths as Json)) {
      for (const op of Object.values(ops as Json)) {
        const text = JSON.stringify(op.requestBody ?? {});
        for (const mt of text.matchAll(/"expirationTimestamp":\{[^}]*?"minimum":(\d+),"maximum":(\d+)/g)) {
          seen++;
          expect(Number(mt[1])).toBe(Math.ceil(now) + DOC_EXPIRY_MARGIN_S);
          expect(Number(mt[2])).toBe(Math.floor(now) + EXPIRY_HORIZON_S);
        }
      }
    }
    expect(seen).toBe(7); // vanilla, byStrike, byDelta, euBarrier, three scenario endpoints
  });

  it('the per-pair strike range holds at every expiry of the window: its bounds are accepted at the first and the last', async () => {
    const item = doc.paths[BY_STRIKE].post.requestBody.content['application/json'].schema.items;
    const branch = item.allOf[0].anyOf.find((b: Json) => b.properties.baseCurrency.enum[0] === 'BTC');
    const { minimum, maximum } = branch.properties.strike;
    expect(minimum).toBeGreaterThan(m.forwards[0]! / MONEYNESS_FACTOR);
    expect(maximum).toBeLessThan(m.forwards[0]! * MONEYNESS_FACTOR);
    for (const e of [Math.ceil(now) + DOC_EXPIRY_MARGIN_S, Math.floor(now) + EXPIRY_HORIZON_S]) {
      for (const strike of [minimum, maximum]) {
        const r = await post(BY_STRIKE, byStrike({ expirationTimestamp: e, strike }));
        expect(r.status, `${e} ${strike} ${JSON.stringify(r.body).slice(0, 200)}`).toBe(200);
      }
    }
  });

  it('option types state their required fields (oneOf) and the inverse flag of each pair', () => {
    const v = doc.paths[VANILLA].post.requestBody.content['application/json'].schema.items;
    const types = v.allOf.find((x: Json) => x.oneOf).oneOf;
    expect(types[0]).toMatchObject({ required: ['vanillaOptionType', 'strike'], properties: { vanillaOptionType: { enum: ['CALL', 'PUT'] } } });
    expect(v.allOf[0].anyOf[0].properties.inverse.enum).toEqual([true]); // DERIBIT BTC/USD is inverse
    const b = doc.paths[BARRIER].post.requestBody.content['application/json'].schema.items;
    expect(b.properties.volatilityModel.enum).toEqual(['SVI']);
    expect(b.allOf[0].anyOf.map((x: Json) => x.properties.source.enum)).toEqual([['DERIBIT', 'XCHG_A']]);
  });

  it('every example works: each request body and query example answers 200 against the running app', async () => {
    let n = 0;
    for (const [url, ops] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(ops as Json)) {
        // endless Server-Sent Events streams (their own tests: test/e2e, test/integration/stream.test.ts)
        if (url === '/dashboard/api/stream' || url === '/api/v1/stream') {
          for (const p of (op.parameters ?? []) as Json[]) if (p.required) expect(p.example, `${url} example of ${p.name}`).toBeDefined();
          continue;
        }
        const example = op.requestBody?.content?.['application/json']?.example;
        if (method === 'post') expect(example, url).toBeDefined();
        const q = new URLSearchParams(Object.fromEntries(((op.parameters ?? []) as Json[]).filter((p) => p.example !== undefined).map((p) => [p.name, String(p.example)])));
        const required = ((op.parameters ?? []) as Json[]).filter((p) => p.required).map((p) => p.name);
        for (const r of required) expect(q.has(r), `${url} example of ${r}`).toBe(true);
        const res = await app.inject({ method: method.toUpperCase() as 'GET', url: `${url}${q.size ? `?${q}` : ''}`, ...(example ? { payload: example } : {}) });
        expect(res.statusCode, `${method} ${url}: ${res.body.slice(0, 300)}`).toBe(200);
        n++;
      }
    }
    expect(n).toBeGreaterThanOrEqual(14);
  });

  it('fundingRates lists the funding instruments held as the enum of instrumentId', () => {
    const prm = doc.paths['/api/v1/global/data/fundingRates'].get.parameters.find((p: Json) => p.name === 'instrumentId');
    expect(prm.schema.enum).toEqual(['BTC-PERPETUAL']);
  });

  it('error examples carry the real status code of their response (no 599)', () => {
    let n = 0;
    for (const ops of Object.values(doc.paths as Json)) {
      for (const op of Object.values(ops as Json)) {
        for (const [code, res] of Object.entries(op.responses as Json)) {
          if (Number(code) < 400) continue;
          const ex = (res as Json).content['application/json'].example;
          expect(ex.statusCode).toBe(Number(code));
          expect(typeof ex.error).toBe('string');
          n++;
        }
      }
    }
    expect(n).toBeGreaterThan(50);
  });

  it('/docs loads and links /openapi.json (not /docs/json), the same live document', async () => {
    const init = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(init.body).toContain('"urls":[{"url":"/openapi.json"');
    const copy = (await app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(copy.paths[VANILLA].post.requestBody.content['application/json'].example).toEqual(doc.paths[VANILLA].post.requestBody.content['application/json'].example);
  });
});
