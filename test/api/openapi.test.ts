/**
 * GET /openapi.json: a valid OpenAPI 3.0 document (@apidevtools/swagger-parser validates it against the
 * OpenAPI 3.0 JSON schema and resolves every $ref) that lists every route the app serves and nothing else, with
 * the spec's enums and limits taken from the request schemas, a description on every parameter and property,
 * the 200 response of every endpoint, and the one error body on every error status. /docs serves the UI.
 * No network: the app is built and called with inject().
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/app.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { systemClock } from '../../src/domain/clock.js';
import { Monitoring } from '../../src/metrics/monitoring.js';
import { FakeFeed } from '../metrics/helpers.js';

type Json = Record<string, any>;

/** The spec's endpoint table (interface-spec.md "Endpoint summary"). */
const SPEC_ENDPOINTS: Array<[string, string]> = [
  ['post', '/api/v1/global/optionValuation/euBarrier'],
  ['post', '/api/v1/global/optionValuation/vanilla'],
  ['post', '/api/v1/global/data/iV/byDelta'],
  ['post', '/api/v1/global/data/iV/byStrike'],
  ['post', '/api/v1/global/scenarios/riskScenarios'],
  ['post', '/api/v1/global/scenarios/volRangeRiskScenarios'],
  ['post', '/api/v1/global/scenarios/advancedRiskScenarios'],
  ['get', '/api/v1/global/data/fundingRates'],
  ['get', '/api/v1/global/data/forwardCurve'],
  ['get', '/api/v1/global/data/iVSummary'],
];
/** Endpoints decisions.md and the service add. */
const OTHER_ENDPOINTS: Array<[string, string]> = [
  ['get', '/api/v1/global/data/fundingInstruments'],
  ['get', '/api/v1/global/data/surface'],
  ['get', '/api/v1/global/data/iVSummary/history'],
  ['get', '/api/v1/global/data/surface/history'],
  ['get', '/health'],
  ['get', '/ready'],
  ['get', '/metrics'],
  ['get', '/dashboard/api/state'],
  ['get', '/dashboard/api/stream'],
  ['get', '/dashboard/api/history'],
  ['get', '/api/v1/stream'],
  ['get', '/asyncapi.json'],
  ['get', '/dashboard/api/push-stats'],
];

let app: FastifyInstance;
let doc: Json;
let monitoring: Monitoring;

beforeAll(async () => {
  const cache = new MarketCache(systemClock, 30, [{ source: 'DERIBIT', pair: { base: 'BTC', quote: 'USD' } }]);
  monitoring = new Monitoring({ cache, feeds: [new FakeFeed('DERIBIT')], defaultMetrics: false });
  app = await buildApp({ cache, monitoring });
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});

afterAll(async () => {
  await app?.close();
  monitoring?.close();
});

/** Every schema property (and its path) below `schema`, not following $ref. */
function* properties(schema: any, path: string): Generator<[string, any]> {
  if (!schema || typeof schema !== 'object') return;
  if (schema.properties) {
    for (const [k, v] of Object.entries(schema.properties)) {
      yield [`${path}.${k}`, v];
      yield* properties(v, `${path}.${k}`);
    }
  }
  if (schema.items) yield* properties(schema.items, `${path}[]`);
  for (const key of ['anyOf', 'oneOf', 'allOf']) for (const s of schema[key] ?? []) yield* properties(s, path);
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') yield* properties(schema.additionalProperties, `${path}{}`);
}

function operations(): Array<[string, string, Json]> {
  const out: Array<[string, string, Json]> = [];
  for (const [p, item] of Object.entries(doc.paths as Json)) for (const [m, op] of Object.entries(item as Json)) out.push([m, p, op as Json]);
  return out;
}

describe('GET /openapi.json', () => {
  it('validates as OpenAPI 3.0 (schema check and $ref resolution)', async () => {
    expect(doc.openapi).toMatch(/^3\.0\./);
    const api = (await SwaggerParser.validate(structuredClone(doc) as never)) as Json;
    expect(api.info.title).toBeTruthy();
  });

  it('lists exactly the routes the app serves: every endpoint of the spec table that exists, the service additions, no static files', () => {
    const listed = operations().map(([m, p]) => `${m} ${p}`).sort();
    const served = [...SPEC_ENDPOINTS, ...OTHER_ENDPOINTS].filter(([m, p]) => app.hasRoute({ method: m.toUpperCase() as 'GET', url: p })).map(([m, p]) => `${m} ${p}`);
    // every spec endpoint but the summary (being added in parallel) must be served already
    expect(served.filter((s) => SPEC_ENDPOINTS.some(([m, p]) => `${m} ${p}` === s)).length).toBeGreaterThanOrEqual(9);
    expect(listed).toEqual([...served].sort());
    expect(listed.some((s) => s.includes('/dashboard/assets') || s.includes('/dashboard/vendor') || s.includes('/docs'))).toBe(false);
  });

  it('every operation has a summary, tags, a 200 response with its schema, and the error body on each error status', () => {
    for (const [m, p, op] of operations()) {
      const where = `${m} ${p}`;
      expect(op.summary, where).toBeTruthy();
      expect(op.tags?.length, where).toBeGreaterThan(0);
      const ok = op.responses['200'];
      expect(ok, where).toBeDefined();
      const content = ok.content as Json;
      const ct = Object.keys(content)[0]!;
      if (ct === 'application/json') expect(content[ct].schema.type ?? content[ct].schema.$ref, where).toBeTruthy();
      const errors = Object.keys(op.responses).filter((c) => Number(c) >= 400);
      expect(errors, where).toContain('500');
      for (const c of errors) {
        expect(op.responses[c].description.length, `${where} ${c}`).toBeGreaterThan(10);
        expect(op.responses[c].content['application/json'].schema.$ref, `${where} ${c}`).toBe('#/components/schemas/ErrorBody');
      }
      if (p.startsWith('/api/')) expect(errors, where).toEqual(expect.arrayContaining(['400', '503']));
      if (m === 'post') expect(errors, where).toEqual(expect.arrayContaining(['413', '415']));
    }
  });

  it('the error body is {statusCode, error, message, details[{path, message}]}, described', () => {
    const e = doc.components.schemas.ErrorBody;
    expect(e.required).toEqual(['statusCode', 'error', 'message']);
    expect(Object.keys(e.properties)).toEqual(['statusCode', 'error', 'message', 'details']);
    expect(Object.keys(e.properties.details.items.properties)).toEqual(['path', 'message']);
    for (const [path, s] of properties(e, 'ErrorBody')) expect(s.description, path).toBeTruthy();
  });

  it('every parameter, request property and response property has a description', () => {
    const missing: string[] = [];
    for (const [m, p, op] of operations()) {
      for (const prm of op.parameters ?? []) if (!prm.description) missing.push(`${m} ${p} ?${prm.name}`);
      const body = op.requestBody?.content?.['application/json']?.schema;
      for (const [path, s] of properties(body, `${m} ${p} body`)) if (!s.description && !s.$ref) missing.push(path);
      for (const [code, r] of Object.entries(op.responses as Json)) {
        const schema = r.content?.['application/json']?.schema;
        for (const [path, s] of properties(schema, `${m} ${p} ${code}`)) if (!s.description && !s.$ref) missing.push(path);
      }
    }
    expect(missing).toEqual([]);
  });

  it('enums and limits of the spec come from the request schemas', () => {
    const body = (p: string) => doc.paths[p].post.requestBody.content['application/json'].schema;
    const param = (p: string, name: string) => doc.paths[p].get.parameters.find((x: Json) => x.name === name);
    const vanilla = body('/api/v1/global/optionValuation/vanilla');
    expect([vanilla.minItems, vanilla.maxItems]).toEqual([1, 50]);
    expect(vanilla.items.properties.source.enum).toEqual(['DERIBIT', 'OKX', 'BYBIT', 'XCHG_A', 'XCHG_B', 'XCHG_C']);
    expect(vanilla.items.properties.priceMethod.enum).toContain('OTC');
    expect(vanilla.items.properties.baseCurrency.enum).toEqual(['BTC', 'ETH', 'SOL', 'XRP']);
    expect(vanilla.items.properties.quoteCurrency.enum).toEqual(['USD', 'USDC']);
    // the spec's three models and the fourth this service adds (a literal list: a model added or dropped shows here)
    expect(vanilla.items.properties.volatilityModel.enum).toEqual(['SVI', 'SABR', 'VANNA_VOLGA', 'ESSVI']);
    expect(vanilla.items.properties.vanillaOptionType.enum).toEqual(['CALL', 'PUT', 'FORWARD']);
    expect(vanilla.items.required).toEqual(expect.arrayContaining(['instrumentId', 'amount', 'source', 'priceMethod', 'expirationTimestamp', 'volatilityModel']));
    expect(vanilla.items.required).not.toContain('strike');
    const delta = body('/api/v1/global/data/iV/byDelta').items.properties.delta;
    expect(delta).toMatchObject({ minimum: 0.01, exclusiveMinimum: true, maximum: 0.99, exclusiveMaximum: true });
    const strike = body('/api/v1/global/data/iV/byStrike').items.properties.strike;
    expect(strike).toMatchObject({ minimum: 0, exclusiveMinimum: true });
    const barrier = body('/api/v1/global/optionValuation/euBarrier');
    expect(barrier.maxItems).toBe(50);
    expect(barrier.items.properties.barrierType.enum).toEqual(['UP_AND_OUT', 'DOWN_AND_OUT', 'UP_AND_IN', 'DOWN_AND_IN']);
    expect(barrier.items.properties.europeanBarrierOptionType.enum).toEqual(['CALL', 'PUT', 'FORWARD', 'DIGITAL_CALL', 'DIGITAL_PUT']);
    const volRange = body('/api/v1/global/scenarios/volRangeRiskScenarios');
    expect(volRange.properties.riskScenarioInstruments.maxItems).toBe(100);
    expect(volRange.properties.riskScenarioInstruments.items.properties.instrumentType.enum).toEqual(['CALL', 'PUT', 'FORWARD', 'PERPETUAL', 'SPOT']);
    expect([volRange.properties.riskScenarioParameters.properties.volShifts.minItems, volRange.properties.riskScenarioParameters.properties.volShifts.maxItems]).toEqual([1, 16]);
    expect(volRange.properties.riskScenarioParameters.properties.priceRangeSteps).toMatchObject({ type: 'integer', minimum: 1, maximum: 50 });
    const advanced = body('/api/v1/global/scenarios/advancedRiskScenarios').properties.riskScenarioParameters;
    expect(advanced.required).toEqual(expect.arrayContaining(['minVolForShockUp', 'shortTermVegaPower', 'longTermVegaPower']));
    const funding = '/api/v1/global/data/fundingRates';
    expect(param(funding, 'startTime').required).toBe(true);
    expect(doc.paths[funding].get.responses['200'].content['application/json'].schema.maxItems).toBe(200);
    const fc = doc.paths['/api/v1/global/data/forwardCurve'].get.responses['200'].content['application/json'].schema;
    expect(fc.properties.constMatYields.items.properties.constMat.enum).toEqual(['1D', '1W', '2W', '1M', '2M', '3M', '6M', '9M', '12M']);
  });

  it('/metrics is documented as Prometheus text; the docs UI is served at /docs', async () => {
    expect(Object.keys(doc.paths['/metrics'].get.responses['200'].content)).toEqual(['text/plain']);
    const ui = await app.inject({ method: 'GET', url: '/docs/' });
    expect(ui.statusCode).toBe(200);
    expect(ui.headers['content-type']).toMatch(/text\/html/);
    expect(ui.body).toMatch(/swagger-ui/i);
    // the same live document (its expiry window moves with the clock between the two fetches)
    const json = await app.inject({ method: 'GET', url: '/docs/json' });
    const stripWindow = (d: unknown) => JSON.parse(JSON.stringify(d).replace(/\b\d{10}\b/g, '0'));
    expect(stripWindow(json.json().paths)).toEqual(stripWindow(doc.paths));
  });
});
