/**
 * GET /metrics on the whole service (embedded simulator on 127.0.0.1, real Deribit adapter): after the
 * simulator has run a few seconds the named series are there with values that agree with their sources
 * (feed stats, the cache's snapshots, the requests the test made), and they move as the feed is hurt
 * (garbage frames are counted as drops, a dropped socket as a reconnect and a disconnected feed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/service.js';
import { expiryLabel } from '../../src/metrics/serviceMetrics.js';
import { http, startTestService, waitFor } from '../helpers/service.js';
import { one, parseProm, pick, sum } from './helpers.js';

let svc: RunningService;
let B: string;

const PAIRS = ['BTC/USD', 'ETH/USD', 'SOL/USDC', 'XRP/USDC'];

async function scrapeHttp() {
  const r = await fetch(`${B}/metrics`);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseProm(await r.text());
}

beforeAll(async () => {
  // Deribit only (the feed series are checked on it), calibrating every 0.4 s at most: light on a 2-core CI box
  svc = await startTestService(
    { SOURCES: 'DERIBIT', CALIBRATION_THROTTLE_MS: '400' },
    {
      simulator: { heartbeatMsPerS: 100 },
      deribit: { heartbeatIntervalS: 10, silenceTimeoutMs: 3_000, transport: { backoffBaseMs: 100, backoffMaxMs: 500 } },
    },
  );
  B = svc.url;
  await waitFor(async () => (await http('GET', `${B}/ready`)).status === 200, 60_000, '/ready 200');
  // let the simulator run a few seconds more
  await new Promise((r) => setTimeout(r, 3_000));
});

afterAll(async () => {
  await svc?.stop();
});

describe('GET /metrics on the running service', () => {
  it('feed series agree with the feed stats read around the scrape', async () => {
    const before = svc.feeds[0]!.stats();
    const { samples: s } = await scrapeHttp();
    const after = svc.feeds[0]!.stats();
    const d = { source: 'DERIBIT' };
    const messages = one(s, 'volsurf_feed_messages_total', d);
    expect(messages).toBeGreaterThanOrEqual(before.messages);
    expect(messages).toBeLessThanOrEqual(after.messages);
    expect(messages).toBeGreaterThan(1000);
    expect(one(s, 'volsurf_feed_connected', d)).toBe(1);
    expect(one(s, 'volsurf_feed_reconnects_total', d)).toBe(0);
    const age = one(s, 'volsurf_feed_last_message_age_seconds', d);
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(5);
    for (const pair of PAIRS) {
      expect(one(s, 'volsurf_pair_stale', { ...d, pair })).toBe(0);
      expect(one(s, 'volsurf_pair_data_age_seconds', { ...d, pair })).toBeLessThan(5);
    }
    // a second scrape a second later gives the rate
    await new Promise((r) => setTimeout(r, 1_000));
    const s2 = (await scrapeHttp()).samples;
    const rate = one(s2, 'volsurf_feed_messages_per_second', d);
    const m2 = one(s2, 'volsurf_feed_messages_total', d);
    expect(rate).toBeGreaterThan(10);
    // the rate is the increase over at most the last 10 s
    expect(rate).toBeGreaterThanOrEqual((m2 - messages) / 10);
  });

  it('calibration series agree with the cached surfaces (one histogram observation per surface written)', async () => {
    // in-process scrape: nothing else runs between the scrape and reading the cache
    const { samples: s } = parseProm(await svc.monitoring.metrics.metrics());
    const surfaces = svc.cache.allSurfaces();
    expect(surfaces.length).toBeGreaterThanOrEqual(PAIRS.length);
    for (const snap of surfaces) {
      const l = { source: snap.source, pair: `${snap.pair.base}/${snap.pair.quote}`, model: snap.model };
      expect(one(s, 'volsurf_surface_sequence', l)).toBe(snap.sequence);
      // one observation per surface of this model written; the sequence counts the chain's calibrations
      const count = one(s, 'volsurf_calibration_duration_seconds_count', l);
      expect(count).toBeGreaterThanOrEqual(1);
      expect(count).toBeLessThanOrEqual(snap.sequence);
      const mean = one(s, 'volsurf_calibration_duration_seconds_sum', l) / count;
      expect(mean).toBeGreaterThan(0);
      expect(mean).toBeLessThan(30);
      expect(one(s, 'volsurf_surface_expiries', l)).toBe(snap.slices.length);
      for (const sl of snap.slices) {
        expect(one(s, 'volsurf_fit_rmse_vol_points', { ...l, expiry: expiryLabel(sl.expirationTimestamp) })).toBe(sl.fit.rmseVolPts);
      }
      const age = one(s, 'volsurf_snapshot_age_seconds', l);
      expect(age).toBeGreaterThanOrEqual(0);
      expect(age).toBeLessThan(10);
      expect(pick(s, 'volsurf_arbitrage_repairs_total', l).length).toBeGreaterThanOrEqual(1);
      expect(pick(s, 'volsurf_arbitrage_rejections_total', l).length).toBeGreaterThanOrEqual(1);
      expect(one(s, 'volsurf_arbitrage_violations_total', l)).toBeGreaterThanOrEqual(0);
    }
    // every surface written was observed once
    expect(sum(s, 'volsurf_calibration_duration_seconds_count')).toBe(one(s, 'volsurf_cache_updates_total', { type: 'surface' }));
  });

  it('REST latency per route pattern and status counts exactly the requests made', async () => {
    for (let i = 0; i < 5; i++) expect((await http('GET', `${B}/health`)).status).toBe(200);
    expect((await http('GET', `${B}/api/v1/global/data/forwardCurve?source=DERIBIT&baseCurrency=BTC`)).status).toBe(400);
    expect((await http('GET', `${B}/api/v1/global/data/forwardCurve?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD`)).status).toBe(200);
    expect((await http('GET', `${B}/no/such/route/${Math.random()}`)).status).toBe(404);
    const { samples: s } = await scrapeHttp();
    const fc = '/api/v1/global/data/forwardCurve';
    expect(one(s, 'volsurf_http_request_duration_seconds_count', { method: 'GET', route: '/health', status_code: '200' })).toBe(5);
    expect(one(s, 'volsurf_http_request_duration_seconds_count', { method: 'GET', route: fc, status_code: '400' })).toBe(1);
    expect(one(s, 'volsurf_http_request_duration_seconds_count', { method: 'GET', route: fc, status_code: '200' })).toBe(1);
    expect(one(s, 'volsurf_http_request_duration_seconds_count', { method: 'GET', route: '<unmatched>', status_code: '404' })).toBe(1);
    const h = one(s, 'volsurf_http_request_duration_seconds_sum', { method: 'GET', route: '/health', status_code: '200' });
    expect(h).toBeGreaterThan(0);
    expect(h / 5).toBeLessThan(1);
    // the +Inf bucket holds every observation
    expect(one(s, 'volsurf_http_request_duration_seconds_bucket', { route: '/health', status_code: '200', le: '+Inf' })).toBe(5);
  });

  it('process metrics, and the Kafka series declared (no broker configured: no samples)', async () => {
    const { samples: s, help } = await scrapeHttp();
    expect(one(s, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(one(s, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(1e6);
    for (const name of ['volsurf_kafka_queue_depth', 'volsurf_kafka_publish_latency_seconds', 'volsurf_kafka_connected', 'volsurf_kafka_sent_total']) {
      expect(help.get(name), name).toBeTruthy();
    }
    expect(pick(s, 'volsurf_kafka_queue_depth')).toEqual([]);
    expect(one(s, 'volsurf_kafka_publish_latency_seconds_count')).toBe(0);
  });

  it('garbage frames are counted as dropped messages; a dropped socket as a reconnect', async () => {
    const s0 = (await scrapeHttp()).samples;
    const dropped0 = sum(s0, 'volsurf_feed_dropped_messages_total', { source: 'DERIBIT' });
    const stats0 = svc.feeds[0]!.stats();
    svc.simulator!.faults.malformedFrames(6);
    await waitFor(() => Object.values(svc.feeds[0]!.stats().dropped).reduce((a, b) => a + b, 0) > Object.values(stats0.dropped).reduce((a, b) => a + b, 0), 10_000, 'drops counted');
    await new Promise((r) => setTimeout(r, 300));
    const s1 = (await scrapeHttp()).samples;
    const stats1 = svc.feeds[0]!.stats();
    const dropped1 = sum(s1, 'volsurf_feed_dropped_messages_total', { source: 'DERIBIT' });
    expect(dropped1).toBe(Object.values(stats1.dropped).reduce((a, b) => a + b, 0));
    expect(dropped1).toBeGreaterThan(dropped0);
    expect(pick(s1, 'volsurf_feed_dropped_messages_total', { source: 'DERIBIT' }).every((x) => x.labels.kind && x.labels.kind.length > 0)).toBe(true);

    svc.simulator!.faults.dropAllConnections();
    await waitFor(() => svc.feeds[0]!.stats().reconnects >= 1 && svc.feeds[0]!.stats().connected, 20_000, 'reconnected');
    const s2 = (await scrapeHttp()).samples;
    expect(one(s2, 'volsurf_feed_reconnects_total', { source: 'DERIBIT' })).toBe(svc.feeds[0]!.stats().reconnects);
    expect(one(s2, 'volsurf_feed_reconnects_total', { source: 'DERIBIT' })).toBeGreaterThanOrEqual(1);
    expect(one(s2, 'volsurf_feed_connected', { source: 'DERIBIT' })).toBe(1);
  });
});
