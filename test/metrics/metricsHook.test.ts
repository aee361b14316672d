/**
 * The REST latency hook and the protection counters wired into the app (buildApp with monitoring, inject(),
 * no network): every response observed once under its route pattern and status, refusals by the security
 * plugin counted by reason, GET /metrics answering the Prometheus text format.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/app.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { systemClock } from '../../src/domain/clock.js';
import { Monitoring } from '../../src/metrics/monitoring.js';
import { FakeFeed, one, parseProm, pick } from './helpers.js';

let app: FastifyInstance;
let monitoring: Monitoring;
/** With keys configured, /metrics, the page and the dashboard state need the key (test/security/access.test.ts). */
const K = { 'x-api-key': 'secret-key-1' };

beforeAll(async () => {
  const cache = new MarketCache(systemClock, 30, [{ source: 'DERIBIT', pair: { base: 'BTC', quote: 'USD' } }]);
  monitoring = new Monitoring({ cache, feeds: [new FakeFeed('DERIBIT')], defaultMetrics: false });
  app = await buildApp({ cache, monitoring, security: { apiKeys: ['secret-key-1'] } });
});

afterAll(async () => {
  await app?.close();
  monitoring?.close();
});

describe('metrics wired into the app', () => {
  it('observes each response under its route pattern and status; counts refusals by reason', async () => {
    const fc = '/api/v1/global/data/forwardCurve';
    const q = '?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD';
    expect((await app.inject({ method: 'GET', url: `${fc}${q}` })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: `${fc}${q}`, headers: { 'x-api-key': 'wrong' } })).statusCode).toBe(401);
    // right key, but no data yet: 503 warming up
    expect((await app.inject({ method: 'GET', url: `${fc}${q}`, headers: { 'x-api-key': 'secret-key-1' } })).statusCode).toBe(503);
    expect((await app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/nope' })).statusCode).toBe(404);
    const res = await app.inject({ method: 'GET', url: '/metrics', headers: K });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const s = parseProm(res.body).samples;
    expect(one(s, 'volsurf_http_rejected_total', { reason: 'unauthorized' })).toBe(2);
    expect(one(s, 'volsurf_http_request_duration_seconds_count', { method: 'GET', route: fc, status_code: '401' })).toBe(2);
    expect(one(s, 'volsurf_http_request_duration_seconds_count', { method: 'GET', route: fc, status_code: '503' })).toBe(1);
    expect(one(s, 'volsurf_http_request_duration_seconds_count', { route: '/health', status_code: '200' })).toBe(1);
    expect(one(s, 'volsurf_http_request_duration_seconds_count', { route: '<unmatched>', status_code: '404' })).toBe(1);
    // the scrape itself is observed once it has been answered
    expect(pick(s, 'volsurf_http_request_duration_seconds_count', { route: '/metrics' })).toEqual([]);
    const s2 = parseProm((await app.inject({ method: 'GET', url: '/metrics', headers: K })).body).samples;
    expect(one(s2, 'volsurf_http_request_duration_seconds_count', { route: '/metrics', status_code: '200' })).toBe(1);
  });

  it('the dashboard page and assets are served; the state endpoint validates its query', async () => {
    const page = await app.inject({ method: 'GET', url: '/', headers: K });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toContain('/dashboard/vendor/echarts.min.js');
    expect((await app.inject({ method: 'GET', url: '/dashboard/assets/dashboard.js' })).statusCode).toBe(200);
    const echarts = await app.inject({ method: 'GET', url: '/dashboard/vendor/echarts.min.js' });
    expect(echarts.statusCode).toBe(200);
    expect(echarts.body.length).toBeGreaterThan(500_000);
    // only echarts.min.js is exposed from node_modules/echarts/dist
    expect((await app.inject({ method: 'GET', url: '/dashboard/vendor/echarts.js' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/dashboard/vendor/package.json' })).statusCode).toBe(404);
    const state = await app.inject({ method: 'GET', url: '/dashboard/api/state?source=XCHG_A&baseCurrency=BTC&quoteCurrency=USD', headers: K });
    expect(state.statusCode).toBe(200);
    expect(state.json()).toMatchObject({ selection: { source: 'DERIBIT', baseCurrency: 'BTC' }, surface: null, unavailable: { reason: 'warming-up' } });
    const bad = await app.inject({ method: 'GET', url: '/dashboard/api/state?source=NOPE', headers: K });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details[0].path).toBe('source');
    const unsupported = await app.inject({ method: 'GET', url: '/dashboard/api/state?source=BYBIT&baseCurrency=XRP&quoteCurrency=USDC', headers: K });
    expect(unsupported.statusCode).toBe(400);
  });
});
