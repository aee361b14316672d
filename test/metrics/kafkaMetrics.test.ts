/**
 * The Kafka series of /metrics on the service publishing to a REAL broker (test/setup/kafka.ts): the
 * producer is connected, records are acknowledged, every acknowledged record's publish latency is observed
 * exactly once (histogram count = records sent), and the queue depth per kind is reported.
 */
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { topicNames } from '../../src/kafka/topics.js';
import type { RunningService } from '../../src/service.js';
import { ensureKafka } from '../setup/kafka.js';
import { startTestService, waitFor } from '../helpers/service.js';
import { one, parseProm, pick, sum } from './helpers.js';

const kafka = await ensureKafka();

describe.skipIf(!kafka)('Kafka publishing metrics (real broker)', () => {
  const brokers = kafka?.brokers ?? [];
  const prefix = `test-metrics-${randomUUID().slice(0, 8)}.`;
  let svc: RunningService | undefined;

  afterAll(async () => {
    await svc?.stop();
    const admin = new Kafka({ clientId: 'metrics-test', brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: Object.values(topicNames(prefix)) }).catch(() => {});
    await admin.disconnect();
    await kafka?.stop();
  });

  it('connected, records sent, one latency observation per acknowledged record, queue depth per kind', async () => {
    svc = await startTestService({ SOURCES: 'DERIBIT', CALIBRATION_THROTTLE_MS: '500', KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix });
    const publisher = svc.kafka.publisher!;
    await publisher.ready;
    await waitFor(() => publisher.stats().sent.surfaces >= 8 && publisher.stats().sent.funding > 0, 120_000, 'records acknowledged');
    const { samples: s } = parseProm(await svc.monitoring.metrics.metrics());
    const st = publisher.stats();
    expect(one(s, 'volsurf_kafka_connected')).toBe(1);
    const sent = sum(s, 'volsurf_kafka_sent_total');
    expect(sent).toBe(st.sent.surfaces + st.sent.forwardCurves + st.sent.funding + st.sent.history);
    expect(one(s, 'volsurf_kafka_sent_total', { kind: 'surfaces' })).toBe(st.sent.surfaces);
    // every acknowledged record observed once (the publisher keeps the last 10 000 latencies)
    expect(sent).toBeLessThan(10_000);
    expect(one(s, 'volsurf_kafka_publish_latency_seconds_count')).toBe(sent);
    const meanS = one(s, 'volsurf_kafka_publish_latency_seconds_sum') / sent;
    expect(meanS).toBeGreaterThan(0);
    expect(meanS).toBeLessThan(30);
    const depth = pick(s, 'volsurf_kafka_queue_depth');
    expect(depth.map((d) => d.labels.kind).sort()).toEqual(['forwardCurves', 'funding', 'history', 'surfaces']);
    for (const d of depth) expect(d.value).toBeGreaterThanOrEqual(0);
    expect(one(s, 'volsurf_kafka_queue_depth', { kind: 'funding' })).toBe(st.pending.funding);
  });
});
