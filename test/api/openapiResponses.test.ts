/**
 * The response schemas in /openapi.json describe what the service really answers: every endpoint is called
 * on the running service (embedded simulator, 127.0.0.1) with a valid request, and its answer must match the
 * documented 200 schema (every field documented, every required field present, types, enums, nullability,
 * array limits); an error answer must match the ErrorBody schema. The documentation is added in the swagger
 * transform only, so the answers are serialized exactly as without it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/service.js';
import { http, startTestService, waitFor } from '../helpers/service.js';
import { testNowS } from '../helpers/simClock.js';

type Json = Record<string, any>;

let svc: RunningService;
let B: string;
let doc: Json;

/** Problems of `value` against an OpenAPI 3.0 schema (subset: type, enum, nullable, properties, required, items, additionalProperties, maxItems, $ref). */
function conform(value: unknown, schema: Json, path: string, out: string[]): void {
  if (schema.$ref) {
    const name = String(schema.$ref).replace('#/components/schemas/', '');
    return conform(value, doc.components.schemas[name], path, out);
  }
  // {} (z.unknown()) accepts anything
  if (!schema.type && !schema.anyOf && !schema.enum && !schema.properties) return;
  if (value === null) {
    if (!schema.nullable) out.push(`${path}: null but not nullable`);
    return;
  }
  if (schema.anyOf) {
    const ok = schema.anyOf.some((s: Json) => {
      const o: string[] = [];
      conform(value, s, path, o);
      return o.length === 0;
    });
    if (!ok) out.push(`${path}: matches no anyOf branch`);
    return;
  }
  if (schema.enum && !schema.enum.includes(value)) out.push(`${path}: ${JSON.stringify(value)} not in enum ${schema.enum.join(',')}`);
  switch (schema.type) {
    case 'number':
      if (typeof value !== 'number') out.push(`${path}: not a number`);
      return;
    case 'integer':
      if (!Number.isInteger(value)) out.push(`${path}: not an integer`);
      return;
    case 'string':
      if (typeof value !== 'string') out.push(`${path}: not a string`);
      return;
    case 'boolean':
      if (typeof value !== 'boolean') out.push(`${path}: not a boolean`);
      return;
    case 'array':
      if (!Array.isArray(value)) return void out.push(`${path}: not an array`);
      if (schema.maxItems !== undefined && value.length > schema.maxItems) out.push(`${path}: ${value.length} > maxItems ${schema.maxItems}`);
      value.forEach((v, i) => conform(v, schema.items ?? {}, `${path}[${i}]`, out));
      return;
    case 'object': {
      if (typeof value !== 'object' || Array.isArray(value)) return void out.push(`${path}: not an object`);
      const props: Json = schema.properties ?? {};
      for (const r of schema.required ?? []) if (!(r in (value as Json))) out.push(`${path}.${r}: required but absent`);
      for (const [k, v] of Object.entries(value as Json)) {
        if (props[k]) conform(v, props[k], `${path}.${k}`, out);
        else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') conform(v, schema.additionalProperties, `${path}.${k}`, out);
        else if (schema.additionalProperties !== true && Object.keys(props).length > 0) out.push(`${path}.${k}: not documented`);
      }
      return;
    }
    default:
      return;
  }
}

function check(method: string, url: string, status: number, body: unknown): string[] {
  const route = url.split('?')[0]!;
  const op = doc.paths[route]?.[method.toLowerCase()];
  if (!op) return [`${method} ${route}: not in the document`];
  const r = op.responses[String(status)];
  if (!r) return [`${method} ${route}: status ${status} not documented`];
  const out: string[] = [];
  conform(body, r.content['application/json'].schema, `${method} ${route} ${status}`, out);
  return out;
}

beforeAll(async () => {
  svc = await startTestService({ SOURCES: 'DERIBIT', CALIBRATION_THROTTLE_MS: '500' });
  B = svc.url;
  await waitFor(async () => (await http('GET', `${B}/ready`)).status === 200, 60_000, '/ready 200');
  doc = (await http('GET', `${B}/openapi.json`)).body;
  // /ready is about surfaces; the perpetual's first funding tick may land a moment later.
  await waitFor(
    async () => ((await http('GET', `${B}/api/v1/global/data/fundingInstruments?source=DERIBIT`)).body as Json[]).some((i) => i.baseCurrency === 'BTC'),
    60_000,
    'BTC funding instrument listed',
  );
});

afterAll(async () => {
  await svc?.stop();
});

describe('documented responses match the real answers', () => {
  it('every endpoint, called with a valid request, answers what its 200 schema says', async () => {
    const pair = 'source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD';
    const surface = await http('GET', `${B}/api/v1/global/data/surface?${pair}&volatilityModel=SVI`);
    expect(surface.status).toBe(200);
    const e = surface.body.expiries[Math.min(3, surface.body.expiries.length - 1)];
    const expiry: number = e.expirationTimestamp;
    const K = Math.round(e.forwardPrice / 1000) * 1000;
    const base = { baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', volatilityModel: 'SVI', expirationTimestamp: expiry };
    const instruments = await http('GET', `${B}/api/v1/global/data/fundingInstruments?source=DERIBIT`);
    const perp: string = instruments.body.find((i: Json) => i.baseCurrency === 'BTC').instrumentId;
    const scenarioInstruments = [
      { ...base, instrumentId: 'c', size: 1, priceMethod: 'DERIBIT', instrumentType: 'CALL', strike: K },
      { ...base, instrumentId: 'f', size: -2, priceMethod: 'DERIBIT', instrumentType: 'FORWARD', volatilityModel: undefined },
      { instrumentId: 's', size: 1, baseCurrency: 'BTC', quoteCurrency: 'USD', source: 'DERIBIT', priceMethod: 'DERIBIT', instrumentType: 'SPOT' },
    ];
    const advancedInstruments = scenarioInstruments.map(({ priceMethod: _p, ...rest }) => rest);
    const calls: Array<[string, string, unknown?]> = [
      ['GET', '/health'],
      ['GET', '/ready'],
      ['GET', `/api/v1/global/data/surface?${pair}&volatilityModel=SVI`],
      ['GET', `/api/v1/global/data/forwardCurve?${pair}`],
      ['GET', `/api/v1/global/data/fundingInstruments?source=DERIBIT`],
      ['GET', `/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=${perp}&startTime=0&endTime=${Math.ceil(testNowS())}`],
      ['POST', '/api/v1/global/optionValuation/vanilla', [{ ...base, instrumentId: 'v', amount: 1, vanillaOptionType: 'CALL', priceMethod: 'DERIBIT', strike: K }]],
      ['POST', '/api/v1/global/optionValuation/euBarrier', [{ ...base, instrumentId: 'b', europeanBarrierOptionType: 'CALL', strike: K, barrierType: 'UP_AND_OUT', barrier: K * 1.3 }]],
      ['POST', '/api/v1/global/data/iV/byStrike', [{ ...base, instrumentId: 'k', strike: K }]],
      ['POST', '/api/v1/global/data/iV/byDelta', [{ ...base, instrumentId: 'd', delta: 0.25 }]],
      ['POST', '/api/v1/global/scenarios/riskScenarios', { riskScenarioInstruments: scenarioInstruments, riskScenarioParameters: { priceRangeSteps: 2, priceRange: 0.1, volRangeUp: 0.05, volRangeDown: 0.05 } }],
      ['POST', '/api/v1/global/scenarios/volRangeRiskScenarios', { riskScenarioInstruments: scenarioInstruments, riskScenarioParameters: { priceRangeSteps: 2, priceRange: 0.1, volShifts: [-0.1, 0, 0.2] } }],
      [
        'POST',
        '/api/v1/global/scenarios/advancedRiskScenarios',
        {
          riskScenarioInstruments: advancedInstruments,
          riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.16, volRangeUp: 0.5, volRangeDown: 0.25, minVolForShockUp: 0.5, shortTermVegaPower: 0.3, longTermVegaPower: 0.13 },
        },
      ],
      ['GET', '/dashboard/api/state?source=XCHG_A&baseCurrency=ETH&quoteCurrency=USD'],
    ];
    if (svc.app.hasRoute({ method: 'GET', url: '/api/v1/global/data/iVSummary' })) calls.push(['GET', `/api/v1/global/data/iVSummary?${pair}&volatilityModel=SVI`]);
    const problems: string[] = [];
    for (const [method, url, body] of calls) {
      const r = await http(method as 'GET' | 'POST', `${B}${url}`, body);
      expect(r.status, `${method} ${url}: ${JSON.stringify(r.body).slice(0, 300)}`).toBe(200);
      problems.push(...check(method, url, 200, r.body));
    }
    expect(problems).toEqual([]);
  });

  it('error answers match the ErrorBody schema (400 with details, 404, 415)', async () => {
    const bad = await http('POST', `${B}/api/v1/global/data/iV/byStrike`, [{ instrumentId: 'x', strike: -1 }]);
    expect(bad.status).toBe(400);
    expect(bad.body.details.length).toBeGreaterThan(1);
    expect(check('POST', '/api/v1/global/data/iV/byStrike', 400, bad.body)).toEqual([]);
    const unknown = await http('GET', `${B}/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=NOPE&startTime=0&endTime=1`);
    expect(unknown.status).toBe(404);
    expect(check('GET', '/api/v1/global/data/fundingRates', 404, unknown.body)).toEqual([]);
    const text = await fetch(`${B}/api/v1/global/data/iV/byStrike`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect(text.status).toBe(415);
    expect(check('POST', '/api/v1/global/data/iV/byStrike', 415, await text.json())).toEqual([]);
    // the checker itself rejects an undocumented field and a missing required one
    expect(check('GET', '/health', 200, { status: 'ok', extra: 1 })).toEqual(['GET /health 200.extra: not documented']);
    expect(check('GET', '/api/v1/global/data/fundingRates', 404, { statusCode: 404, error: 'Not Found' })).toEqual(['GET /api/v1/global/data/fundingRates 404.message: required but absent']);
  });
});
