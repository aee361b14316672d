/**
 * KafkaPublisher across broker faults, on a private REAL broker (scripts/kafka/start.sh on its own port pair) that
 * the test stops (SIGTERM by PID, controlled shutdown) and restarts with the same data dir.
 *
 * - broker stopped for several seconds mid-run while surfaces and funding points keep coming: funding points wait in
 *   order, surfaces are conflated per key; after the restart a consumer reads every funding point exactly once (by
 *   key and timestamp) in order, and surfaces resume with the latest one delivered;
 * - broker absent when the publisher starts: it keeps trying, and publishes once the broker appears;
 * - the same for the whole service on the simulator: it starts and serves REST without the broker, and its documents
 *   reach the topics once the broker appears.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { MarketCache } from '../../src/cache/marketCache.js';
import { systemClock } from '../../src/domain/clock.js';
import { KafkaPublisher } from '../../src/kafka/publisher.js';
import { topicNames } from '../../src/kafka/topics.js';
import type { SurfaceSnapshotMessage } from '../../src/kafka/schemas.js';
import { consumeUntil, eventually, fundingPoint, makeSnapshots, startRestartableBroker } from './helpers.js';
import { http, startTestService } from '../helpers/service.js';

// A random port pair in 19300..19498 (outside ensureKafka's 19192.. scan): while this broker is halted its port is
// free, and another test run starting a broker there would take it (and wipe its data dir).
const broker = await startRestartableBroker(Number(process.env['KAFKA_FAULT_TEST_PORT'] ?? 19300 + 2 * Math.floor(Math.random() * 100)));

const BTC = { base: 'BTC', quote: 'USD' } as const;
const T0 = Math.floor(Date.now() / 1000) - 7200;
const H = 3600;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!broker)('KafkaPublisher across broker faults (real broker stopped and restarted)', () => {
  afterAll(async () => {
    await broker?.stop();
  });

  it('broker stopped mid-run: funding points delivered exactly once and in order, surfaces conflated then resumed', async () => {
    const brokers = broker!.brokers;
    const prefix = `test-fault-${randomUUID().slice(0, 8)}.`;
    const topics = topicNames(prefix);
    const cache = new MarketCache(systemClock, 30);
    const pub = new KafkaPublisher({ brokers, prefix, clientId: 'fault-test', minBackoffMs: 100, maxBackoffMs: 1000, historyIntervalS: 0 }).start(cache.updates$);
    await pub.ready;
    let seq = 0;
    let fundingTs = T0 - 100 * H;
    const putSurface = () => {
      seq++;
      const { surface, curve } = makeSnapshots('DERIBIT', BTC, T0 + seq, seq, seq);
      cache.putSurface(surface);
      cache.putForwardCurve(curve);
    };
    const addFunding = () => {
      expect(cache.addFunding(fundingPoint(fundingTs, 1e-6 * ((fundingTs - T0) / H)))).toBe(true);
      fundingTs += H;
    };
    for (let i = 0; i < 5; i++) {
      putSurface();
      addFunding();
      expect(await pub.flush(30_000)).toBe(true); // one at a time: nothing conflated while the broker is up
    }
    const seqBeforeHalt = seq;

    await broker!.halt();
    // Several seconds without a broker; the market goes on.
    const downStart = Date.now();
    // at least 6 s and 50 recalibrations (10 funding points), however slow a loaded machine runs the loop
    while (Date.now() - downStart < 6000 || seq - seqBeforeHalt < 50) {
      putSurface();
      if (seq % 5 === 0) addFunding();
      await sleep(100);
    }
    const during = pub.stats();
    expect(during.connected).toBe(false);
    expect(during.failures).toBeGreaterThan(0);
    expect(during.pending.funding).toBeGreaterThanOrEqual(10); // queued, none dropped
    expect(during.pending.surfaces).toBeLessThanOrEqual(2); // the in-flight batch's one + the latest: conflated
    expect(during.conflated).toBeGreaterThan(30);
    const fundingDuringOutage = (fundingTs - (T0 - 100 * H)) / H - 5;

    const restartMs = await broker!.resume();
    const t0 = Date.now();
    expect(await pub.flush(90_000)).toBe(true);
    const drainMs = Date.now() - t0;
    // After the restart the flow goes on.
    for (let i = 0; i < 3; i++) {
      putSurface();
      addFunding();
    }
    expect(await pub.flush(30_000)).toBe(true);
    const fundingTotal = (fundingTs - (T0 - 100 * H)) / H;
    expect(pub.stats().pending).toEqual({ surfaces: 0, forwardCurves: 0, funding: 0, history: 0 });

    const recs = await consumeUntil(brokers, [topics.funding, topics.surfaces], (r) =>
      r.filter((x) => x.topic === topics.funding).length >= fundingTotal &&
      r.some((x) => x.topic === topics.surfaces && (x.value as SurfaceSnapshotMessage).sequence === seq),
    );
    await sleep(500);
    // Funding: every point exactly once, by key and timestamp, in the order produced.
    const funding = recs.filter((r) => r.topic === topics.funding).sort((a, b) => a.offset - b.offset);
    const ts = funding.map((r) => (r.value as { timestamp: number }).timestamp);
    expect(ts).toEqual(Array.from({ length: fundingTotal }, (_, i) => T0 - 100 * H + i * H));
    expect(new Set(funding.map((r) => `${r.key}|${(r.value as { timestamp: number }).timestamp}`)).size).toBe(fundingTotal);
    expect(fundingDuringOutage).toBeGreaterThanOrEqual(10);
    // Surfaces: strictly increasing per key, everything before the halt, the outage conflated, the latest delivered.
    const seqs = recs.filter((r) => r.topic === topics.surfaces).sort((a, b) => a.offset - b.offset).map((r) => (r.value as SurfaceSnapshotMessage).sequence);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
    expect(seqs.slice(0, seqBeforeHalt)).toEqual([1, 2, 3, 4, 5]);
    expect(seqs.at(-1)).toBe(seq);
    const outageSeqs = seqs.filter((s) => s > seqBeforeHalt && s <= seq - 3);
    expect(outageSeqs.length).toBeLessThanOrEqual(3); // of ~60 recalibrations during the outage
    console.log(
      `[measurement] outage 6 s: ${seq - seqBeforeHalt - 3} recalibrations -> ${outageSeqs.length} surface documents sent after it; ` +
        `${fundingDuringOutage} funding points queued and delivered; failures ${pub.stats().failures}, conflated ${pub.stats().conflated}; ` +
        `broker restart (same data dir) to a client answering ${restartMs} ms, backlog drained ${drainMs} ms after that`,
    );
    await pub.close();
  }, 240_000);

  it('broker absent at start: the publisher keeps trying and publishes once the broker appears', async () => {
    const brokers = broker!.brokers;
    const prefix = `test-absent-${randomUUID().slice(0, 8)}.`;
    const topics = topicNames(prefix);
    await broker!.halt();
    const cache = new MarketCache(systemClock, 30);
    const pub = new KafkaPublisher({ brokers, prefix, clientId: 'absent-test', minBackoffMs: 100, maxBackoffMs: 1000 }).start(cache.updates$);
    const { surface, curve } = makeSnapshots('DERIBIT', BTC, T0, 1);
    cache.putSurface(surface);
    cache.putForwardCurve(curve);
    cache.addFunding(fundingPoint(T0 - H));
    await eventually(() => pub.stats().connectFailures >= 2, 30_000, 'two failed connection attempts');
    expect(pub.stats().sent).toEqual({ surfaces: 0, forwardCurves: 0, funding: 0, history: 0 });
    expect(pub.stats().pending).toEqual({ surfaces: 1, forwardCurves: 1, funding: 1, history: 1 });

    await broker!.resume();
    await pub.ready;
    expect(await pub.flush(60_000)).toBe(true);
    const recs = await consumeUntil(brokers, Object.values(topics), (r) => r.length >= 4);
    expect(recs.map((r) => `${r.topic.slice(prefix.length)} ${r.key}`).sort()).toEqual([
      'forward-curves DERIBIT:BTC/USD',
      'funding-updates DERIBIT:BTC-PERPETUAL',
      'surface-history DERIBIT:BTC/USD:SVI',
      'surface-snapshots DERIBIT:BTC/USD:SVI',
    ]);
    await pub.close();
  }, 240_000);

  it('broker absent at start: the service starts, serves REST, and publishes once the broker appears', async () => {
    const brokers = broker!.brokers;
    const prefix = `test-svc-absent-${randomUUID().slice(0, 8)}.`;
    const topics = topicNames(prefix);
    await broker!.halt();
    const svc = await startTestService({ KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix });
    try {
      await eventually(async () => (await http('GET', `${svc.url}/ready`)).status === 200, 180_000, '/ready 200 without a broker');
      const s = await http('GET', `${svc.url}/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI`);
      expect(s.status).toBe(200);
      const pub = svc.kafka.publisher!;
      expect(pub.stats().connected).toBe(false);
      expect(pub.stats().connectFailures).toBeGreaterThan(0);
      // the exchange's funding history, waiting in order (/ready is about surfaces: the history may land a moment later)
      await eventually(() => pub.stats().pending.funding > 0, 60_000, 'funding history queued while the broker is absent');
      expect(pub.stats().connected).toBe(false);
      const waiting = pub.stats().pending.funding;

      await broker!.resume();
      await pub.ready;
      const recs = await consumeUntil(brokers, [topics.surfaces, topics.funding], (r) =>
        new Set(r.filter((x) => x.topic === topics.surfaces && x.key.endsWith(':SVI')).map((x) => x.key)).size === 4 &&
        r.filter((x) => x.topic === topics.funding).length >= waiting,
      120_000);
      expect(new Set(recs.filter((x) => x.topic === topics.surfaces && x.key.endsWith(':SVI')).map((x) => x.key)).size).toBe(4);
      const funding = recs.filter((x) => x.topic === topics.funding);
      expect(new Set(funding.map((x) => `${x.key}|${(x.value as { timestamp: number }).timestamp}`)).size).toBe(funding.length);
    } finally {
      await svc.stop();
    }
  }, 300_000);
});
