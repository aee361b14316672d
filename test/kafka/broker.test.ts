/**
 * Integration test against a REAL Apache Kafka 3.9.1 broker (KRaft) started by scripts/kafka/start.sh through
 * test/setup/kafka.ts (or KAFKA_BROKERS / the kafkaGlobal globalSetup). Skips loudly without Java unless
 * REQUIRE_KAFKA=1.
 *
 * What it pins down for the service's publishing path:
 *  - a compacted topic (cleanup.policy=compact) created by kafkajs admin really carries that config;
 *  - an idempotent producer (acks=all, maxInFlightRequests=1) writes every record exactly once
 *    (high watermarks equal the per-partition counts; offsets are 0..n-1 without gaps);
 *  - kafkajs's DefaultPartitioner puts each key on the same partition as the Java client would, so Java
 *    consumers / Kafka Streams joins co-partition with us. Reference partitions were computed with the Java
 *    client 3.9.1 itself: BuiltInPartitioner.partitionForKey(key UTF-8, 3) = toPositive(murmur2(key)) % 3
 *    (murmur2 values: deribit:BTC 146647673, deribit:ETH 1870113859, okx:BTC -126891634, bybit:ETH 612636915);
 *  - per key, records come back in produced order and the last one is the compacted "latest" value.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigResourceTypes, Kafka, logLevel, Partitioners, type Admin, type Producer } from 'kafkajs';
import { ensureKafka } from '../setup/kafka.js';

const kafka = await ensureKafka();

/** Java client 3.9.1 partition of each key for a 3-partition topic (see file docstring). */
const JAVA_PARTITION: Record<string, number> = {
  'deribit:BTC': 2,
  'deribit:ETH': 1,
  'okx:BTC': 1,
  'bybit:ETH': 0,
};
const NUM_PARTITIONS = 3;

/** A small surface-summary record: ts Unix seconds, atmIv fraction. */
interface SurfaceSummary {
  key: string;
  ts: number;
  atmIv: number;
}

/** Three versions per key, interleaved across keys (as a live publisher would emit them). */
const RECORDS: SurfaceSummary[] = [0, 1, 2].flatMap((version) =>
  Object.keys(JAVA_PARTITION).map((key, i) => ({
    key,
    ts: 1_735_689_600 + 60 * version,
    atmIv: Number((0.5 + 0.01 * i + 0.001 * version).toFixed(3)),
  })),
);

interface Received {
  key: string;
  value: SurfaceSummary;
  partition: number;
  offset: number;
  header: string;
}

describe.skipIf(!kafka)('real Apache Kafka broker (KRaft 3.9.1)', () => {
  const topic = `test.surface-summary.compacted.${randomUUID()}`;
  // logLevel NOTHING: on a fresh broker kafkajs logs the retried, harmless "coordinator is loading" responses
  // at ERROR while __consumer_offsets / __transaction_state are created; real failures still throw.
  const client = new Kafka({ clientId: 'broker-test', brokers: kafka?.brokers ?? [], logLevel: logLevel.NOTHING });
  let admin: Admin;
  let producer: Producer;

  beforeAll(async () => {
    admin = client.admin();
    await admin.connect();
    producer = client.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
  });

  afterAll(async () => {
    await producer?.disconnect();
    if (admin) {
      await admin.deleteTopics({ topics: [topic] }).catch(() => {});
      await admin.disconnect();
    }
    await kafka?.stop();
  });

  it('creates a compacted topic whose config the broker reports back', async () => {
    const created = await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic,
          numPartitions: NUM_PARTITIONS,
          replicationFactor: 1,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'min.compaction.lag.ms', value: '0' },
          ],
        },
      ],
    });
    expect(created).toBe(true);

    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(metadata.topics).toHaveLength(1);
    expect(metadata.topics[0]!.partitions.map((p) => p.partitionId).sort()).toEqual([0, 1, 2]);

    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['cleanup.policy', 'min.compaction.lag.ms'] }],
    });
    const entries = Object.fromEntries(configs.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
    expect(entries).toEqual({ 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '0' });
  });

  it('produces with an idempotent producer and consumes every record back exactly once, by key', async () => {
    const acks = await producer.send({
      topic,
      messages: RECORDS.map((r, i) => ({ key: r.key, value: JSON.stringify(r), headers: { seq: String(i) } })),
    });
    expect(acks.every((a) => a.errorCode === 0)).toBe(true);

    // Exactly-once on the log: per partition, the high watermark equals the number of records sent to it.
    const expectedPerPartition = [0, 1, 2].map((p) => RECORDS.filter((r) => JAVA_PARTITION[r.key] === p).length);
    expect(expectedPerPartition).toEqual([3, 6, 3]);
    const offsets = await admin.fetchTopicOffsets(topic);
    const highWatermarks = offsets.sort((a, b) => a.partition - b.partition).map((o) => Number(o.high));
    expect(highWatermarks).toEqual(expectedPerPartition);

    const received: Received[] = [];
    const consumer = client.consumer({ groupId: `broker-test-${randomUUID()}`, maxWaitTimeInMs: 500 });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        const guard = setTimeout(() => reject(new Error(`consumed ${received.length}/${RECORDS.length} records`)), 45_000);
        consumer
          .run({
            eachMessage: async ({ partition, message }) => {
              received.push({
                key: message.key!.toString('utf8'),
                value: JSON.parse(message.value!.toString('utf8')) as SurfaceSummary,
                partition,
                offset: Number(message.offset),
                header: String(message.headers?.['seq']),
              });
              if (received.length >= RECORDS.length) {
                clearTimeout(guard);
                resolve();
              }
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect();
    }

    expect(received).toHaveLength(RECORDS.length);
    // Same partition as the Java client's default partitioner.
    for (const r of received) expect(r.partition, r.key).toBe(JAVA_PARTITION[r.key]);
    // Offsets 0..n-1 per partition: nothing lost, nothing duplicated.
    for (let p = 0; p < NUM_PARTITIONS; p++) {
      const got = received.filter((r) => r.partition === p).map((r) => r.offset).sort((a, b) => a - b);
      expect(got).toEqual([...Array(expectedPerPartition[p]).keys()]);
    }
    // By key: exact contents in produced order, headers intact; the last is the compacted latest value.
    for (const key of Object.keys(JAVA_PARTITION)) {
      const sent = RECORDS.map((r, i) => ({ r, i })).filter(({ r }) => r.key === key);
      const got = received.filter((r) => r.key === key).sort((a, b) => a.offset - b.offset);
      expect(got.map((g) => g.value)).toEqual(sent.map(({ r }) => r));
      expect(got.map((g) => g.header)).toEqual(sent.map(({ i }) => String(i)));
      expect(got.at(-1)!.value).toEqual(RECORDS.filter((r) => r.key === key).at(-1));
    }
    expect(received.find((r) => r.key === 'okx:BTC' && r.value.ts === 1_735_689_720)?.value.atmIv).toBe(0.522);
  });
});
