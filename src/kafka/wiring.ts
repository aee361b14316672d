/**
 * What the service starts for Kafka, per ROLE (docs/events.md "API replicas"):
 * - `all` / `calibrator` with KAFKA_BROKERS: a KafkaPublisher subscribed to `cache.updates$`, restoring the funding
 *   history into the cache's FundingStore on its first connection (without re-emitting those points);
 * - `api`: a KafkaReplica filling the cache from the topics (KAFKA_BROKERS required);
 * - no KAFKA_BROKERS (all/calibrator): nothing.
 * Called by src/service.ts; the service starts this BEFORE its feeds,
 * so that the publisher sees every cache write.
 */
import type { MarketCache } from '../cache/marketCache.js';
import { KafkaPublisher } from './publisher.js';
import { KafkaReplica } from './replica.js';
import { parseBrokers, type KafkaRoleConfig } from './config.js';
import type { KafkaLogger } from './topics.js';
import { restoreSurfaceHistory } from './history.js';
import type { ChildLogger } from '../domain/logger.js';

/**
 * Restore the last 25 h of the `surface-history` topic into the cache's 24 h history (src/cache/history.ts), in the
 * background, so that GET iVSummary has its 24 h changes right after a restart (issue 4). A failure only leaves them
 * null until the service has 24 h of its own history.
 */
function restoreIvHistory(source: Parameters<typeof restoreSurfaceHistory>[0], cache: MarketCache, logger: KafkaLogger): void {
  const history = cache.history;
  restoreSurfaceHistory(source, cache.clock.now() - 25 * 3600, (s) => history.record(s)).catch((err: unknown) => {
    logger.warn({ err: (err as Error).message }, 'surface history restore from kafka failed; iVSummary 24 h changes stay null until the service has 24 h of history');
  });
}

/** Kafka parts of a running service. */
export interface KafkaWiring {
  readonly role: KafkaRoleConfig['ROLE'];
  readonly publisher: KafkaPublisher | null;
  readonly replica: KafkaReplica | null;
  /** Flush and stop (publisher: bounded flush of `timeoutMs`; replica: disconnect). */
  close(timeoutMs?: number): Promise<void>;
}

export type { ChildLogger };

/**
 * Start the Kafka side of the service for `config.ROLE`. Returns at once: connection and topic creation happen in
 * the background (the broker may be absent).
 * @throws Error when ROLE=api and KAFKA_BROKERS is unset (loadConfig rejects that earlier)
 */
export function startKafkaRole(config: KafkaRoleConfig, cache: MarketCache, logger: ChildLogger): KafkaWiring {
  const brokers = parseBrokers(config.KAFKA_BROKERS);
  const common = {
    clientId: config.KAFKA_CLIENT_ID,
    prefix: config.KAFKA_TOPIC_PREFIX,
    partitions: config.KAFKA_PARTITIONS,
    replicationFactor: config.KAFKA_REPLICATION_FACTOR,
  };
  if (config.ROLE === 'api') {
    if (!brokers) throw new Error('ROLE=api needs KAFKA_BROKERS');
    const replica = new KafkaReplica({ ...common, brokers, cache, logger: logger.child({ component: 'kafka-replica' }) }).start();
    restoreIvHistory({ brokers, clientId: common.clientId, prefix: common.prefix, logger: logger.child({ component: 'kafka-history' }) }, cache, logger);
    logger.info({ brokers, prefix: common.prefix }, 'ROLE=api: serving REST from Kafka (no exchange connection)');
    return { role: config.ROLE, publisher: null, replica, close: () => replica.close() };
  }
  if (!brokers) return { role: config.ROLE, publisher: null, replica: null, close: async () => {} };
  const publisher = new KafkaPublisher({
    ...common,
    brokers,
    fundingQueueAlarm: config.KAFKA_FUNDING_QUEUE_ALARM,
    logger: logger.child({ component: 'kafka-publisher' }),
    onRestoredFunding: (p) => {
      cache.funding.add(p);
    },
  }).start(cache.updates$);
  logger.info({ brokers, prefix: common.prefix, role: config.ROLE }, 'publishing to Kafka');
  if (config.ROLE === 'all') restoreIvHistory({ brokers, clientId: common.clientId, prefix: common.prefix, logger: logger.child({ component: 'kafka-history' }) }, cache, logger);
  return {
    role: config.ROLE,
    publisher,
    replica: null,
    close: async (timeoutMs = 5000) => {
      await publisher.close(timeoutMs);
    },
  };
}

