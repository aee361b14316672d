/**
 * KafkaReplica: fills a MarketCache from the service's Kafka topics, for API replicas (ROLE=api) that serve REST
 * without connecting to any exchange (docs/architecture.md "Scaling past one machine").
 *
 * - Reads `surface-snapshots`, `forward-curves` and `funding-updates` from the beginning with a consumer group of
 *   its own (every replica sees every partition); the compacted topics give the latest document per key, the
 *   funding topic the whole retained history; then follows the topics live.
 * - Rebuilds immutable snapshots with the calibrator's own constructors (src/kafka/rebuild.ts), so the same REST
 *   query gives the same numbers on the calibrator and on the replica.
 * - A document older (observationTimestamp) than the one held for its key is ignored (a consumer restart re-reads
 *   the topic; the cache never goes back in time). Funding points are deduplicated by (source, instrumentId,
 *   timestamp) by the FundingStore.
 * - Catch-up: at start it fetches the end offsets of every partition of its topics (kafkajs admin) and holds the
 *   cache (`MarketCache.setHold`: /ready and every data route answer 503 "catching up with Kafka ...") until it has
 *   read each partition up to those offsets. So a replica never answers from a half-read compacted topic (where
 *   the small forward curves arrive long before the big surface documents), and /ready means "holds the newest
 *   document of every key the topics held when it started".
 * - Freshness: judged per document kind (`MarketCache.judgeByDocumentTime`): a surface by its own (source, pair,
 *   model) observationTimestamp, a forward curve by its own; stale past STALE_AFTER_S on the replica's wall clock
 *   (docs/events.md). A dead calibrator's pairs therefore turn 503 stale STALE_AFTER_S after its last document.
 * - Metrics (its own prom-client registry, src/kafka/metrics.ts): consumer lag per topic/partition, catch-up time,
 *   documents applied/ignored.
 * - Every (source, pair) seen is added to the cache's expected pairs (readiness and "not connected" use them).
 * - The broker may be absent at start: a background loop retries; REST answers 503 "warming up" meanwhile.
 */
import { Kafka, type Consumer, type EachBatchPayload } from 'kafkajs';
import type { MarketCache } from '../cache/marketCache.js';
import type { Pair, Source } from '../domain/markets.js';
import {
  ForwardCurveMessageSchema,
  FundingUpdateMessageSchema,
  SurfaceSnapshotMessageSchema,
  messageToFunding,
} from './schemas.js';
import {
  backoffMs,
  ensureTopics,
  kafkaClientConfig,
  silentLogger,
  sleep,
  topicNames,
  uniqueGroupId,
  type KafkaLogger,
  type TopicSettings,
} from './topics.js';
import { forwardCurveFromMessage, surfaceFromMessage } from './rebuild.js';
import { ReplicaMetrics } from './metrics.js';

export interface KafkaReplicaOptions extends TopicSettings {
  readonly brokers: readonly string[];
  readonly clientId?: string;
  readonly cache: MarketCache;
  readonly logger?: KafkaLogger;
}

/** Replica counters. */
export interface ReplicaStats {
  readonly connected: boolean;
  readonly caughtUp: boolean;
  readonly received: { surfaces: number; forwardCurves: number; funding: number };
  /** Documents that failed to parse, validate or rebuild (ignored). */
  readonly invalid: number;
  /** Documents older than the one held for their key (ignored). */
  readonly older: number;
  /** Surface/curve documents skipped because a later document of the same key was in the same fetched batch. */
  readonly superseded: number;
  /** Wall-clock Unix ms of the last document applied. */
  readonly lastAppliedAtMs: number | null;
  /** Wall-clock Unix ms of start(). */
  readonly startedAtMs: number | null;
  /** Milliseconds from start() until every partition was read to the end offsets seen at start; null before. */
  readonly catchUpMs: number | null;
  /** Per topic (logical name, without prefix) and partition: messages behind the partition's high watermark. */
  readonly lag: ReadonlyArray<{ readonly topic: string; readonly partition: number; readonly lag: number }>;
  /** Partitions not yet read to their end offset of the start (0 once caught up). */
  readonly partitionsBehind: number;
}

export class KafkaReplica {
  private readonly kafka: Kafka;
  private readonly topics: ReturnType<typeof topicNames>;
  private readonly logger: KafkaLogger;
  private consumer: Consumer | null = null;
  private stopped = false;
  private readonly abort = new AbortController();
  private loopDone: Promise<void> | null = null;
  private restartRequested = false;
  private ends = new Map<string, number>();
  private lagging = new Set<string>();
  /** `${topic}/${partition}` -> { next offset to read, high watermark } (lag = high - next). */
  private readonly positions = new Map<string, { next: number; high: number }>();
  private isCaughtUp = false;
  private startedAtMs: number | null = null;
  private catchUpMs: number | null = null;
  /** Prometheus series of this replica (its own registry; exposed on the replica's /metrics). */
  readonly metrics: ReplicaMetrics;
  private readonly s = {
    received: { surfaces: 0, forwardCurves: 0, funding: 0 },
    invalid: 0,
    older: 0,
    superseded: 0,
    lastAppliedAtMs: null as number | null,
  };
  /** Resolves once the replica has applied everything the topics held when it first connected (never rejects). */
  readonly caughtUp: Promise<void>;
  private resolveCaughtUp!: () => void;

  constructor(private readonly opts: KafkaReplicaOptions) {
    if (opts.brokers.length === 0) throw new Error('KafkaReplica needs at least one broker (KAFKA_BROKERS)');
    this.logger = opts.logger ?? silentLogger;
    this.kafka = new Kafka(kafkaClientConfig(opts.brokers, opts.clientId ?? 'vol-surface-service', this.logger));
    this.topics = topicNames(opts.prefix);
    this.caughtUp = new Promise((r) => (this.resolveCaughtUp = r));
    this.metrics = new ReplicaMetrics(() => this.stats());
  }

  /**
   * Start consuming in the background (returns at once; the broker may be absent). From now until caught up the
   * cache is held (every answer 503 "catching up"), and its staleness is judged per document kind.
   */
  start(): this {
    if (this.loopDone) throw new Error('KafkaReplica.start called twice');
    this.startedAtMs = Date.now();
    this.opts.cache.judgeByDocumentTime(true);
    this.opts.cache.setHold(() => (this.isCaughtUp ? null : { status: 'catching-up', message: this.catchUpMessage() }));
    this.loopDone = this.loop().catch((err: unknown) => this.logger.error({ err }, 'kafka replica loop crashed (bug)'));
    return this;
  }

  stats(): ReplicaStats {
    return {
      connected: this.consumer !== null,
      caughtUp: this.isCaughtUp,
      received: { ...this.s.received },
      invalid: this.s.invalid,
      older: this.s.older,
      superseded: this.s.superseded,
      lastAppliedAtMs: this.s.lastAppliedAtMs,
      startedAtMs: this.startedAtMs,
      catchUpMs: this.catchUpMs,
      lag: [...this.positions].map(([key, p]) => {
        const { topic, partition } = this.splitKey(key);
        return { topic: this.logicalTopic(topic), partition, lag: Math.max(0, p.high - p.next) };
      }),
      partitionsBehind: this.isCaughtUp ? 0 : this.lagging.size,
    };
  }

  /** What /ready and the 503s say while catching up. */
  private catchUpMessage(): string {
    const since = this.startedAtMs === null ? 0 : (Date.now() - this.startedAtMs) / 1000;
    if (this.ends.size === 0 && !this.consumer) {
      return `catching up with Kafka: not connected to the broker yet (${since.toFixed(1)} s since start)`;
    }
    const behind = [...this.lagging].slice(0, 6).map((key) => {
      const { topic, partition } = this.splitKey(key);
      const p = this.positions.get(key);
      return `${this.logicalTopic(topic)}/${partition} at offset ${p?.next ?? 0} of ${this.ends.get(key) ?? 0}`;
    });
    return (
      `catching up with Kafka: ${this.lagging.size} of ${this.ends.size} partitions not yet read to the end offsets seen at start ` +
      `(${behind.join(', ')}${this.lagging.size > behind.length ? ', ...' : ''}); ${since.toFixed(1)} s since start`
    );
  }

  private splitKey(key: string): { topic: string; partition: number } {
    const sep = key.lastIndexOf('/');
    return { topic: key.slice(0, sep), partition: Number(key.slice(sep + 1)) };
  }

  /** Topic name without the prefix. */
  private logicalTopic(topic: string): string {
    const prefix = this.opts.prefix ?? '';
    return prefix && topic.startsWith(prefix) ? topic.slice(prefix.length) : topic;
  }

  /** Stop consuming (bounded: at most ~5 s). */
  async close(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    const c = this.consumer;
    this.consumer = null;
    if (c) await Promise.race([c.disconnect().catch(() => {}), sleep(5000)]);
    if (this.loopDone) await Promise.race([this.loopDone, sleep(1000)]);
  }

  private async loop(): Promise<void> {
    let attempt = 0;
    while (!this.stopped) {
      if (!this.consumer || this.restartRequested) {
        this.restartRequested = false;
        const old = this.consumer;
        this.consumer = null;
        if (old) await Promise.race([old.disconnect().catch(() => {}), sleep(5000)]);
        try {
          await this.connect();
          attempt = 0;
        } catch (err) {
          this.logger.warn({ err: (err as Error)?.message ?? String(err) }, 'kafka replica cannot consume yet; retrying');
          await sleep(backoffMs(attempt++), this.abort.signal);
          continue;
        }
      }
      await sleep(1000, this.abort.signal);
    }
  }

  private async connect(): Promise<void> {
    const admin = this.kafka.admin();
    await admin.connect();
    const topics = [this.topics.surfaces, this.topics.forwardCurves, this.topics.funding];
    try {
      await ensureTopics(admin, this.opts, this.logger);
      const ends = new Map<string, number>();
      const lagging = new Set<string>();
      for (const t of topics) {
        for (const o of await admin.fetchTopicOffsets(t)) {
          const key = `${t}/${o.partition}`;
          ends.set(key, Number(o.high));
          if (Number(o.low) < Number(o.high)) lagging.add(key);
          if (!this.positions.has(key)) this.positions.set(key, { next: Number(o.low), high: Number(o.high) });
        }
      }
      if (!this.isCaughtUp) {
        this.ends = ends;
        this.lagging = lagging;
      }
    } finally {
      await admin.disconnect().catch(() => {});
    }
    const consumer = this.kafka.consumer({
      groupId: uniqueGroupId(this.opts.clientId ?? 'vol-surface-service', 'replica'),
      maxWaitTimeInMs: 100,
      // big fetches: a replica that is behind gets many versions of a key per batch and applies only the last
      // (kafkajs defaults: 1 MiB per partition, 10 MiB per fetch)
      maxBytesPerPartition: 16 * 1024 * 1024,
      maxBytes: 64 * 1024 * 1024,
      allowAutoTopicCreation: false,
      retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 2000 },
    });
    consumer.on(consumer.events.CRASH, (e) => {
      const restart = (e.payload as { restart?: boolean }).restart;
      this.logger.warn({ err: (e.payload.error as Error)?.message, restart }, 'kafka replica consumer crashed');
      if (!restart) this.restartRequested = true;
    });
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    await consumer.run({ eachBatch: (p) => this.onBatch(p) });
    this.consumer = consumer;
    this.logger.info({ topics }, 'kafka replica consuming');
    this.checkCaughtUp();
  }

  /**
   * Apply one fetched batch of a partition. On the compacted topics only the last document of each key in the batch
   * is parsed and applied (the earlier ones are superseded: one key is one partition, in publication order), so a
   * replica that fell behind - or reads a long topic at start - does the work of one document per key per batch
   * instead of one per recalibration. Funding points are all applied (a history, not a latest value). Yields to the
   * event loop between documents (REST keeps answering during a long batch).
   */
  private async onBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const msgs = batch.messages;
    const lastOfKey = new Map<string, number>();
    if (batch.topic !== this.topics.funding) {
      msgs.forEach((m, i) => {
        if (m.key) lastOfKey.set(m.key.toString('utf8'), i);
      });
    }
    let sliceStart = Date.now();
    for (let i = 0; i < msgs.length; i++) {
      if (!isRunning() || isStale()) return;
      const m = msgs[i]!;
      const k = lastOfKey.size > 0 && m.key ? m.key.toString('utf8') : null;
      if (k !== null && lastOfKey.get(k) !== i) this.s.superseded++;
      else this.apply(batch.topic, m.value);
      resolveOffset(m.offset);
      if (Date.now() - sliceStart > 20) {
        await new Promise((r) => setImmediate(r));
        sliceStart = Date.now();
      }
    }
    const key = `${batch.topic}/${batch.partition}`;
    const next = Number(batch.lastOffset()) + 1;
    const pos = this.positions.get(key);
    const high = Number(batch.highWatermark);
    if (!pos || next > pos.next || high > pos.high) this.positions.set(key, { next: Math.max(next, pos?.next ?? 0), high: Math.max(high, pos?.high ?? 0) });
    if (this.lagging.has(key) && next >= (this.ends.get(key) ?? 0)) {
      this.lagging.delete(key);
      this.checkCaughtUp();
    }
    await heartbeat();
  }

  private checkCaughtUp(): void {
    if (!this.isCaughtUp && this.lagging.size === 0) {
      this.isCaughtUp = true;
      this.catchUpMs = this.startedAtMs === null ? 0 : Date.now() - this.startedAtMs;
      this.logger.info({ received: this.s.received, catchUpMs: this.catchUpMs }, 'kafka replica caught up: serving');
      this.resolveCaughtUp();
    }
  }

  /** Parse, validate, rebuild and apply one document; anything wrong is counted and logged, never thrown. */
  private apply(topic: string, value: Buffer | null): void {
    if (!value) return;
    const cache = this.opts.cache;
    try {
      const json: unknown = JSON.parse(value.toString('utf8'));
      if (topic === this.topics.surfaces) {
        const r = SurfaceSnapshotMessageSchema.safeParse(json);
        if (!r.success) return this.invalid(topic, r.error.issues);
        const m = r.data;
        const pair: Pair = { base: m.baseCurrency, quote: m.quoteCurrency };
        const held = cache.getSurface(m.source, pair, m.volatilityModel);
        if (held && held.observationTimestamp > m.observationTimestamp) {
          this.s.older++;
          return;
        }
        cache.putSurface(surfaceFromMessage(m));
        this.seen(m.source, pair, m.observationTimestamp);
        this.s.received.surfaces++;
      } else if (topic === this.topics.forwardCurves) {
        const r = ForwardCurveMessageSchema.safeParse(json);
        if (!r.success) return this.invalid(topic, r.error.issues);
        const m = r.data;
        const pair: Pair = { base: m.baseCurrency, quote: m.quoteCurrency };
        const held = cache.getForwardCurve(m.source, pair);
        if (held && held.observationTimestamp > m.observationTimestamp) {
          this.s.older++;
          return;
        }
        cache.putForwardCurve(forwardCurveFromMessage(m));
        this.seen(m.source, pair, m.observationTimestamp);
        this.s.received.forwardCurves++;
      } else if (topic === this.topics.funding) {
        const r = FundingUpdateMessageSchema.safeParse(json);
        if (!r.success) return this.invalid(topic, r.error.issues);
        cache.addFunding(messageToFunding(r.data));
        this.s.received.funding++;
      } else {
        return;
      }
      this.s.lastAppliedAtMs = Date.now();
    } catch (err) {
      this.invalid(topic, [String((err as Error)?.message ?? err)]);
    }
  }

  private invalid(topic: string, issues: readonly unknown[]): void {
    this.s.invalid++;
    this.logger.error({ topic, issues: issues.slice(0, 5) }, 'kafka replica ignored an invalid document');
  }

  /** Freshness and expected pairs of a document's (source, pair). */
  private seen(source: Source, pair: Pair, observationTimestamp: number): void {
    const cache = this.opts.cache;
    cache.touch(source, pair, observationTimestamp);
    if (!cache.expected().some((p) => p.source === source && p.pair.base === pair.base && p.pair.quote === pair.quote)) {
      cache.setExpectedPairs([...cache.expected(), { source, pair }]);
    }
  }
}
