/**
 * KafkaPublisher against a REAL Apache Kafka 3.9.1 broker (test/setup/kafka.ts), fed from a MarketCache filled
 * directly (the same `cache.updates$` the service's streams write to). Unique topic prefix per run.
 *
 * Pins down: topic creation and settings; one schema-valid document per update with the decisions.md keys, the
 * data's time as record timestamp and the schema header; per-key order; the surface-history sampling; invalid
 * documents counted and never sent; conflation per key while a batch is being sent; the funding restore on a new
 * publisher (history back, nothing published twice); surface-history restore; and a latency measurement (printed,
 * not asserted).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { ensureKafka } from '../setup/kafka.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { systemClock } from '../../src/domain/clock.js';
import { KafkaPublisher, percentile } from '../../src/kafka/publisher.js';
import {
  ForwardCurveMessageSchema,
  FundingUpdateMessageSchema,
  SurfaceSnapshotMessageSchema,
  type SurfaceSnapshotMessage,
} from '../../src/kafka/schemas.js';
import { topicNames } from '../../src/kafka/topics.js';
import { surfaceFromMessage } from '../../src/kafka/rebuild.js';
import { restoreFundingHistory, restoreSurfaceHistory } from '../../src/kafka/history.js';
import type { SurfaceSnapshot } from '../../src/cache/snapshot.js';
import { consumeUntil, fundingPoint, makeSnapshots, type Rec } from './helpers.js';

const kafka = await ensureKafka();

const BTC = { base: 'BTC', quote: 'USD' } as const;
const ETH = { base: 'ETH', quote: 'USD' } as const;
const SOL = { base: 'SOL', quote: 'USDC' } as const;
const XRP = { base: 'XRP', quote: 'USDC' } as const;
const T0 = Math.floor((Date.now() / 1000 - 3600) / 60) * 60; // aligned to the 60 s history buckets
const H = 3600;

describe.skipIf(!kafka)('KafkaPublisher on a real broker', () => {
  const brokers = kafka?.brokers ?? [];
  const prefix = `test-pub-${randomUUID().slice(0, 8)}.`;
  const topics = topicNames(prefix);
  const cache = new MarketCache(systemClock, 30);
  let pub: KafkaPublisher;
  const admin = new Kafka({ clientId: 'publisher-test', brokers, logLevel: logLevel.NOTHING }).admin();

  beforeAll(async () => {
    await admin.connect();
    pub = new KafkaPublisher({ brokers, prefix, clientId: 'publisher-test', historyIntervalS: 60 }).start(cache.updates$);
    await pub.ready;
  });

  afterAll(async () => {
    await pub?.close();
    await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => {});
    await admin.disconnect();
    await kafka?.stop();
  });

  it('creates its topics: snapshots and curves compacted, funding and history kept by time, 3 partitions', async () => {
    const md = await admin.fetchTopicMetadata({ topics: Object.values(topics) });
    expect(md.topics.map((t) => t.partitions.length)).toEqual([3, 3, 3, 3]);
    const cfg = await admin.describeConfigs({
      includeSynonyms: false,
      resources: Object.values(topics).map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['cleanup.policy', 'retention.ms'] })),
    });
    const got = Object.fromEntries(
      cfg.resources.map((r) => [r.resourceName, Object.fromEntries(r.configEntries.map((e) => [e.configName, e.configValue]))]),
    );
    expect(got[topics.surfaces]!['cleanup.policy']).toBe('compact');
    expect(got[topics.forwardCurves]!['cleanup.policy']).toBe('compact');
    expect(got[topics.funding]).toEqual({ 'cleanup.policy': 'delete', 'retention.ms': String(365 * 86_400_000) });
    expect(got[topics.surfaceHistory]).toEqual({ 'cleanup.policy': 'delete', 'retention.ms': String(25 * 3_600_000) });
  });

  it('publishes one schema-valid document per update, keyed per decisions.md, in order per key', async () => {
    const sent: SurfaceSnapshot[] = [];
    // Three recalibrations of BTC (observation times T0, T0+30, T0+61: history keeps T0 and T0+61, the first of
    // each 60 s bucket), one of ETH.
    for (const [i, dt] of [0, 30, 61].entries()) {
      const { surface, curve } = makeSnapshots('DERIBIT', BTC, T0 + dt, i + 1, i);
      cache.putSurface(surface);
      cache.putForwardCurve(curve);
      sent.push(surface);
      expect(await pub.flush(30_000)).toBe(true); // one at a time: no conflation
    }
    const eth = makeSnapshots('DERIBIT', ETH, T0 + 5, 1);
    cache.putSurface(eth.surface);
    cache.putForwardCurve(eth.curve);
    for (let h = 0; h < 5; h++) expect(cache.addFunding(fundingPoint(T0 - 10 * H + h * H, 1e-5 * (h + 1)))).toBe(true);
    expect(cache.addFunding(fundingPoint(T0 - 10 * H, 1e-5))).toBe(false); // same point again: not new, not published
    cache.addFunding(fundingPoint(T0 - 10 * H, 2e-5, 'ETH-PERPETUAL'));

    const recs = await consumeUntil(
      brokers,
      Object.values(topics),
      (r) => r.filter((x) => x.topic === topics.surfaces).length >= 4 && r.filter((x) => x.topic === topics.forwardCurves).length >= 4 &&
        r.filter((x) => x.topic === topics.funding).length >= 6 && r.filter((x) => x.topic === topics.surfaceHistory).length >= 3,
    );
    await new Promise((r) => setTimeout(r, 300));
    const by = (t: string): Rec[] => recs.filter((r) => r.topic === t).sort((a, b) => a.partition - b.partition || a.offset - b.offset);

    const surfaces = by(topics.surfaces);
    expect(surfaces.map((r) => r.key).sort()).toEqual(['DERIBIT:BTC/USD:SVI', 'DERIBIT:BTC/USD:SVI', 'DERIBIT:BTC/USD:SVI', 'DERIBIT:ETH/USD:SVI']);
    for (const r of surfaces) {
      expect(SurfaceSnapshotMessageSchema.safeParse(r.value).success).toBe(true);
      expect(r.headers['schema']).toBe('surface-snapshot/1');
      expect(r.timestampMs).toBe(Math.round((r.value as SurfaceSnapshotMessage).observationTimestamp * 1000));
    }
    const btc = surfaces.filter((r) => r.key === 'DERIBIT:BTC/USD:SVI').map((r) => r.value as SurfaceSnapshotMessage);
    expect(btc.map((m) => m.sequence)).toEqual([1, 2, 3]);
    expect(btc.map((m) => m.observationTimestamp)).toEqual([T0, T0 + 30, T0 + 61]);
    expect(btc[2]!.expiries[0]!.parameters['a']).toBe(0.002 + 2e-4);
    expect(btc[2]!.inputCount).toBe(6);
    expect(btc[2]!.forwardCurve.map((p) => p.origin)).toEqual(['option-underlying', 'option-underlying', 'future']);
    // The document rebuilds into a surface answering exactly like the one put in the cache.
    const rebuilt = surfaceFromMessage(SurfaceSnapshotMessageSchema.parse(btc[2]));
    const s = sent[2]!;
    const F = s.forwardCurve.forward(0.05);
    expect(rebuilt.surface.impliedVol(0.05, 97_500, F)).toBe(s.surface.impliedVol(0.05, 97_500, F));

    const curves = by(topics.forwardCurves);
    expect(curves.map((r) => r.key).sort()).toEqual(['DERIBIT:BTC/USD', 'DERIBIT:BTC/USD', 'DERIBIT:BTC/USD', 'DERIBIT:ETH/USD']);
    for (const r of curves) expect(ForwardCurveMessageSchema.safeParse(r.value).success).toBe(true);

    const funding = by(topics.funding);
    expect(funding).toHaveLength(6);
    for (const r of funding) {
      expect(FundingUpdateMessageSchema.safeParse(r.value).success).toBe(true);
      expect(r.timestampMs).toBe((r.value as { timestamp: number }).timestamp * 1000);
    }
    const btcFunding = funding.filter((r) => r.key === 'DERIBIT:BTC-PERPETUAL').map((r) => r.value as { timestamp: number; interest: number });
    expect(btcFunding.map((v) => v.timestamp)).toEqual([0, 1, 2, 3, 4].map((h) => T0 - 10 * H + h * H));
    expect(btcFunding.map((v) => v.interest)).toEqual([0, 1, 2, 3, 4].map((h) => 1e-5 * (h + 1))); // exact doubles through JSON
    expect(funding.filter((r) => r.key === 'DERIBIT:ETH-PERPETUAL')).toHaveLength(1);

    const history = by(topics.surfaceHistory);
    expect(history.map((r) => [r.key, (r.value as SurfaceSnapshotMessage).observationTimestamp]).sort()).toEqual(
      [['DERIBIT:BTC/USD:SVI', T0], ['DERIBIT:BTC/USD:SVI', T0 + 61], ['DERIBIT:ETH/USD:SVI', T0 + 5]].sort(),
    );
    expect((history[0]!.value as SurfaceSnapshotMessage).expiries[0]!.quotes).toBeUndefined();
    expect(pub.stats().invalid).toBe(0);
  });

  it('counts and logs an invalid document and never sends it', async () => {
    const good = makeSnapshots('DERIBIT', SOL, T0 + 100, 1);
    const broken: SurfaceSnapshot = {
      ...good.surface,
      slices: [{ ...good.surface.slices[0]!, fit: { ...good.surface.slices[0]!.fit, rmseVolPts: NaN } }],
    };
    const invalidBefore = pub.stats().invalid;
    cache.putSurface(broken);
    cache.putSurface(makeSnapshots('DERIBIT', XRP, T0 + 100, 1).surface); // a later valid one, to know when to stop reading
    expect(await pub.flush(30_000)).toBe(true);
    expect(pub.stats().invalid - invalidBefore).toBe(2); // the SOL surface and its history sample
    const recs = await consumeUntil(brokers, [topics.surfaces], (r) => r.some((x) => x.key === 'DERIBIT:XRP/USDC:SVI'));
    expect(recs.some((r) => r.key.startsWith('DERIBIT:SOL'))).toBe(false);
  });

  it('conflates per key: a burst while the loop is busy sends only the latest document of the key', async () => {
    const before = pub.stats();
    for (let i = 1; i <= 50; i++) cache.putSurface(makeSnapshots('DERIBIT', ETH, T0 + 200 + i * 0.01, 100 + i, i).surface);
    expect(await pub.flush(30_000)).toBe(true);
    const after = pub.stats();
    expect(after.conflated - before.conflated).toBe(49);
    expect(after.sent.surfaces - before.sent.surfaces).toBe(1);
    const recs = await consumeUntil(brokers, [topics.surfaces], (r) => r.some((x) => (x.value as SurfaceSnapshotMessage).sequence === 150));
    const seqs = recs.filter((r) => r.key === 'DERIBIT:ETH/USD:SVI').map((r) => (r.value as SurfaceSnapshotMessage).sequence);
    expect(seqs).toEqual([1, 150]);
  });

  it('a new publisher restores the funding history and does not publish already-published points again', async () => {
    const cache2 = new MarketCache(systemClock, 30);
    const pub2 = new KafkaPublisher({ brokers, prefix, clientId: 'publisher-test-2', onRestoredFunding: (p) => cache2.funding.add(p) });
    pub2.start(cache2.updates$);
    // Before the broker connection the (restarted) service re-fetches the exchange's history: 5 known points + 1 new.
    for (let h = 0; h < 6; h++) cache2.addFunding(fundingPoint(T0 - 10 * H + h * H, 1e-5 * (h + 1)));
    expect(pub2.stats().pending.funding).toBe(6);
    await pub2.ready;
    expect(await pub2.flush(30_000)).toBe(true);
    const st = pub2.stats();
    expect(st.fundingRestored).toBe(6); // 5 BTC + 1 ETH read back
    expect(st.fundingAlreadyPublished).toBe(5);
    expect(st.sent.funding).toBe(1);
    await pub2.close();
    // History is back in the store, the ETH point included.
    expect(cache2.fundingRange('DERIBIT', 'ETH-PERPETUAL', 0, Infinity, 10)).toEqual([{ interest: 2e-5, timestamp: T0 - 10 * H }]);
    const all: Array<{ key: string; timestamp: number }> = [];
    const r = await restoreFundingHistory({ brokers, prefix }, (p) => all.push({ key: `${p.source}:${p.instrumentId}`, timestamp: p.timestamp }));
    expect(r.invalid).toBe(0);
    const btcTs = all.filter((p) => p.key === 'DERIBIT:BTC-PERPETUAL').map((p) => p.timestamp);
    expect(btcTs).toEqual([0, 1, 2, 3, 4, 5].map((h) => T0 - 10 * H + h * H)); // each exactly once, in order
  });

  it('restores the surface history since a time, oldest first per key', async () => {
    const got: Array<[string, number]> = [];
    const r = await restoreSurfaceHistory({ brokers, prefix }, T0 + 1, (s) => got.push([`${s.pair.base}`, s.observationTimestamp]));
    expect(r.invalid).toBe(0);
    expect(got.filter(([b]) => b === 'BTC')).toEqual([['BTC', T0 + 61]]);
    expect(got.filter(([b]) => b === 'ETH').map(([, t]) => t)).toEqual([T0 + 5, T0 + 200.01]);
    expect(got.filter(([b]) => b === 'XRP')).toHaveLength(1);
  });

  it('measures publish latency (cache update -> broker ack) on a steady flow (printed, not asserted)', async () => {
    const n0 = pub.latencies().length;
    for (let i = 0; i < 200; i++) {
      const pair = i % 2 === 0 ? BTC : ETH;
      const { surface, curve } = makeSnapshots('DERIBIT', pair, T0 + 1000 + i, 1000 + i, i);
      cache.putSurface(surface);
      cache.putForwardCurve(curve);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(await pub.flush(30_000)).toBe(true);
    const lat = pub.latencies().slice(n0);
    expect(lat.length).toBeGreaterThan(0);
    console.log(
      `[measurement] publish latency cache update -> broker ack over ${lat.length} records: p50 ${percentile(lat, 50).toFixed(2)} ms, ` +
        `p99 ${percentile(lat, 99).toFixed(2)} ms, max ${Math.max(...lat).toFixed(2)} ms (conflated so far ${pub.stats().conflated})`,
    );
  });
});
