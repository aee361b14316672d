/**
 * The streaming API's sequences are the Kafka documents' (issue 23 "the same sequence numbers as Kafka documents
 * and REST answers"): the service with a REAL Apache Kafka broker (test/setup/kafka.ts; skipped loudly without
 * Java, a failure with REQUIRE_KAFKA=1) and a WebSocket client on 127.0.0.1 subscribed to a surface; every surface
 * document published to Kafka while the client was subscribed was pushed with the same sequence and the same
 * observationTimestamp, spot and expiries, and the client got each sequence once, in order.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { ensureKafka } from '../setup/kafka.js';
import { http, startTestService, waitFor } from '../helpers/service.js';
import { StreamClient } from '../helpers/streamClient.js';
import type { RunningService } from '../../src/service.js';
import { topicNames } from '../../src/kafka/topics.js';
import { SurfaceSnapshotMessageSchema } from '../../src/kafka/schemas.js';
import { consumeUntil } from './helpers.js';

const kafka = await ensureKafka();
const CH = 'surface.DERIBIT.BTC-USD.SVI';
const KEY = 'DERIBIT:BTC/USD:SVI';

describe.skipIf(!kafka)('streaming API and Kafka (simulator + real broker)', () => {
  const brokers = kafka?.brokers ?? [];
  const prefix = `test-stream-${randomUUID().slice(0, 8)}.`;
  let svc: RunningService | null = null;

  afterAll(async () => {
    await svc?.stop().catch(() => {});
    const admin = new Kafka({ clientId: 'stream-test', brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: Object.values(topicNames(prefix)) }).catch(() => {});
    await admin.disconnect();
    await kafka?.stop();
  });

  it('every surface document on Kafka was pushed with the same sequence and content, each once and in order', async () => {
    svc = await startTestService({ KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix });
    await svc.kafka.publisher!.ready;
    await waitFor(async () => (await http('GET', `${svc!.url}/ready`)).status === 200, 120_000, '/ready 200');
    const c = await StreamClient.connect(`${svc.url.replace(/^http/, 'ws')}/api/v1/ws`);
    await c.request('public/subscribe', { channels: [CH] });
    await c.until(() => c.of(CH).length >= 8, 120_000, '8 surfaces pushed');
    const pushed = c.of(CH).map((n) => n.data);
    const first = pushed[0]!.sequence as number;
    const last = pushed.at(-1)!.sequence as number;
    const seqs = pushed.map((d) => d.sequence as number);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    const recs = await consumeUntil(
      brokers,
      [topicNames(prefix).surfaces],
      (r) => r.some((x) => x.key === KEY && (x.value as { sequence: number }).sequence >= last),
      120_000,
    );
    const docs = recs.filter((r) => r.key === KEY).map((r) => SurfaceSnapshotMessageSchema.parse(r.value)).filter((m) => m.sequence >= first && m.sequence <= last);
    expect(docs.length).toBeGreaterThanOrEqual(4);
    const bySeq = new Map(pushed.map((d) => [d.sequence as number, d]));
    for (const m of docs) {
      const d = bySeq.get(m.sequence);
      expect(d, `Kafka sequence ${m.sequence} was pushed`).toBeDefined();
      expect(d!.observationTimestamp).toBe(m.observationTimestamp);
      expect(d!.spotPrice).toBe(m.spot);
      expect(d!.expiries.map((e: { expirationTimestamp: number }) => e.expirationTimestamp)).toEqual(m.expiries.map((e) => e.expirationTimestamp));
    }
    c.close();
  }, 300_000);
});
