/**
 * Request fuzz of the REST API (issue 8 "A request fuzz of 10,000 invalid and mutated requests
 * across all endpoints: only 4xx, zero 5xx, and the service answers correctly afterwards").
 *
 * The application is buildApp() over a cache holding the surface calibrated from the REAL recorded
 * 878-option Deribit BTC chain plus hourly funding points. For every endpoint a valid request is
 * the seed; 10,000 requests through fastify inject() are seeded mutations of those: structural
 * body mutations (deleted, retyped, extreme or renamed fields, nested junk, oversized batches),
 * byte-level damage of the JSON text, query mutations (dropped, repeated, junk or huge values),
 * path mutations, wrong methods and content types, prototype-pollution payloads. Then a few
 * hundred of the same over real HTTP on 127.0.0.1, plus malformed raw HTTP.
 *
 * Checked: no 5xx at all (a mutated request that happens to be valid may answer 2xx; 503 is
 * allowed only with the documented "warming up"/"not connected" reason for a pair the cache does
 * not hold), every error body has the error shape with statusCode = HTTP status; every 200 answer
 * of the IV/valuation endpoints carries finite positive implied vols; no prototype pollution;
 * afterwards every seed request answers exactly as before.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { realChainCache, type RealChainCache } from '../helpers/realChainCache.js';
import { FuzzRng, mutateJson, mutateText } from './mutate.js';

const FUZZ_REQUESTS = 10_000;
const HTTP_REQUESTS = 300;

interface Seed {
  readonly name: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
}

let market: RealChainCache;
let app: FastifyInstance;
let seeds: Seed[];
let baseline: Map<string, { status: number; body: string }>;

function buildSeeds(m: RealChainCache): Seed[] {
  const exp = m.expiries[3]!;
  const F = m.forwards[3]!;
  const K = Math.round(F / 1000) * 1000;
  const pair = { baseCurrency: 'BTC', quoteCurrency: 'USD' };
  const vanilla = { instrumentId: 'v1', ...pair, amount: 1, vanillaOptionType: 'CALL', source: 'DERIBIT', priceMethod: 'DERIBIT', expirationTimestamp: exp, strike: K, volatilityModel: 'SVI' };
  const scen = { instrumentId: 'r1', size: 2, ...pair, source: 'DERIBIT', priceMethod: 'DERIBIT', instrumentType: 'CALL', volatilityModel: 'SVI', expirationTimestamp: exp, strike: K };
  const { priceMethod: _pm, ...advanced } = scen; // advancedRiskScenarios values each instrument with its source's method
  const q = { source: 'DERIBIT', ...pair };
  const obs = Math.floor(m.observationTimestamp);
  return [
    { name: 'vanilla', method: 'POST', path: '/api/v1/global/optionValuation/vanilla', body: [vanilla, { ...vanilla, instrumentId: 'v2', vanillaOptionType: 'PUT', strike: K * 0.9 }, { ...vanilla, instrumentId: 'v3', vanillaOptionType: 'FORWARD' }] },
    { name: 'byStrike', method: 'POST', path: '/api/v1/global/data/iV/byStrike', body: [{ instrumentId: 's1', ...pair, source: 'XCHG_A', volatilityModel: 'SVI', expirationTimestamp: exp, strike: K }] },
    { name: 'byDelta', method: 'POST', path: '/api/v1/global/data/iV/byDelta', body: [{ instrumentId: 'd1', ...pair, source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: exp, delta: 0.25 }] },
    {
      name: 'euBarrier',
      method: 'POST',
      path: '/api/v1/global/optionValuation/euBarrier',
      body: [{ instrumentId: 'b1', ...pair, source: 'DERIBIT', volatilityModel: 'SVI', europeanBarrierOptionType: 'CALL', expirationTimestamp: exp, strike: K, barrierType: 'UP_AND_OUT', barrier: K * 1.3 }],
    },
    {
      name: 'riskScenarios',
      method: 'POST',
      path: '/api/v1/global/scenarios/riskScenarios',
      body: { riskScenarioInstruments: [scen], riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.2, volRangeUp: 0.05, volRangeDown: 0.05 } },
    },
    {
      name: 'volRangeRiskScenarios',
      method: 'POST',
      path: '/api/v1/global/scenarios/volRangeRiskScenarios',
      body: { riskScenarioInstruments: [scen], riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.2, volShifts: [-0.2, 0, 0.2, 0.5] } },
    },
    {
      name: 'advancedRiskScenarios',
      method: 'POST',
      path: '/api/v1/global/scenarios/advancedRiskScenarios',
      body: {
        riskScenarioInstruments: [advanced],
        riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.16, volRangeUp: 0.5, volRangeDown: 0.25, minVolForShockUp: 0.5, shortTermVegaPower: 0.3, longTermVegaPower: 0.13 },
      },
    },
    { name: 'surface', method: 'GET', path: '/api/v1/global/data/surface', query: { ...q, volatilityModel: 'SVI' } },
    { name: 'iVSummary', method: 'GET', path: '/api/v1/global/data/iVSummary', query: { ...q, volatilityModel: 'SVI' } },
    { name: 'forwardCurve', method: 'GET', path: '/api/v1/global/data/forwardCurve', query: q },
    { name: 'fundingRates', method: 'GET', path: '/api/v1/global/data/fundingRates', query: { source: 'DERIBIT', instrumentId: 'BTC-PERPETUAL', startTime: String(obs - 86_400), endTime: String(obs) } },
    { name: 'fundingInstruments', method: 'GET', path: '/api/v1/global/data/fundingInstruments', query: { source: 'DERIBIT' } },
    { name: 'health', method: 'GET', path: '/health' },
    { name: 'ready', method: 'GET', path: '/ready' },
  ];
}

const qs = (q: Record<string, string> | undefined): string => (q ? `?${new URLSearchParams(q).toString()}` : '');

interface Req {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

/** One mutated request from a seed (see the module docstring). */
function mutateRequest(seed: Seed, rng: FuzzRng): Req {
  const json = { 'content-type': 'application/json' };
  let url = seed.path + qs(seed.query);
  let method: string = seed.method;
  let headers: Record<string, string> = seed.method === 'POST' ? { ...json } : {};
  let payload: string | undefined = seed.body === undefined ? undefined : JSON.stringify(seed.body);
  const op = rng.int(100);
  if (seed.body !== undefined && op < 45) {
    payload = JSON.stringify(mutateJson(seed.body, rng, 4)) ?? 'null';
  } else if (seed.body !== undefined && op < 60) {
    payload = mutateText(payload!, rng);
  } else if (seed.body !== undefined && op < 63) {
    // oversized batches
    const item = Array.isArray(seed.body) ? seed.body[0] : (seed.body as { riskScenarioInstruments: unknown[] }).riskScenarioInstruments[0];
    const n = rng.pick([0, 51, 101, 500]);
    const many = Array.from({ length: n }, (_, i) => ({ ...(item as object), instrumentId: `x${i}` }));
    payload = JSON.stringify(Array.isArray(seed.body) ? many : { ...(seed.body as object), riskScenarioInstruments: many });
  } else if (op < 66) {
    payload = rng.pick(['{"__proto__":{"polluted":1}}', '[{"__proto__":{"polluted":1},"instrumentId":"p"}]', '[{"constructor":{"prototype":{"polluted":1}}}]', '{"a":'.repeat(5000)]);
    method = 'POST';
    headers = { ...json };
  } else if (op < 74 && seed.query) {
    const q: Record<string, string> = { ...seed.query };
    const keys = Object.keys(q);
    const k = rng.pick(keys);
    switch (rng.int(6)) {
      case 0:
        delete q[k];
        break;
      case 1:
        q[k] = String(mutateJson(q[k], rng, 1));
        break;
      case 2:
        q[k] = rng.pick(['', ' ', '-1', '1e400', 'NaN', 'null', '%00', '\u202e', 'x'.repeat(5000), '0x10', '1.5e9.2']);
        break;
      case 3:
        q[`${k}[]`] = q[k]!;
        break;
      case 4:
        q[k] = q[k]!.toLowerCase();
        break;
      default:
        q[`extra${rng.int(9)}`] = 'junk';
    }
    url = seed.path + qs(q);
    if (rng.chance(0.2)) url += `&${k}=${encodeURIComponent(q[k] ?? 'dup')}`; // repeated parameter
  } else if (op < 80) {
    url = rng.pick([
      `${seed.path}/`,
      `${seed.path}x`,
      seed.path.toUpperCase(),
      seed.path.replace('/v1/', '/v2/'),
      `${seed.path}/../../etc/passwd`,
      seed.path.replace('/api', '/%61pi'),
      `${seed.path}%00`,
      `${seed.path}?${'a=1&'.repeat(3000)}`,
      `/${'x'.repeat(3000)}`,
      `${seed.path}#frag`,
    ]);
  } else if (op < 86) {
    method = rng.pick(['PUT', 'DELETE', 'PATCH', 'OPTIONS', seed.method === 'GET' ? 'POST' : 'GET', 'HEAD']);
    if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
      headers = { ...json };
      payload ??= '{}';
    }
  } else if (op < 93 && seed.method === 'POST') {
    headers = { 'content-type': rng.pick(['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=z', 'application/json; charset=utf-16', 'application/jsonx', '']) };
    if (headers['content-type'] === '') headers = {};
  } else if (seed.method === 'POST') {
    payload = rng.pick(['', 'null', '[]', '{}', '"x"', '0', 'true', '[null]', '[[]]', '[{}]', '{"riskScenarioInstruments":null}']);
  } else {
    url = seed.path + qs(seed.query) + `&${'k'.repeat(rng.int(50) + 1)}=${'v'.repeat(rng.int(200))}`;
  }
  return { method, url, headers, ...(payload !== undefined && method !== 'GET' && method !== 'HEAD' ? { payload } : {}) };
}

const IV_ENDPOINTS = new Set(['vanilla', 'byStrike', 'byDelta']);

/**
 * Extreme numbers put in every numeric field (issue 14: 1.1e308 on expirationTimestamp gave a 500; 6.4e16 a
 * 200 with `impliedVolatility: null`): overflow, underflow, the limits +- one, signed zero, huge integers.
 */
const EXTREME_NUMBERS = [1.1e308, -1.1e308, 1e300, 6.4e16, 7e12, 1e15, 2 ** 53, 4_102_444_801, 1e9 + 1, -1e9 - 1, 1e9, -1, -0, 0, 5e-324, 1e-300, 0.5];

/** Result fields of the POST endpoints the OpenAPI document declares nullable (the scenarios' instrument echo). */
const NULLABLE_FIELDS = new Set(['inverse', 'volatilityModel', 'expirationTimestamp', 'strike', 'forwardPrice', 'instrumentPrice', 'volatility']);

/** Paths (`a.b[2].c`) of every number in `v`. */
function numericPaths(v: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (typeof v === 'number') return [path];
  if (Array.isArray(v)) return v.flatMap((x, i) => numericPaths(x, [...path, i]));
  if (v && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => numericPaths(x, [...path, k]));
  return [];
}

/** A deep copy of `v` with the value at `path` replaced. */
function withValue(v: unknown, path: (string | number)[], value: unknown): unknown {
  const copy = structuredClone(v) as any;
  let o = copy;
  for (const k of path.slice(0, -1)) o = o[k];
  o[path[path.length - 1]!] = value;
  return copy;
}

/** The first null of `body` at a field that is not documented nullable, or undefined. */
function nullWhereNumber(body: unknown, path = ''): string | undefined {
  if (Array.isArray(body)) {
    for (let i = 0; i < body.length; i++) {
      const b = nullWhereNumber(body[i], `${path}[${i}]`);
      if (b) return b;
    }
  } else if (body && typeof body === 'object') {
    for (const [k, x] of Object.entries(body)) {
      if (x === null && !NULLABLE_FIELDS.has(k)) return `${path}.${k}`;
      const b = nullWhereNumber(x, `${path}.${k}`);
      if (b) return b;
    }
  }
  return undefined;
}

interface Tally {
  byStatus: Map<number, number>;
  problems: string[];
}

function judge(seed: Seed, req: Req, status: number, text: string, t: Tally): void {
  t.byStatus.set(status, (t.byStatus.get(status) ?? 0) + 1);
  const note = (why: string) => {
    if (t.problems.length < 20) t.problems.push(`${why}: ${req.method} ${req.url.slice(0, 200)} ${String(req.payload ?? '').slice(0, 200)} -> ${status} ${text.slice(0, 300)}`);
  };
  if (status >= 500 && status !== 503) return note('5xx');
  let body: any = null;
  try {
    body = text.length > 0 ? JSON.parse(text) : null;
  } catch {
    if (req.method !== 'HEAD') note('non-JSON body');
    return;
  }
  if (status === 503) {
    if (!/warming up|not connected/.test(String(body?.message))) note('503 other than warming-up / not-connected');
    return;
  }
  if (status >= 400) {
    if (req.method === 'HEAD') return;
    if (!body || body.statusCode !== status || typeof body.error !== 'string' || typeof body.message !== 'string') note('error body not in the error shape');
    if (/\bat \S+\.(ts|js):\d+/.test(text)) note('stack trace leaked');
    return;
  }
  if (status === 200 && IV_ENDPOINTS.has(seed.name) && req.url.startsWith(seed.path) && Array.isArray(body)) {
    for (const row of body) {
      const iv = row?.impliedVolatility;
      // finite and positive; far-wing strikes (mutated to 1000 x F) legitimately get SVI's large wing vols
      if (!(typeof iv === 'number' && Number.isFinite(iv) && iv > 0 && iv < 100)) note(`implied vol ${iv} served`);
    }
  }
}

async function answersOf(a: FastifyInstance): Promise<Map<string, { status: number; body: string }>> {
  const out = new Map<string, { status: number; body: string }>();
  for (const s of seeds) {
    const r = await a.inject({ method: s.method, url: s.path + qs(s.query), ...(s.body !== undefined ? { payload: s.body as object } : {}) });
    out.set(s.name, { status: r.statusCode, body: r.body });
  }
  return out;
}

beforeAll(async () => {
  market = realChainCache(undefined, 1e9);
  const obs = Math.floor(market.observationTimestamp / 3600) * 3600;
  for (let h = 0; h < 48; h++) {
    market.cache.addFunding({ kind: 'funding', source: 'DERIBIT', instrumentId: 'BTC-PERPETUAL', base: 'BTC', quote: 'USD', interest: 1e-5 * ((h % 7) - 3), intervalHours: 1, timestamp: obs - h * 3600 });
  }
  seeds = buildSeeds(market);
  app = await buildApp({ cache: market.cache });
  baseline = await answersOf(app);
});
afterAll(async () => {
  await app?.close();
});

describe('request fuzz', () => {
  it('every seed request is valid and answers 200 (the fuzz starts from working requests)', () => {
    for (const s of seeds) {
      const b = baseline.get(s.name)!;
      expect(b.status, `${s.name}: ${b.body.slice(0, 300)}`).toBe(200);
    }
    const iv = JSON.parse(baseline.get('byStrike')!.body);
    expect(iv[0].impliedVolatility).toBeGreaterThan(0.2);
    expect(iv[0].impliedVolatility).toBeLessThan(1.5);
  });

  it(`${FUZZ_REQUESTS} mutated requests through inject(): no 5xx, the error shape everywhere, sane numbers, no pollution`, async () => {
    const rng = new FuzzRng(0x5eed);
    const t: Tally = { byStatus: new Map(), problems: [] };
    for (let i = 0; i < FUZZ_REQUESTS; i++) {
      const seed = seeds[i % seeds.length]!;
      const req = mutateRequest(seed, rng);
      const r = await app.inject({ method: req.method as 'GET', url: req.url, headers: req.headers, ...(req.payload !== undefined ? { payload: req.payload } : {}) });
      judge(seed, req, r.statusCode, r.body, t);
    }
    expect(t.problems).toEqual([]);
    const counts = Object.fromEntries([...t.byStatus.entries()].sort((a, b) => a[0] - b[0]));
    if (process.env.FUZZ_REPORT) console.info('request fuzz statuses', counts);
    const total = [...t.byStatus.values()].reduce((a, b) => a + b, 0);
    expect(total).toBe(FUZZ_REQUESTS);
    // the mix really hit the error paths: 400, 404, 413/415 and some surviving valid requests
    expect(counts[400] ?? 0).toBeGreaterThan(FUZZ_REQUESTS / 5);
    expect(counts[404] ?? 0).toBeGreaterThan(50);
    expect((counts[415] ?? 0) + (counts[413] ?? 0)).toBeGreaterThan(50);
    expect(counts[200] ?? 0).toBeGreaterThan(100);
    expect(Object.keys(counts).filter((c) => Number(c) >= 500 && Number(c) !== 503)).toEqual([]);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect((Object.prototype as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('extreme numbers in every numeric field, one and two at a time: no 5xx, no null where a number is documented', async () => {
    const t: Tally = { byStatus: new Map(), problems: [] };
    let requests = 0;
    const send = async (seed: Seed, body: unknown | undefined, query: Record<string, string> | undefined) => {
      requests++;
      const req: Req = { method: seed.method, url: seed.path + qs(query), headers: seed.method === 'POST' ? { 'content-type': 'application/json' } : {}, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) };
      const r = await app.inject({ method: req.method as 'GET', url: req.url, headers: req.headers, ...(req.payload !== undefined ? { payload: req.payload } : {}) });
      judge(seed, req, r.statusCode, r.body, t);
      if (r.statusCode === 200) {
        const nul = nullWhereNumber(JSON.parse(r.body));
        if (nul && t.problems.length < 20) t.problems.push(`null at ${nul}: ${req.url} ${String(req.payload).slice(0, 300)}`);
      }
    };
    for (const seed of seeds) {
      if (seed.body !== undefined) {
        const paths = numericPaths(seed.body);
        for (const p of paths) for (const x of EXTREME_NUMBERS) await send(seed, withValue(seed.body, p, x), seed.query);
        // two fields at once (the 6.4e16 expiry with a 7e12 strike), a few values each
        for (let i = 0; i < paths.length; i++) {
          for (let j = i + 1; j < paths.length; j++) {
            for (const x of [1.1e308, 6.4e16, 7e12, 1e-300]) for (const y of [7e12, 1e9, 5e-324, -1.1e308]) await send(seed, withValue(withValue(seed.body, paths[i]!, x), paths[j]!, y), seed.query);
          }
        }
      } else if (seed.query) {
        for (const k of Object.keys(seed.query).filter((k) => /Time$/.test(k))) {
          for (const x of EXTREME_NUMBERS) await send(seed, undefined, { ...seed.query, [k]: String(x) });
        }
      }
    }
    expect(t.problems).toEqual([]);
    expect(requests).toBeGreaterThan(1000);
    const counts = Object.fromEntries([...t.byStatus.entries()].sort((a, b) => a[0] - b[0]));
    if (process.env.FUZZ_REPORT) console.info('extreme-number statuses', counts, requests);
    expect(Object.keys(counts).filter((c) => Number(c) >= 500 && Number(c) !== 503)).toEqual([]);
    // the bounds answer 400, and the in-range extremes (0.5, 1e9, 0...) still reach the models
    expect(counts[400] ?? 0).toBeGreaterThan(requests / 2);
    expect(counts[200] ?? 0).toBeGreaterThan(50);
  });

  it('afterwards every seed request answers exactly as before', async () => {
    const after = await answersOf(app);
    for (const s of seeds) expect(after.get(s.name), s.name).toEqual(baseline.get(s.name));
  });

  it(`${HTTP_REQUESTS} mutated requests and malformed raw HTTP over 127.0.0.1: no 5xx, then correct answers`, async () => {
    const server = await buildApp({ cache: market.cache, security: { rateLimit: { max: 100_000, timeWindowMs: 60_000 } } });
    try {
      await server.listen({ port: 0, host: '127.0.0.1' });
      const base = `http://127.0.0.1:${(server.server.address() as { port: number }).port}`;
      const rng = new FuzzRng(0x4777);
      const t: Tally = { byStatus: new Map(), problems: [] };
      for (let i = 0; i < HTTP_REQUESTS; i++) {
        const seed = seeds[i % seeds.length]!;
        const req = mutateRequest(seed, rng);
        if (req.method === 'OPTIONS' || req.url.includes('#') || req.url.includes('%00')) continue; // fetch/undici normalize these away
        let res: Response;
        try {
          res = await fetch(base + req.url, { method: req.method, headers: req.headers, ...(req.payload !== undefined ? { body: req.payload } : {}) });
        } catch (e) {
          t.problems.push(`fetch failed: ${req.method} ${req.url.slice(0, 120)}: ${(e as Error).message}`);
          continue;
        }
        judge(seed, req, res.status, await res.text(), t);
      }
      // malformed HTTP on raw sockets: fastify's client-error handler answers 4xx and closes
      const raw = [
        'GARBAGE\r\n\r\n',
        'GET / HTTP/9.9\r\n\r\n',
        `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        'POST /api/v1/global/data/iV/byStrike HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: -5\r\n\r\n[]',
        'POST /api/v1/global/data/iV/byStrike HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nzz\r\n',
        'GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
      ];
      for (const text of raw) {
        const answer = await new Promise<string>((resolve) => {
          const sock = connect((server.server.address() as { port: number }).port, '127.0.0.1');
          let got = '';
          const done = () => resolve(got);
          const guard = setTimeout(() => {
            sock.destroy();
            done();
          }, 10_000);
          sock.on('data', (d) => (got += String(d)));
          sock.on('close', () => {
            clearTimeout(guard);
            done();
          });
          sock.on('error', () => undefined);
          sock.write(text);
        });
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
        expect(status, JSON.stringify(text.slice(0, 80))).toBeGreaterThanOrEqual(400);
        expect(status, JSON.stringify(text.slice(0, 80))).toBeLessThan(500);
      }
      expect(t.problems).toEqual([]);
      expect([...t.byStatus.keys()].filter((s) => s >= 500 && s !== 503)).toEqual([]);
      // the server still answers correctly
      for (const s of seeds) {
        const r = await fetch(base + s.path + qs(s.query), { method: s.method, ...(s.body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(s.body) } : {}) });
        expect(r.status, s.name).toBe(200);
        expect(await r.text(), s.name).toBe(baseline.get(s.name)!.body);
      }
    } finally {
      await server.close();
    }
  });
});
