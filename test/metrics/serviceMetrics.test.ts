/**
 * ServiceMetrics on hand-made inputs (no network): feed counters follow the cumulative FeedStats exactly
 * (increase since the last scrape), ages use the injected clocks, calibration series follow the surfaces
 * written to the cache, REST and Kafka observations land in their histograms, registries do not mix.
 */
import { describe, expect, it } from 'vitest';
import { MarketCache } from '../../src/cache/marketCache.js';
import type { PublisherStats } from '../../src/kafka/publisher.js';
import { expiryLabel, isRepairedFit, ServiceMetrics, skipReasonLabel, UNMATCHED_ROUTE } from '../../src/metrics/serviceMetrics.js';
import { FeedRates } from '../../src/metrics/feedRates.js';
import type { CalibrationResult } from '../../src/cache/snapshotBuilder.js';
import type { Clock } from '../../src/domain/clock.js';
import { FakeFeed, makeSurface, one, parseProm, pick, sum } from './helpers.js';

const BTC = { base: 'BTC', quote: 'USD' } as const;
const ETH = { base: 'ETH', quote: 'USD' } as const;

function setup(serviceNow = 1_790_000_100, wallNow = 2_000_000_000) {
  const clock: Clock & { t: number } = { t: serviceNow, now() { return this.t; } };
  const wall = { t: wallNow };
  const cache = new MarketCache(clock, 30, [
    { source: 'DERIBIT', pair: BTC },
    { source: 'DERIBIT', pair: ETH },
  ]);
  const feed = new FakeFeed('DERIBIT');
  const kafka: { stats: PublisherStats | null; lat: number[] } = { stats: null, lat: [] };
  const publisher = () =>
    kafka.stats
      ? {
          stats: () => kafka.stats!,
          latencies: () => kafka.lat,
        }
      : null;
  const pool = { yielded: 0 };
  const m = new ServiceMetrics({ cache, feeds: () => [feed], clock, wallNowS: () => wall.t, publisher, defaultMetrics: false, calibrationPool: () => pool });
  const scrape = async () => parseProm(await m.metrics());
  return { clock, wall, cache, feed, kafka, pool, m, scrape };
}

function kafkaStats(over: Partial<PublisherStats>): PublisherStats {
  return {
    connected: true,
    pending: { surfaces: 0, forwardCurves: 0, funding: 0, history: 0 },
    sent: { surfaces: 0, forwardCurves: 0, funding: 0, history: 0 },
    conflated: 0,
    invalid: 0,
    failures: 0,
    connectFailures: 0,
    historyDropped: 0,
    fundingAlreadyPublished: 0,
    fundingRestored: 0,
    fundingQueueOverAlarm: false,
    fundingQueueMaxDepth: 0,
    lastPublishLatencyMs: null,
    lastSentAtMs: null,
    lastError: null,
    ...over,
  };
}

describe('feed series', () => {
  it('counters equal the cumulative feed stats across scrapes; gauges follow the stats and the clocks', async () => {
    const { feed, wall, scrape } = setup();
    feed.set({ connected: true, messages: 120, reconnects: 0, dropped: { 'bad-ticker': 2 }, lastMessageAt: wall.t - 1.5 });
    let s = (await scrape()).samples;
    expect(one(s, 'volsurf_feed_connected', { source: 'DERIBIT' })).toBe(1);
    expect(one(s, 'volsurf_feed_messages_total', { source: 'DERIBIT' })).toBe(120);
    expect(one(s, 'volsurf_feed_reconnects_total', { source: 'DERIBIT' })).toBe(0);
    expect(one(s, 'volsurf_feed_dropped_messages_total', { source: 'DERIBIT', kind: 'bad-ticker' })).toBe(2);
    expect(one(s, 'volsurf_feed_last_message_age_seconds', { source: 'DERIBIT' })).toBeCloseTo(1.5, 9);

    wall.t += 2;
    feed.set({ connected: false, messages: 170, reconnects: 3, dropped: { 'bad-ticker': 2, 'unknown-channel': 7 }, lastMessageAt: wall.t - 0.25 });
    s = (await scrape()).samples;
    expect(one(s, 'volsurf_feed_connected', { source: 'DERIBIT' })).toBe(0);
    expect(one(s, 'volsurf_feed_messages_total', { source: 'DERIBIT' })).toBe(170);
    expect(one(s, 'volsurf_feed_reconnects_total', { source: 'DERIBIT' })).toBe(3);
    expect(one(s, 'volsurf_feed_dropped_messages_total', { source: 'DERIBIT', kind: 'bad-ticker' })).toBe(2);
    expect(one(s, 'volsurf_feed_dropped_messages_total', { source: 'DERIBIT', kind: 'unknown-channel' })).toBe(7);
    expect(one(s, 'volsurf_feed_last_message_age_seconds', { source: 'DERIBIT' })).toBeCloseTo(0.25, 9);
    // 50 messages in the 2 s between the two scrapes
    expect(one(s, 'volsurf_feed_messages_per_second', { source: 'DERIBIT' })).toBeCloseTo(25, 9);
  });

  it('no last-message age before the first message', async () => {
    const { scrape } = setup();
    const s = (await scrape()).samples;
    expect(pick(s, 'volsurf_feed_last_message_age_seconds')).toEqual([]);
    expect(one(s, 'volsurf_feed_messages_total', { source: 'DERIBIT' })).toBe(0);
  });

  it('pair data age and staleness follow the cache on the service clock', async () => {
    const { cache, clock, feed, scrape } = setup();
    feed.set({ connected: true });
    cache.setFeedConnected('DERIBIT', true);
    cache.putForwardCurve({ source: 'DERIBIT', pair: BTC, observationTimestamp: clock.t - 4, spot: 1, points: [], curve: makeSurface().forwardCurve, sequence: 1 });
    cache.touch('DERIBIT', BTC, clock.t - 4);
    let s = (await scrape()).samples;
    expect(one(s, 'volsurf_pair_data_age_seconds', { source: 'DERIBIT', pair: 'BTC/USD' })).toBe(4);
    expect(one(s, 'volsurf_forward_curve_age_seconds', { source: 'DERIBIT', pair: 'BTC/USD' })).toBe(4);
    expect(one(s, 'volsurf_pair_stale', { source: 'DERIBIT', pair: 'BTC/USD' })).toBe(0);
    // ETH has no data: warming up, not stale
    expect(one(s, 'volsurf_pair_stale', { source: 'DERIBIT', pair: 'ETH/USD' })).toBe(0);
    clock.t += 40; // older than STALE_AFTER_S = 30
    s = (await scrape()).samples;
    expect(one(s, 'volsurf_pair_stale', { source: 'DERIBIT', pair: 'BTC/USD' })).toBe(1);
    expect(one(s, 'volsurf_pair_data_age_seconds', { source: 'DERIBIT', pair: 'BTC/USD' })).toBe(44);
  });
});

describe('calibration series', () => {
  it('one histogram observation per surface written, in seconds; per-expiry RMSE, sequence and age of the cached surface', async () => {
    const { cache, clock, scrape } = setup();
    cache.putSurface(makeSurface({ sequence: 1, calibrationMs: 40, observationTimestamp: clock.t - 3 }));
    cache.putSurface(makeSurface({ sequence: 2, calibrationMs: 700, observationTimestamp: clock.t - 2, fits: [{ rmseVolPts: 0.7 }, { rmseVolPts: 0.2 }, { rmseVolPts: 1.3 }] }));
    cache.putSurface(makeSurface({ sequence: 1, calibrationMs: 5, model: 'SABR', observationTimestamp: clock.t - 1 }));
    const { samples: s, types } = await scrape();
    const svi = { source: 'DERIBIT', pair: 'BTC/USD', model: 'SVI' };
    expect(types.get('volsurf_calibration_duration_seconds')).toBe('histogram');
    expect(one(s, 'volsurf_calibration_duration_seconds_count', svi)).toBe(2);
    expect(one(s, 'volsurf_calibration_duration_seconds_sum', svi)).toBeCloseTo(0.74, 12);
    expect(one(s, 'volsurf_calibration_duration_seconds_bucket', { ...svi, le: '0.05' })).toBe(1);
    expect(one(s, 'volsurf_calibration_duration_seconds_bucket', { ...svi, le: '1' })).toBe(2);
    expect(one(s, 'volsurf_calibration_duration_seconds_count', { ...svi, model: 'SABR' })).toBe(1);
    // the gauges describe the cached (latest) surface only
    const snap = cache.getSurface('DERIBIT', BTC, 'SVI')!;
    const rmse = pick(s, 'volsurf_fit_rmse_vol_points', svi);
    expect(rmse).toHaveLength(3);
    for (const sl of snap.slices) expect(one(s, 'volsurf_fit_rmse_vol_points', { ...svi, expiry: expiryLabel(sl.expirationTimestamp) })).toBe(sl.fit.rmseVolPts);
    expect(one(s, 'volsurf_surface_sequence', svi)).toBe(2);
    expect(one(s, 'volsurf_surface_expiries', svi)).toBe(3);
    expect(one(s, 'volsurf_snapshot_age_seconds', svi)).toBe(2);
    expect(one(s, 'volsurf_snapshot_age_seconds', { ...svi, model: 'SABR' })).toBe(1);
    expect(one(s, 'volsurf_cache_updates_total', { type: 'surface' })).toBe(3);
  });

  it('counts repaired fits (penalty applied) and published butterfly violations, zero series from the first surface', async () => {
    const { cache, scrape } = setup();
    const svi = { source: 'DERIBIT', pair: 'BTC/USD', model: 'SVI' };
    cache.putSurface(makeSurface({ fits: [{}, {}] }));
    let s = (await scrape()).samples;
    expect(one(s, 'volsurf_arbitrage_repairs_total', svi)).toBe(0);
    expect(one(s, 'volsurf_arbitrage_violations_total', svi)).toBe(0);
    expect(sum(s, 'volsurf_arbitrage_rejections_total', svi)).toBe(0);
    cache.putSurface(
      makeSurface({
        sequence: 2,
        fits: [
          { method: '5-param: vega weighting; butterfly/calendar penalty applied' },
          { method: 'full: density penalty applied (butterfly repair)' },
          { method: 'full: butterfly repair by density penalty failed; unpenalized fit kept', butterflyFree: false },
        ],
      }),
    );
    s = (await scrape()).samples;
    expect(one(s, 'volsurf_arbitrage_repairs_total', svi)).toBe(2);
    expect(one(s, 'volsurf_arbitrage_violations_total', svi)).toBe(1);
  });

  it('counts fit-quality warnings: warned expiries of the newest surface (gauge) and warnings by kind (counter)', async () => {
    const { cache, scrape } = setup();
    const svi = { source: 'DERIBIT', pair: 'BTC/USD', model: 'SVI' };
    cache.putSurface(makeSurface({ fits: [{}, {}] }));
    let s = (await scrape()).samples;
    expect(one(s, 'volsurf_fit_quality_warned_expiries', svi)).toBe(0);
    cache.putSurface(
      makeSurface({
        sequence: 2,
        fits: [
          { warnings: ['fit quality: ATM error 1.50 vol pts (served 50.00 vs market 48.50) exceeds 1', 'fit quality: error 3.20 vol pts at a quote within 25-delta exceeds 3'] },
          { warnings: ['ATM check: something else'] },
          { warnings: ['fit quality: ATM error -2.00 vol pts (served 40.00 vs market 42.00) exceeds 1'] },
        ],
      }),
    );
    s = (await scrape()).samples;
    expect(one(s, 'volsurf_fit_quality_warned_expiries', svi)).toBe(2);
    expect(one(s, 'volsurf_fit_quality_warnings_total', { ...svi, kind: 'atm' })).toBe(2);
    expect(one(s, 'volsurf_fit_quality_warnings_total', { ...svi, kind: 'delta25' })).toBe(1);
    cache.putSurface(makeSurface({ sequence: 3, fits: [{}, {}] }));
    s = (await scrape()).samples;
    expect(one(s, 'volsurf_fit_quality_warned_expiries', svi)).toBe(0);
  });

  it('takes repairs and rejections from the cumulative arbitrage counts a snapshot carries', async () => {
    const { cache, scrape } = setup();
    const sabr = { source: 'DERIBIT', pair: 'BTC/USD', model: 'SABR' };
    const withCounts = (sequence: number, counts: Record<string, number>) => ({
      ...makeSurface({ model: 'SABR', sequence, fits: [{ method: 'penalty applied' }] }),
      arbitrage: { butterflyFree: true, calendarFreeRaw: true, calendarFree: true, calendarGrid: 'g', counts: { fits: 10, constrainedRefits: 0, calendarRepaired: 0, keptPrevious: 0, dropped: 0, rejected: (counts.keptPrevious ?? 0) + (counts.dropped ?? 0), ...counts } },
    });
    cache.putSurface(withCounts(1, { constrainedRefits: 3, calendarRepaired: 1, keptPrevious: 2, dropped: 0 }));
    cache.putSurface(withCounts(2, { constrainedRefits: 5, calendarRepaired: 1, keptPrevious: 2, dropped: 1 }));
    const s = (await scrape()).samples;
    expect(one(s, 'volsurf_arbitrage_repairs_total', { ...sabr, kind: 'constrained-refit' })).toBe(5);
    expect(one(s, 'volsurf_arbitrage_repairs_total', { ...sabr, kind: 'calendar-envelope' })).toBe(1);
    expect(one(s, 'volsurf_arbitrage_rejections_total', { ...sabr, outcome: 'kept-previous' })).toBe(2);
    expect(one(s, 'volsurf_arbitrage_rejections_total', { ...sabr, outcome: 'dropped' })).toBe(1);
  });

  it('counts expiries left out of a calibration by reason', async () => {
    const { m, scrape } = setup();
    m.observeCalibration({
      surfaces: [],
      source: 'DERIBIT',
      pair: BTC,
      surface: null,
      forwardCurve: null,
      calibrationMs: 1,
      version: 1,
      skipped: [
        { expirationTimestamp: 1, reason: 'fit failed: no convergence' },
        { expirationTimestamp: 2, reason: 'expires within the hour' },
        { expirationTimestamp: 3, reason: 'no usable mark IV' },
        { expirationTimestamp: 4, reason: 'fit failed: bad input' },
      ],
    } as unknown as CalibrationResult);
    const s = (await scrape()).samples;
    const l = { source: 'DERIBIT', pair: 'BTC/USD' };
    expect(one(s, 'volsurf_calibration_rejected_expiries_total', { ...l, reason: 'fit-failed' })).toBe(2);
    expect(one(s, 'volsurf_calibration_rejected_expiries_total', { ...l, reason: 'near-expiry' })).toBe(1);
    expect(one(s, 'volsurf_calibration_rejected_expiries_total', { ...l, reason: 'no-quotes' })).toBe(1);
  });

  it('counts recalibrations by kind: regular, or urgent (partial)', async () => {
    const { m, scrape } = setup();
    const r = { surfaces: [], source: 'DERIBIT', pair: BTC, surface: null, forwardCurve: null, calibrationMs: 1, version: 1, skipped: [] };
    m.observeCalibration(r as unknown as CalibrationResult);
    m.observeCalibration({ ...r, partial: true } as unknown as CalibrationResult);
    m.observeCalibration({ ...r, partial: true } as unknown as CalibrationResult);
    const s = (await scrape()).samples;
    const l = { source: 'DERIBIT', pair: 'BTC/USD' };
    expect(one(s, 'volsurf_calibrations_total', { ...l, kind: 'regular' })).toBe(1);
    expect(one(s, 'volsurf_calibrations_total', { ...l, kind: 'urgent' })).toBe(2);
  });

  it("counts the regular fits that yielded their worker (the pool's cumulative count, read at each scrape)", async () => {
    const { pool, scrape } = setup();
    expect(one((await scrape()).samples, 'volsurf_calibration_yields_total', {})).toBe(0);
    pool.yielded = 3;
    expect(one((await scrape()).samples, 'volsurf_calibration_yields_total', {})).toBe(3);
    pool.yielded = 5;
    expect(one((await scrape()).samples, 'volsurf_calibration_yields_total', {})).toBe(5);
  });

  it('label helpers', () => {
    expect(expiryLabel(Date.UTC(2026, 11, 25, 8) / 1000)).toBe('2026-12-25');
    expect(skipReasonLabel('something else')).toBe('other');
    expect(isRepairedFit('raw-svi')).toBe(false);
    expect(isRepairedFit('butterfly penalty on negative g(k) applied')).toBe(true);
    expect(isRepairedFit('butterfly repair by density penalty failed; unpenalized fit kept')).toBe(false);
  });
});

describe('REST and Kafka series', () => {
  it('REST latency per route pattern and status; unmatched routes share one series', async () => {
    const { m, scrape } = setup();
    m.observeHttp('GET', '/health', 200, 0.0004);
    m.observeHttp('GET', '/health', 200, 0.002);
    m.observeHttp('POST', '/api/v1/global/data/iV/byStrike', 400, 0.001);
    m.observeHttp('GET', undefined, 404, 0.0001);
    const s = (await scrape()).samples;
    const h = { method: 'GET', route: '/health', status_code: '200' };
    expect(one(s, 'volsurf_http_request_duration_seconds_count', h)).toBe(2);
    expect(one(s, 'volsurf_http_request_duration_seconds_sum', h)).toBeCloseTo(0.0024, 12);
    expect(one(s, 'volsurf_http_request_duration_seconds_bucket', { ...h, le: '0.0005' })).toBe(1);
    expect(one(s, 'volsurf_http_request_duration_seconds_count', { route: '/api/v1/global/data/iV/byStrike', status_code: '400' })).toBe(1);
    expect(one(s, 'volsurf_http_request_duration_seconds_count', { route: UNMATCHED_ROUTE, status_code: '404' })).toBe(1);
  });

  it('Kafka: queue depth per kind, sent/failures counters, and each acknowledged record latency observed once', async () => {
    const { kafka, scrape } = setup();
    let r = await scrape();
    expect(pick(r.samples, 'volsurf_kafka_queue_depth')).toEqual([]);
    expect(r.help.has('volsurf_kafka_queue_depth')).toBe(true);
    expect(r.help.has('volsurf_kafka_publish_latency_seconds')).toBe(true);

    kafka.stats = kafkaStats({ pending: { surfaces: 3, forwardCurves: 1, funding: 7, history: 0 }, sent: { surfaces: 2, forwardCurves: 1, funding: 0, history: 0 }, failures: 1 });
    kafka.lat = [4, 12, 30]; // ms, oldest first: 3 acknowledged records
    r = await scrape();
    expect(one(r.samples, 'volsurf_kafka_connected')).toBe(1);
    expect(one(r.samples, 'volsurf_kafka_queue_depth', { kind: 'funding' })).toBe(7);
    expect(one(r.samples, 'volsurf_kafka_queue_depth', { kind: 'surfaces' })).toBe(3);
    expect(one(r.samples, 'volsurf_kafka_sent_total', { kind: 'surfaces' })).toBe(2);
    expect(one(r.samples, 'volsurf_kafka_failures_total')).toBe(1);
    expect(one(r.samples, 'volsurf_kafka_publish_latency_seconds_count')).toBe(3);
    expect(one(r.samples, 'volsurf_kafka_publish_latency_seconds_sum')).toBeCloseTo(0.046, 12);

    // two more acknowledged (the ring now ends with them): only those two are new
    kafka.stats = kafkaStats({ sent: { surfaces: 3, forwardCurves: 1, funding: 1, history: 0 } });
    kafka.lat = [4, 12, 30, 100, 2500];
    r = await scrape();
    expect(one(r.samples, 'volsurf_kafka_publish_latency_seconds_count')).toBe(5);
    expect(one(r.samples, 'volsurf_kafka_publish_latency_seconds_sum')).toBeCloseTo(2.646, 12);
    expect(one(r.samples, 'volsurf_kafka_publish_latency_seconds_bucket', { le: '0.025' })).toBe(2);
    expect(sum(r.samples, 'volsurf_kafka_sent_total')).toBe(5);
    // a scrape with nothing new observes nothing
    r = await scrape();
    expect(one(r.samples, 'volsurf_kafka_publish_latency_seconds_count')).toBe(5);
  });

  it('two services in one process keep separate registries', async () => {
    const a = setup();
    const b = setup();
    a.m.observeHttp('GET', '/health', 200, 0.001);
    a.feed.set({ messages: 10 });
    b.feed.set({ messages: 99 });
    const sa = (await a.scrape()).samples;
    const sb = (await b.scrape()).samples;
    expect(one(sa, 'volsurf_feed_messages_total', { source: 'DERIBIT' })).toBe(10);
    expect(one(sb, 'volsurf_feed_messages_total', { source: 'DERIBIT' })).toBe(99);
    expect(pick(sb, 'volsurf_http_request_duration_seconds_count')).toEqual([]);
  });

  it('close() stops counting cache writes', async () => {
    const { cache, m, scrape } = setup();
    cache.putSurface(makeSurface());
    m.close();
    cache.putSurface(makeSurface({ sequence: 2 }));
    const s = (await scrape()).samples;
    expect(one(s, 'volsurf_calibration_duration_seconds_count', { model: 'SVI' })).toBe(1);
  });
});

describe('FeedRates', () => {
  it('rate over the window, null until half a second of samples, restart on a lower count', () => {
    const r = new FeedRates(10, 0.5, 0.2);
    expect(r.rate('A', 0, 100)).toBeNull();
    expect(r.rate('A', 30, 100.3)).toBeNull();
    expect(r.rate('A', 100, 101)).toBe(100);
    // samples older than 10 s drop out: the window is now 101..111
    expect(r.rate('A', 1100, 111)).toBe((1100 - 100) / 10);
    expect(r.rate('A', 1200, 112)).toBe((1200 - 1100) / 1);
    expect(r.rate('A', 5, 113)).toBeNull(); // feed restarted
    expect(r.rate('A', 55, 114)).toBe(50);
  });
});
