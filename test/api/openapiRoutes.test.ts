/**
 * The OpenAPI document is generated from the routes (issue 25 item 4): every route the app registers and does not
 * hide (`schema.hide`) is an operation of GET /openapi.json, with the 200 response its module declares (a schema
 * for each content type), and the document has no operation that is not a registered route. Each route module is
 * a named fastify-plugin. No network: the app is built and called with inject().
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/app.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { systemClock } from '../../src/domain/clock.js';
import { Monitoring } from '../../src/metrics/monitoring.js';
import { FakeFeed } from '../metrics/helpers.js';

type Json = Record<string, any>;

let app: FastifyInstance;
let doc: Json;
let monitoring: Monitoring;

beforeAll(async () => {
  const cache = new MarketCache(systemClock, 30, [{ source: 'DERIBIT', pair: { base: 'BTC', quote: 'USD' } }]);
  monitoring = new Monitoring({ cache, feeds: [new FakeFeed('DERIBIT')], defaultMetrics: false });
  app = await buildApp({ cache, monitoring, security: { apiKeys: ['k'.repeat(32)] } });
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});

afterAll(async () => {
  await app?.close();
  monitoring?.close();
});

/** The registered routes the document must list: not hidden, HEAD aside (fastify adds one per GET). */
function documentedRoutes(): Array<{ method: string; url: string }> {
  return app.registeredRoutes.filter((r) => !r.hidden && r.method !== 'HEAD');
}

describe('the OpenAPI document is generated from the registered routes', () => {
  it('every registered route that is not hidden is an operation, and every operation is a registered route', () => {
    const routes = documentedRoutes().map((r) => `${r.method.toLowerCase()} ${r.url}`).sort();
    const operations = Object.entries(doc.paths as Json).flatMap(([p, item]) => Object.keys(item as Json).map((m) => `${m} ${p}`)).sort();
    // the interface spec's ten endpoints are among them (interface-spec.md "Endpoints")
    const spec = ['post /api/v1/global/optionValuation/euBarrier', 'post /api/v1/global/optionValuation/vanilla', 'post /api/v1/global/data/iV/byDelta', 'post /api/v1/global/data/iV/byStrike', 'post /api/v1/global/scenarios/riskScenarios', 'post /api/v1/global/scenarios/volRangeRiskScenarios', 'post /api/v1/global/scenarios/advancedRiskScenarios', 'get /api/v1/global/data/fundingRates', 'get /api/v1/global/data/forwardCurve', 'get /api/v1/global/data/iVSummary'];
    expect(routes).toEqual(expect.arrayContaining(spec));
    expect(operations).toEqual(routes);
  });

  it('every such operation has the 200 response its route declares, with a schema for each content type', () => {
    for (const r of documentedRoutes()) {
      const where = `${r.method} ${r.url}`;
      const op = doc.paths[r.url][r.method.toLowerCase()];
      const content = op.responses['200']?.content as Json | undefined;
      expect(content, where).toBeDefined();
      expect(Object.keys(content!).length, where).toBeGreaterThan(0);
      for (const [type, media] of Object.entries(content!)) {
        const schema = (media as Json).schema;
        expect(schema, `${where} ${type}`).toBeDefined();
        expect(schema.type ?? schema.$ref, `${where} ${type}`).toBeTruthy();
      }
      if (r.url.startsWith('/api/') && content!['application/json']) expect(op.security, where).toEqual([{ ApiKeyAuth: [] }]);
    }
  });

  it('the history routes answer JSON, CSV or Parquet', () => {
    for (const url of ['/api/v1/global/data/iVSummary/history', '/api/v1/global/data/surface/history']) {
      expect(Object.keys(doc.paths[url].get.responses['200'].content)).toEqual(['application/json', 'text/csv', 'application/vnd.apache.parquet']);
    }
  });

  it('each route module and the security plugin are named fastify-plugins', () => {
    const names = ['security', 'login', 'health', 'vanilla', 'iv', 'forwardCurve', 'funding', 'surface', 'euBarrier', 'scenarios', 'ivSummary', 'history', 'dashboard', 'stream'];
    expect(names.filter((n) => !app.hasPlugin(n))).toEqual([]);
  });
});
