/**
 * The iVSummary 24 h history restored from Kafka (issue 4): a calibrator publishes surface snapshots (and their
 * `surface-history` documents) a day apart; an API replica (startKafkaRole, ROLE=api) restores the history topic into
 * its cache's 24 h history (src/cache/history.ts) while its KafkaReplica fills the cache, so GET iVSummary's 24 h
 * changes are there right after start, equal to the changes computed from the two published surfaces.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { ensureKafka } from '../setup/kafka.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { summarizeSurface, withDiffs } from '../../src/cache/history.js';
import { systemClock } from '../../src/domain/clock.js';
import { KafkaPublisher } from '../../src/kafka/publisher.js';
import { topicNames } from '../../src/kafka/topics.js';
import { startKafkaRole } from '../../src/kafka/wiring.js';
import { http, startTestService, waitFor } from '../helpers/service.js';
import { surfaceDocument } from '../../src/api/documents.js';
import type { RunningService } from '../../src/service.js';
import { makeSnapshots } from './helpers.js';

const kafka = await ensureKafka();
const BTC = { base: 'BTC', quote: 'USD' } as const;
const NOW = Math.floor(Date.now() / 1000 / 300) * 300; // a 5-minute bucket boundary
const silent = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {}, child: () => silent };

describe.skipIf(!kafka)('24 h history restored from Kafka', () => {
  const brokers = kafka?.brokers ?? [];
  const prefix = `test-ivh-${randomUUID().slice(0, 8)}.`;
  let replicaClose: (() => Promise<void>) | null = null;
  let dayAgoSurface: ReturnType<typeof makeSnapshots>['surface'] | null = null;
  const historyDir = mkdtempSync(join(tmpdir(), 'ivh-replica-history-'));
  let svc: RunningService | null = null;

  afterAll(async () => {
    await replicaClose?.();
    await svc?.stop();
    rmSync(historyDir, { recursive: true, force: true });
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
    dayAgoSurface = dayAgo.surface;
    const now = makeSnapshots('DERIBIT', BTC, NOW, 2, 5);
    for (const s of [dayAgo, now]) {
      calibrator.putSurface(s.surface);
      calibrator.putForwardCurve(s.curve);
    }
    expect(await pub.flush(30_000)).toBe(true);
    await pub.close();

    const cache = new MarketCache(systemClock, 1e9);
    const wiring = startKafkaRole(
      { ROLE: 'api', KAFKA_BROKERS: brokers.join(','), KAFKA_CLIENT_ID: 'ivh-replica', KAFKA_TOPIC_PREFIX: prefix, KAFKA_PARTITIONS: 3, KAFKA_REPLICATION_FACTOR: 1, KAFKA_FUNDING_QUEUE_ALARM: 1000, KAFKA_HISTORY_RETENTION_H: 25 },
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

  it('an API replica rebuilds its history store from the topic, answers as of yesterday, and keeps it over a restart', async () => {
    expect(dayAgoSurface).not.toBeNull();
    const env = {
      ROLE: 'api',
      KAFKA_BROKERS: brokers.join(','),
      KAFKA_TOPIC_PREFIX: prefix,
      KAFKA_CLIENT_ID: `ivh-svc-${randomUUID().slice(0, 6)}`,
      HISTORY_DIR: historyDir,
      STALE_AFTER_S: '1000000000',
      // the replica's clock stands just after the published surfaces (documents carry their own times)
      SIM_START_TIME: String(NOW + 60),
    };
    const path = `/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI&asOf=${NOW - 86400 + 120}`;
    const asOfYesterday = async (s: RunningService) =>
      waitFor(async () => {
        const r = await http('GET', `${s.url}${path}`);
        return r.status === 200 ? r.body : null;
      }, 60_000, 'as-of yesterday from the rebuilt store');
    svc = await startTestService(env);
    expect(await asOfYesterday(svc)).toEqual(surfaceDocument(dayAgoSurface!));
    await svc.history.recorder!.flush();
    const rows = async (s: RunningService) => Number((await s.history.store!.query('SELECT count(*) AS n FROM surfaces WHERE obs < $1', [NOW - 3600]))[0]!.n);
    const before = await rows(svc);
    expect(before).toBe(1); // yesterday's SVI document
    await svc.stop();
    svc = await startTestService(env);
    expect(await asOfYesterday(svc)).toEqual(surfaceDocument(dayAgoSurface!));
    await svc.history.recorder!.flush();
    expect(await rows(svc)).toBe(before); // nothing written twice
  });
});
