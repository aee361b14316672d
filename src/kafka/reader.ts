/**
 * Bounded reads of Kafka topics: from the beginning (or from a record timestamp) up to the end offsets the topics
 * had when the read began. Used to restore state at start-up: the funding history (funding-updates) and the 24 h
 * snapshot history (surface-history).
 *
 * kafkajs 2.2.4 has no partition-assign API, so the read joins a consumer group of its own (a unique id, never
 * committed), seeks each partition, and stops once every partition reached its end offset. Records produced after
 * the read began are not delivered (the caller's live path sees them).
 */
import type { Kafka, KafkaMessage } from 'kafkajs';
import { silentLogger, uniqueGroupId, type KafkaLogger } from './topics.js';

/** One record delivered by {@link readTopicsToEnd}. */
export interface ReadRecord {
  readonly topic: string;
  readonly partition: number;
  readonly message: KafkaMessage;
}

export interface ReadToEndOptions {
  readonly topics: readonly string[];
  /** Start at each partition's first record whose timestamp is >= this, Unix ms (default: the beginning). */
  readonly fromTimestampMs?: number;
  /** Client id stem of the group id (default `vol-surface-service`). */
  readonly clientId?: string;
  /** Give up after this many ms (default 60 000). */
  readonly timeoutMs?: number;
  readonly logger?: KafkaLogger;
}

/** What a read did. */
export interface ReadToEndResult {
  /** Records delivered. */
  readonly records: number;
  /** Wall-clock ms of the whole read (group join included). */
  readonly ms: number;
}

/**
 * Deliver every record of `topics` from the start point up to the end offsets of the moment the read begins, in
 * partition order (records of one partition in offset order; partitions interleave). `onRecord` may be async.
 * @throws Error on timeout or when the broker cannot be reached (kafkajs errors)
 */
export async function readTopicsToEnd(
  kafka: Kafka,
  opts: ReadToEndOptions,
  onRecord: (r: ReadRecord) => void | Promise<void>,
): Promise<ReadToEndResult> {
  const t0 = Date.now();
  const logger = opts.logger ?? silentLogger;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  // 1. Start and end offsets per partition.
  const admin = kafka.admin();
  const targets = new Map<string, { start: number; end: number }>(); // `${topic}/${partition}`
  await admin.connect();
  try {
    for (const topic of opts.topics) {
      const ends = await admin.fetchTopicOffsets(topic);
      const starts =
        opts.fromTimestampMs === undefined ? null : await admin.fetchTopicOffsetsByTimestamp(topic, Math.floor(opts.fromTimestampMs));
      for (const e of ends) {
        const end = Number(e.high);
        const start = starts ? Number(starts.find((s) => s.partition === e.partition)?.offset ?? e.low) : Number(e.low);
        if (start < end) targets.set(`${topic}/${e.partition}`, { start: Math.max(start, Number(e.low)), end });
      }
    }
  } finally {
    await admin.disconnect();
  }
  if (targets.size === 0) return { records: 0, ms: Date.now() - t0 };

  // 2. Consume until every partition reached its end offset.
  const consumer = kafka.consumer({
    groupId: uniqueGroupId(opts.clientId ?? 'vol-surface-service', 'restore'),
    maxWaitTimeInMs: 250,
    allowAutoTopicCreation: false,
  });
  let records = 0;
  const pending = new Set(targets.keys());
  let timer: NodeJS.Timeout | undefined;
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [...opts.topics], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`reading ${opts.topics.join(', ')} to the end timed out after ${timeoutMs} ms (${pending.size} partitions left, ${records} records read)`)),
        timeoutMs,
      );
      consumer
        .run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
            const key = `${batch.topic}/${batch.partition}`;
            const target = targets.get(key);
            if (!target || !pending.has(key)) return;
            for (const message of batch.messages) {
              const offset = Number(message.offset);
              if (offset < target.start) continue;
              if (offset >= target.end) break;
              await onRecord({ topic: batch.topic, partition: batch.partition, message });
              records++;
              resolveOffset(message.offset);
              if (offset + 1 >= target.end) break;
            }
            const last = Number(batch.lastOffset());
            if (last + 1 >= target.end || batch.messages.some((m) => Number(m.offset) + 1 >= target.end)) {
              pending.delete(key);
              if (pending.size === 0) resolve();
            }
            await heartbeat();
          },
        })
        .catch(reject);
      if (opts.fromTimestampMs !== undefined) {
        for (const [key, t] of targets) {
          const sep = key.lastIndexOf('/');
          consumer.seek({ topic: key.slice(0, sep), partition: Number(key.slice(sep + 1)), offset: String(t.start) });
        }
      }
    });
  } finally {
    clearTimeout(timer);
    await consumer.disconnect().catch((err: unknown) => logger.debug({ err }, 'restore consumer disconnect failed'));
  }
  return { records, ms: Date.now() - t0 };
}
