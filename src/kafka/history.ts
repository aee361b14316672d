/**
 * Restore the 24 h surface-snapshot history from Kafka at start-up (for the iVSummary 24 h changes, issue 4).
 *
 * `surface-snapshots` is compacted (only the latest document per key survives), so the history lives in its own
 * topic `surface-history`: time retention 25 h, the first document of each key per aligned `historyIntervalS` bucket
 * (60 s by default) of observation time, written by the KafkaPublisher, record timestamp = observationTimestamp. This reads
 * it from the first record at or after `sinceS` to the end and hands each rebuilt snapshot to the caller in order
 * per key (docs/events.md "History").
 */
import { Kafka } from 'kafkajs';
import type { SurfaceSnapshot } from '../cache/snapshot.js';
import type { FundingRate } from '../domain/events.js';
import { FundingUpdateMessageSchema, SurfaceSnapshotMessageSchema, messageToFunding } from './schemas.js';
import { kafkaClientConfig, silentLogger, topicNames, type KafkaLogger } from './topics.js';
import { readTopicsToEnd } from './reader.js';
import { surfaceFromMessage } from './rebuild.js';

/** Where to read from. */
export interface KafkaSourceOptions {
  readonly brokers: readonly string[];
  readonly clientId?: string;
  /** KAFKA_TOPIC_PREFIX. */
  readonly prefix?: string;
  readonly logger?: KafkaLogger;
  /** Time limit of the whole read, ms (default 60 000). */
  readonly timeoutMs?: number;
}

/** What a restore did. */
export interface RestoreResult {
  /** Items handed to the callback. */
  readonly restored: number;
  /** Records that failed to parse, validate or rebuild (skipped). */
  readonly invalid: number;
  readonly ms: number;
}

/**
 * Replay `surface-history` from `sinceS` (Unix seconds, compared with the records' observation time) to its end,
 * calling `onSnapshot` with each rebuilt, immutable SurfaceSnapshot (without quotes), oldest first within a key.
 * @throws Error when the broker cannot be reached or the read times out
 */
export async function restoreSurfaceHistory(
  source: KafkaSourceOptions,
  sinceS: number,
  onSnapshot: (s: SurfaceSnapshot) => void,
): Promise<RestoreResult> {
  const logger = source.logger ?? silentLogger;
  const kafka = new Kafka(kafkaClientConfig(source.brokers, source.clientId ?? 'vol-surface-service', logger));
  let restored = 0;
  let invalid = 0;
  const r = await readTopicsToEnd(
    kafka,
    { topics: [topicNames(source.prefix).surfaceHistory], fromTimestampMs: sinceS * 1000, clientId: source.clientId, timeoutMs: source.timeoutMs, logger },
    ({ message }) => {
      try {
        const parsed = SurfaceSnapshotMessageSchema.safeParse(JSON.parse(message.value?.toString('utf8') ?? 'null'));
        if (!parsed.success || parsed.data.observationTimestamp < sinceS) {
          if (!parsed.success) invalid++;
          return;
        }
        onSnapshot(surfaceFromMessage(parsed.data));
        restored++;
      } catch {
        invalid++;
      }
    },
  );
  logger.info({ restored, invalid, ms: r.ms, sinceS }, 'surface history restored from kafka');
  return { restored, invalid, ms: r.ms };
}

/**
 * Replay `funding-updates` from the beginning, calling `onPoint` with every point (the KafkaPublisher does this
 * itself through `onRestoredFunding`; this is for tools and tests).
 * @throws Error when the broker cannot be reached or the read times out
 */
export async function restoreFundingHistory(source: KafkaSourceOptions, onPoint: (p: FundingRate) => void): Promise<RestoreResult> {
  const logger = source.logger ?? silentLogger;
  const kafka = new Kafka(kafkaClientConfig(source.brokers, source.clientId ?? 'vol-surface-service', logger));
  let restored = 0;
  let invalid = 0;
  const r = await readTopicsToEnd(
    kafka,
    { topics: [topicNames(source.prefix).funding], clientId: source.clientId, timeoutMs: source.timeoutMs, logger },
    ({ message }) => {
      try {
        const parsed = FundingUpdateMessageSchema.safeParse(JSON.parse(message.value?.toString('utf8') ?? 'null'));
        if (!parsed.success) {
          invalid++;
          return;
        }
        onPoint(messageToFunding(parsed.data));
        restored++;
      } catch {
        invalid++;
      }
    },
  );
  return { restored, invalid, ms: r.ms };
}
