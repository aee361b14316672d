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
import { Kafka } from 'kafkajs';
import { filter } from 'rxjs';
import { KafkaPublisher } from './publisher.js';
import { PairOwnership } from './ownership.js';
import type { SourcePair } from '../domain/markets.js';
import { KafkaReplica } from './replica.js';
import { parseBrokers, type KafkaRoleConfig } from './config.js';
import { kafkaClientConfig, type KafkaLogger } from './topics.js';
import { restoreSurfaceHistory } from './history.js';
import type { ChildLogger } from '../domain/logger.js';
import type { SurfaceSnapshot } from '../cache/snapshot.js';

/**
 * Restore the `surface-history` topic (its whole retention, KAFKA_HISTORY_RETENTION_H) in the background: the last
 * 25 h into the cache's 24 h history (src/cache/history.ts), so that GET iVSummary has its 24 h changes right after
 * a restart (issue 4), and every document to `onPastSurface` (the history store records what it is missing,
 * src/history/runtime.ts). Resolves when done; a failure is logged (the changes stay null until the service has
 * 24 h of its own history) and resolves too.
 */
function restoreIvHistory(
  source: Parameters<typeof restoreSurfaceHistory>[0],
  cache: MarketCache,
  logger: KafkaLogger,
  retentionH: number,
  onPastSurface?: (s: SurfaceSnapshot) => void,
): Promise<void> {
  const history = cache.history;
  const now = cache.clock.now();
  const since = onPastSurface ? now - Math.max(25, retentionH) * 3600 : now - 25 * 3600;
  return restoreSurfaceHistory(source, since, (s) => {
    if (s.observationTimestamp >= now - 25 * 3600) history.record(s);
    onPastSurface?.(s);
  }).then(
    () => undefined,
    (err: unknown) => {
      logger.warn({ err: (err as Error).message }, 'surface history restore from kafka failed; iVSummary 24 h changes stay null until the service has 24 h of history');
    },
  );
}

/** Options of {@link startKafkaRole} beyond the configuration. */
export interface KafkaRoleOptions {
  /** Each surface of the `surface-history` topic read at start (the history store records the ones it misses). */
  readonly onPastSurface?: (s: SurfaceSnapshot) => void;
}

/** Kafka parts of a running service. */
export interface KafkaWiring {
  readonly role: KafkaRoleConfig['ROLE'];
  readonly publisher: KafkaPublisher | null;
  readonly replica: KafkaReplica | null;
  /** Pair ownership of a sharded calibrator (PAIRS with KAFKA_BROKERS, ROLE all/calibrator); null otherwise. */
  readonly ownership: PairOwnership | null;
  /** Flush and stop (publisher: bounded flush of `timeoutMs`; replica: disconnect). */
  close(timeoutMs?: number): Promise<void>;
  /** Resolves when the start-up read of `surface-history` is done (at once without one). */
  readonly historyRestored: Promise<void>;
}

export type { ChildLogger };

/**
 * Start the Kafka side of the service for `config.ROLE`. Returns at once: connection and topic creation happen in
 * the background (the broker may be absent).
 * @throws Error when ROLE=api and KAFKA_BROKERS is unset (loadConfig rejects that earlier)
 */
export function startKafkaRole(
  config: KafkaRoleConfig & { readonly PAIRS?: readonly SourcePair[] | undefined },
  cache: MarketCache,
  logger: ChildLogger,
  options: KafkaRoleOptions = {},
): KafkaWiring {
  const brokers = parseBrokers(config.KAFKA_BROKERS);
  const common = {
    clientId: config.KAFKA_CLIENT_ID,
    prefix: config.KAFKA_TOPIC_PREFIX,
    partitions: config.KAFKA_PARTITIONS,
    replicationFactor: config.KAFKA_REPLICATION_FACTOR,
    historyRetentionMs: config.KAFKA_HISTORY_RETENTION_H * 3_600_000,
  };
  if (config.ROLE === 'api') {
    if (!brokers) throw new Error('ROLE=api needs KAFKA_BROKERS');
    const replica = new KafkaReplica({ ...common, brokers, cache, logger: logger.child({ component: 'kafka-replica' }) }).start();
    const historyRestored = restoreIvHistory(
      { brokers, clientId: common.clientId, prefix: common.prefix, logger: logger.child({ component: 'kafka-history' }) },
      cache,
      logger,
      config.KAFKA_HISTORY_RETENTION_H,
      options.onPastSurface,
    );
    logger.info({ brokers, prefix: common.prefix }, 'ROLE=api: serving REST from Kafka (no exchange connection)');
    return { role: config.ROLE, publisher: null, replica, ownership: null, close: () => replica.close(), historyRestored };
  }
  if (!brokers) return { role: config.ROLE, publisher: null, replica: null, ownership: null, close: async () => {}, historyRestored: Promise.resolve() };
  let publisherRef: KafkaPublisher | null = null;
  const ownership = config.PAIRS ? startOwnership(config.PAIRS, brokers, common, cache, logger, () => publisherRef) : null;
  const publisher: KafkaPublisher = new KafkaPublisher({
    ...common,
    brokers,
    fundingQueueAlarm: config.KAFKA_FUNDING_QUEUE_ALARM,
    logger: logger.child({ component: 'kafka-publisher' }),
    onRestoredFunding: (p) => {
      cache.funding.add(p);
    },
  }).start(
    ownership
      ? cache.updates$.pipe(
          filter((u) =>
            u.type === 'funding' ? ownership.owns(u.point.source, { base: u.point.base, quote: u.point.quote }) : ownership.owns(u.snapshot.source, u.snapshot.pair),
          ),
        )
      : cache.updates$,
  );
  publisherRef = publisher;
  logger.info({ brokers, prefix: common.prefix, role: config.ROLE, sharded: ownership !== null }, 'publishing to Kafka');
  const historyRestored =
    config.ROLE === 'all'
      ? restoreIvHistory(
          { brokers, clientId: common.clientId, prefix: common.prefix, logger: logger.child({ component: 'kafka-history' }) },
          cache,
          logger,
          config.KAFKA_HISTORY_RETENTION_H,
          options.onPastSurface,
        )
      : Promise.resolve();
  return {
    role: config.ROLE,
    publisher,
    replica: null,
    ownership,
    historyRestored,
    close: async (timeoutMs = 5000) => {
      // flush what this calibrator owns, then leave the group (a standby takes the pairs over only then)
      await publisher.close(timeoutMs);
      await ownership?.close();
    },
  };
}

/**
 * Join the calibrator ownership group for `pairs` (src/kafka/ownership.ts): the cache is held ("assigning-pairs")
 * until the first assignment, then /ready waits for the owned pairs only; a calibrator owning none of its PAIRS is
 * a standby (held, "standby"). A pair gained after the first assignment gets its recent funding points re-published
 * (taken over: the previous owner may have died before publishing them; regained after a rebalance: points that
 * arrived meanwhile were filtered out); consumers dedupe by key and timestamp.
 */
function startOwnership(
  pairs: readonly SourcePair[],
  brokers: string[],
  common: { clientId: string; prefix: string; replicationFactor: number },
  cache: MarketCache,
  logger: ChildLogger,
  publisher: () => KafkaPublisher | null,
): PairOwnership {
  const log = logger.child({ component: 'kafka-ownership' });
  let before = new Set<string>();
  let lostAtS: number | null = null;
  const ownership: PairOwnership = new PairOwnership({
    kafka: new Kafka(kafkaClientConfig(brokers, `${common.clientId}-ownership`, log)),
    pairs,
    prefix: common.prefix,
    replicationFactor: common.replicationFactor,
    logger: log,
    onChange: (owned) => {
      const label = (p: SourcePair): string => `${p.source}:${p.pair.base}/${p.pair.quote}`;
      const now = new Set(owned.map(label));
      if (owned.length > 0) cache.setExpectedPairs(owned);
      const pub = publisher();
      // surfaces/curves waiting for a pair lost are not sent (its new owner publishes it)
      const dropped = pub?.discardPending((source, pair) => ownership.owns(source, pair)) ?? 0;
      if (dropped > 0) log.info({ dropped }, 'dropped documents waiting for pairs no longer owned');
      if ([...before].some((k) => !now.has(k)) && lostAtS === null) lostAtS = cache.clock.now();
      // Funding points that arrived while a pair was not owned were not enqueued: on (re)gaining a pair after the
      // first assignment, re-publish its recent points (a pair held before the revocation: since an hour before it;
      // a pair taken over from another calibrator: the last 24 h). Consumers dedupe by key and timestamp.
      if (ownership.stats().generations > 1 && pub) {
        for (const p of owned) {
          const sinceS = before.has(label(p)) ? (lostAtS ?? cache.clock.now()) - 3600 : cache.clock.now() - 86_400;
          republishFunding(cache, p, pub, sinceS);
        }
      }
      if (owned.length > 0) {
        before = now;
        lostAtS = null;
      }
    },
  }).start();
  cache.setHold(() => {
    const st = ownership.stats();
    if (!st.assigned) {
      return { status: 'assigning-pairs', message: `waiting for the calibrator ownership group to assign PAIRS (${pairs.map((p) => `${p.source}:${p.pair.base}/${p.pair.quote}`).join(', ')})${st.lastError ? `: ${st.lastError}` : ''}` };
    }
    if (st.owned.length === 0) return { status: 'standby', message: `standby: every pair of PAIRS is owned by another calibrator (${st.standby.join(', ')})` };
    return null;
  });
  return ownership;
}

/** Enqueue the funding points of `p`'s perpetuals settled since `sinceS` (a pair just gained). */
function republishFunding(cache: MarketCache, p: SourcePair, publisher: KafkaPublisher, sinceS: number): void {
  const nowS = cache.clock.now();
  for (const inst of cache.funding.instruments(p.source)) {
    if (inst.pair.base !== p.pair.base || inst.pair.quote !== p.pair.quote) continue;
    for (const pt of cache.funding.range(p.source, inst.instrumentId, sinceS, nowS + 3600, 10_000).reverse()) {
      publisher.enqueue({
        type: 'funding',
        point: { kind: 'funding', source: p.source, instrumentId: inst.instrumentId, base: p.pair.base, quote: p.pair.quote, interest: pt.interest, intervalHours: inst.intervalHours, timestamp: pt.timestamp },
      });
    }
  }
}
