/**
 * The service's Kafka topics: names (with KAFKA_TOPIC_PREFIX), settings, and idempotent creation.
 *
 * Settings (docs/events.md "Topics"; Kafka topic configs: https://kafka.apache.org/39/documentation/#topicconfigs):
 * - `surface-snapshots`, `forward-curves`: `cleanup.policy=compact` (the latest value per key is kept forever),
 *   `segment.ms` 1 h so the log cleaner can compact (it never compacts the active segment);
 * - `funding-updates`: `cleanup.policy=delete`, `retention.ms` 365 days by default (by record timestamp = the
 *   point's settlement time);
 * - `surface-history`: `cleanup.policy=delete`, `retention.ms` 25 h (the 24 h snapshot history plus a margin).
 * Partitions: `partitions` (default 3) for every topic; replication factor `replicationFactor` (default 1: the
 * project's single-node broker; kafkajs 2.2.4 speaks CreateTopics v3, which cannot ask for the broker default).
 */
import { randomUUID } from 'node:crypto';
import kafkajs, { logLevel, type Admin, type Kafka, type KafkaConfig, type LogEntry } from 'kafkajs';

// kafkajs is CommonJS: Node's ESM loader exposes only some of its exports by name (not ConfigResourceTypes).
const { ConfigResourceTypes } = kafkajs;
import { TOPICS, type TopicName } from './schemas.js';
import { silentLogger, type Logger } from '../domain/logger.js';

/** The Kafka side's logger: the code base's one {@link Logger}. */
export type KafkaLogger = Logger;
export { silentLogger };

/** Topic settings shared by the publisher and the replica (both create missing topics the same way). */
export interface TopicSettings {
  /** Prepended to every topic name, e.g. `test-1f2e.` (KAFKA_TOPIC_PREFIX; default empty). */
  readonly prefix?: string;
  /** Partitions of every topic (default 3). */
  readonly partitions?: number;
  /** Replication factor (default 1). */
  readonly replicationFactor?: number;
  /** funding-updates retention, ms (default 365 days). */
  readonly fundingRetentionMs?: number;
  /** surface-history retention, ms (default 25 h). */
  readonly historyRetentionMs?: number;
}

export const DEFAULT_PARTITIONS = 3;
export const DEFAULT_FUNDING_RETENTION_MS = 365 * 86_400_000;
export const DEFAULT_HISTORY_RETENTION_MS = 25 * 3_600_000;
const HOUR_MS = 3_600_000;
/** Largest surface document accepted by the broker (quotes included): 8 MiB. */
const MAX_SURFACE_MESSAGE_BYTES = 8 * 1024 * 1024;

/** The full topic names for a prefix. */
export function topicNames(prefix = ''): Record<keyof typeof TOPICS, string> {
  return {
    surfaces: `${prefix}${TOPICS.surfaces}`,
    forwardCurves: `${prefix}${TOPICS.forwardCurves}`,
    funding: `${prefix}${TOPICS.funding}`,
    surfaceHistory: `${prefix}${TOPICS.surfaceHistory}`,
  };
}

/** Broker-side config entries of each logical topic (see the module docstring). */
export function topicConfigEntries(topic: TopicName, s: TopicSettings = {}): Array<{ name: string; value: string }> {
  switch (topic) {
    case 'surface-snapshots':
      return [
        { name: 'cleanup.policy', value: 'compact' },
        { name: 'segment.ms', value: String(HOUR_MS) },
        { name: 'max.message.bytes', value: String(MAX_SURFACE_MESSAGE_BYTES) },
      ];
    case 'forward-curves':
      return [
        { name: 'cleanup.policy', value: 'compact' },
        { name: 'segment.ms', value: String(HOUR_MS) },
      ];
    case 'funding-updates':
      return [
        { name: 'cleanup.policy', value: 'delete' },
        { name: 'retention.ms', value: String(s.fundingRetentionMs ?? DEFAULT_FUNDING_RETENTION_MS) },
      ];
    case 'surface-history':
      return [
        { name: 'cleanup.policy', value: 'delete' },
        { name: 'retention.ms', value: String(s.historyRetentionMs ?? DEFAULT_HISTORY_RETENTION_MS) },
        { name: 'segment.ms', value: String(HOUR_MS) },
        { name: 'max.message.bytes', value: String(MAX_SURFACE_MESSAGE_BYTES) },
      ];
  }
}

/**
 * Create every missing topic of the service with its settings; existing topics are left as they are (a differing
 * cleanup.policy is logged as a warning, never altered).
 * @returns the names of the topics created now
 * @throws kafkajs errors when the broker cannot be reached or refuses
 */
export async function ensureTopics(admin: Admin, s: TopicSettings, logger: KafkaLogger = silentLogger): Promise<string[]> {
  const prefix = s.prefix ?? '';
  const existing = new Set(await admin.listTopics());
  const wanted = Object.values(TOPICS).map((t) => ({ logical: t, name: `${prefix}${t}` }));
  const missing = wanted.filter((t) => !existing.has(t.name));
  if (missing.length > 0) {
    await admin.createTopics({
      waitForLeaders: true,
      topics: missing.map((t) => ({
        topic: t.name,
        numPartitions: s.partitions ?? DEFAULT_PARTITIONS,
        replicationFactor: s.replicationFactor ?? 1,
        configEntries: topicConfigEntries(t.logical, s),
      })),
    });
    logger.info({ topics: missing.map((t) => t.name) }, 'kafka topics created');
  }
  const present = wanted.filter((t) => existing.has(t.name));
  if (present.length > 0) {
    try {
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: present.map((t) => ({ type: ConfigResourceTypes.TOPIC, name: t.name, configNames: ['cleanup.policy'] })),
      });
      for (const r of described.resources) {
        const logical = present.find((t) => t.name === r.resourceName)!.logical;
        const want = topicConfigEntries(logical, s).find((e) => e.name === 'cleanup.policy')!.value;
        const got = r.configEntries.find((e) => e.configName === 'cleanup.policy')?.configValue;
        if (got !== want) logger.warn({ topic: r.resourceName, cleanupPolicy: got, expected: want }, 'kafka topic exists with another cleanup.policy; left as is');
      }
    } catch (err) {
      logger.debug({ err }, 'could not describe existing kafka topics');
    }
  }
  return missing.map((t) => t.name);
}

/**
 * kafkajs client settings of the service: every kafkajs log line goes to `logger.debug` (the publisher and the
 * replica log the meaningful transitions themselves), short connection timeout and retries so that the outer
 * loops notice an absent broker quickly.
 */
export function kafkaClientConfig(brokers: readonly string[], clientId: string, logger: KafkaLogger): KafkaConfig {
  return {
    clientId,
    brokers: [...brokers],
    connectionTimeout: 3000,
    requestTimeout: 30_000,
    retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 2000 },
    logLevel: logLevel.INFO,
    logCreator:
      () =>
      ({ namespace, level, log }: LogEntry) => {
        const { message, ...extra } = log;
        logger.debug({ component: 'kafkajs', namespace, kafkaLevel: logLevel[level], ...extra }, String(message));
      },
  };
}

/** A consumer group id nobody else uses (each replica/reader reads every partition itself). */
export function uniqueGroupId(clientId: string, purpose: string): string {
  return `${clientId}-${purpose}-${randomUUID()}`;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Backoff for attempt n (0-based): min(maxMs, minMs * 2^n) with +-20 % jitter. */
export function backoffMs(attempt: number, minMs = 250, maxMs = 5000): number {
  const base = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 20));
  return Math.round(base * (0.8 + 0.4 * Math.random()));
}

export type { Kafka };
