/**
 * The iVSummary 24 h history restored from Kafka (issue 4): a calibrator publishes surface snapshots (and their
 * `surface-history` documents) a day apart; an API replica (startKafkaRole, ROLE=api) restores the history topic into
 * its cache's 24 h history (src/cache/history.ts) while its KafkaReplica fills the cache, so GET iVSummary's 24 h
 * changes are there right after start, equal to the changes computed from the two published surfaces.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { ensureKafka } from '../setup/kafka.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { summarizeSurface, withDiffs } from '../../src/cache/history.js';
import { systemClock } from '../../src/domain/clock.js';
import { KafkaPublisher } from '../../src/kafka/publisher.js';
import { topicNames } from '../../src/kafka/topics.js';
import { startKafkaRole } from '../../src/kafka/wiring.js';
import { waitFor } from '../helpers/service.js';
import { makeSnapshots } from './helpers.js';

const kafka = await ensureKafka();
const BTC = { base: 'BTC', quote: 'USD' } as const;
const NOW = Math.floor(Date.now() / 1000 / 300) * 300; // a 5-minute bucket boundary
const silent = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {}, child: () => silent };

describe.skipIf(!kafka)('24 h history restored from Kafka', () => {
  const brokers = kafka?.brokers ?? [];
  const prefix = `test-ivh-${randomUUID().slice(0, 8)}.`;
  let replicaClose: (() => Promise<void>) | null = null;

  afterAll(async () => {
    await replicaClose?.();
    const admin = new Kafka({ clientId: 'ivh-test', brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: Object.values(topicNames(prefix)) }).catch(() => {});
    await admin.disconnect();
    await kafka?.stop();
  });

  it('an API replica has the 24 h changes right after start', async () => {
    const calibrator = new MarketCache(systemClock, 1e9);
    const pub = new KafkaPublisher({ brokers, prefix, clientId: 'ivh-test', historyIntervalS: 60 }).start(calibrator.updates$);
    await pub.ready;
    const dayAgo = makeSnapshots('DERIBIT', BTC, NOW - 86400 + 120, 1, 0);
    const now = makeSnapshots('DERIBIT', BTC, NOW, 2, 5);
    for (const s of [dayAgo, now]) {
      calibrator.putSurface(s.surface);
      calibrator.putForwardCurve(s.curve);
    }
    expect(await pub.flush(30_000)).toBe(true);
    await pub.close();

    const cache = new MarketCache(systemClock, 1e9);
    const wiring = startKafkaRole(
      { ROLE: 'api', KAFKA_BROKERS: brokers.join(','), KAFKA_CLIENT_ID: 'ivh-replica', KAFKA_TOPIC_PREFIX: prefix, KAFKA_PARTITIONS: 3, KAFKA_REPLICATION_FACTOR: 1, KAFKA_FUNDING_QUEUE_ALARM: 1000 },
      cache,
      silent,
    );
    replicaClose = () => wiring.close();
    const history = cache.history;
    const ref = await waitFor(() => history.dayAgo('DERIBIT', BTC, 'SVI', NOW), 60_000, 'the restored 24 h reference point');
    expect(ref.observationTimestamp).toBe(NOW - 86400 + 120);
    const served = await waitFor(() => cache.getSurface('DERIBIT', BTC, 'SVI'), 60_000, 'the replicated surface');
    expect(served.observationTimestamp).toBe(NOW);
    // the changes are those between the two published surfaces (rebuilt from their documents)
    const d = withDiffs(summarizeSurface(served), ref);
    const expected = withDiffs(summarizeSurface(now.surface), summarizeSurface(dayAgo.surface));
    expect(d.constMat.map((e) => e.diffAtmVol)).toEqual(expected.constMat.map((e) => e.diffAtmVol));
    expect(d.constMat.every((e) => e.diffAtmVol !== null && e.diffDelta25Skew !== null)).toBe(true);
  });
});
