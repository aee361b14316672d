/**
 * KafkaPublisher: publishes every cache write (surface snapshot, forward-curve snapshot, new funding point) to
 * Kafka with an idempotent kafkajs producer, fire-and-forget from the cache's point of view.
 *
 * Guarantees and behaviour (docs/events.md "Delivery and faults"):
 * - `enqueue` is synchronous and O(1): the REST side and the streams never wait on Kafka;
 * - surface snapshots and forward curves are CONFLATED per key while they wait (only the latest value of a key is
 *   kept for sending; `stats().conflated` counts the replaced ones); funding points are QUEUED in arrival order and
 *   never dropped; past `fundingQueueAlarm` points the queue keeps growing but the alarm is raised
 *   (`stats().fundingQueueOverAlarm`, an error log line per doubling): nothing is lost is the rule;
 * - every value is validated by its zod schema (src/kafka/schemas.ts) just before sending; an invalid one is
 *   counted (`stats().invalid`), logged, and never sent;
 * - one batch is in flight at a time (`sendBatch`, acks=all, idempotent producer, maxInFlightRequests 1). A batch
 *   that fails is retried AS IS (same records in the same order) with backoff until it is acknowledged: kafkajs
 *   rolls its sequence numbers back on a failed produce, so a retried batch the broker had already written is
 *   recognised as a duplicate by the broker (KIP-98 idempotent producer) and not written twice;
 * - the broker may be absent at start or vanish later: a background loop connects, creates the topics
 *   (src/kafka/topics.ts), optionally restores the funding history (`onRestoredFunding`) and then drains
 *   everything pending; `close()` flushes within a bounded time.
 * - `surface-history`: the first surface document of each key in each aligned bucket of `historyIntervalS` seconds
 *   of observation time, without the quotes, for the 24 h snapshot history (src/kafka/history.ts
 *   restoreSurfaceHistory reads it back).
 *
 * Sources: kafkajs 2.2.4 producer docs (https://kafka.js.org/docs/producing, idempotent producer, sendBatch);
 * Kafka idempotent producer semantics, KIP-98.
 */
import { performance } from 'node:perf_hooks';
import { Kafka, Partitioners, type Message, type Producer } from 'kafkajs';
import type { Observable, Subscription } from 'rxjs';
import type { CacheUpdate } from '../cache/marketCache.js';
import { surfaceKey, type ForwardCurveSnapshot, type SurfaceSnapshot } from '../cache/snapshot.js';
import { pairKey, type Pair, type Source } from '../domain/markets.js';
import type { FundingRate } from '../domain/events.js';
import {
  ForwardCurveMessageSchema,
  FundingUpdateMessageSchema,
  SCHEMA_HEADER,
  SurfaceSnapshotMessageSchema,
  TOPICS,
  forwardCurveToMessage,
  fundingKey,
  fundingToMessage,
  messageToFunding,
  surfaceToMessage,
  type TopicName,
} from './schemas.js';
import {
  backoffMs,
  ensureTopics,
  kafkaClientConfig,
  silentLogger,
  sleep,
  topicNames,
  type KafkaLogger,
  type TopicSettings,
} from './topics.js';
import { readTopicsToEnd } from './reader.js';

export interface KafkaPublisherOptions extends TopicSettings {
  /** Bootstrap brokers, `host:port` (KAFKA_BROKERS). */
  readonly brokers: readonly string[];
  /** kafkajs client id (KAFKA_CLIENT_ID; default `vol-surface-service`). */
  readonly clientId?: string;
  readonly logger?: KafkaLogger;
  /** Carry each expiry's quotes in surface-snapshots (default true; surface-history never does). */
  readonly includeQuotes?: boolean;
  /**
   * surface-history sampling: the first snapshot of each key in each aligned bucket of this many seconds of
   * observation time, floor(observationTimestamp / historyIntervalS) (default 60; 0 = off).
   */
  readonly historyIntervalS?: number;
  /** Funding queue depth that raises the alarm (default 100 000). Nothing is dropped past it. */
  readonly fundingQueueAlarm?: number;
  /** surface-history documents kept while waiting (default 10 000; the oldest go first, counted). */
  readonly historyQueueMax?: number;
  /** Largest number of records in one produce batch (default 1000). */
  readonly maxBatchMessages?: number;
  /**
   * When set, on the first successful connection the publisher reads funding-updates from the beginning, calls this
   * for every point (the service adds them to its FundingStore, without re-emitting them), and drops from its queue
   * the points already on the topic, so a restarted service neither loses its funding history nor publishes a
   * point twice.
   */
  readonly onRestoredFunding?: (p: FundingRate) => void;
  /** Time limit of that restore read, ms (default 60 000). After 3 failed attempts publishing goes on without it. */
  readonly restoreTimeoutMs?: number;
  /** Outer retry backoff bounds, ms (defaults 250 and 5000). */
  readonly minBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

/** Per-kind counters. */
export interface KindCounts {
  surfaces: number;
  forwardCurves: number;
  funding: number;
  history: number;
}

/** A point-in-time view of the publisher (for /metrics and logs). */
export interface PublisherStats {
  /** Topics ensured and producer connected. */
  readonly connected: boolean;
  /** Records waiting to be acknowledged, in-flight batch included. */
  readonly pending: KindCounts;
  /** Records acknowledged by the broker. */
  readonly sent: KindCounts;
  /** Surface/curve updates replaced by a newer one of the same key before they were sent. */
  readonly conflated: number;
  /** Documents that failed their schema (never sent). */
  readonly invalid: number;
  /** Failed produce attempts (each retried). */
  readonly failures: number;
  /** Failed connection/topic-creation attempts. */
  readonly connectFailures: number;
  /** surface-history documents dropped because their queue was full (oldest first). */
  readonly historyDropped: number;
  /** Queued funding points found already on the topic by the start-up restore (not sent again). */
  readonly fundingAlreadyPublished: number;
  /** Funding points restored from the topic at start-up. */
  readonly fundingRestored: number;
  /** True while the funding queue is deeper than `fundingQueueAlarm`. */
  readonly fundingQueueOverAlarm: boolean;
  /** Deepest funding queue seen. */
  readonly fundingQueueMaxDepth: number;
  /** Milliseconds from the cache update to the broker's ack, of the last acknowledged batch's newest record. */
  readonly lastPublishLatencyMs: number | null;
  /** Wall-clock Unix ms of the last acknowledged batch. */
  readonly lastSentAtMs: number | null;
  readonly lastError: string | null;
}

/** One record ready to send. */
interface OutRecord {
  readonly kind: keyof KindCounts;
  readonly topic: string;
  readonly message: Message;
  /** performance.now() of the cache update this record carries. */
  readonly enqueuedAt: number;
}

interface Waiting<T> {
  readonly item: T;
  readonly enqueuedAt: number;
}

/** Most surface-history documents in one produce batch. */
const HISTORY_PER_BATCH = 100;

/** Latencies kept for percentiles (a ring). */
const LATENCY_RING = 10_000;

/** Error types after which the producer id must be renewed (the broker forgot or fenced it). */
const RENEW_PRODUCER_ERRORS = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'INVALID_PRODUCER_ID_MAPPING',
  'PRODUCER_FENCED',
]);

/** The kafkajs error type of `err` or of its (nested) cause. */
function errorType(err: unknown): string | undefined {
  let e = err as { type?: string; originalError?: unknown; cause?: unknown } | undefined;
  for (let i = 0; i < 5 && e; i++) {
    if (typeof e.type === 'string') return e.type;
    e = (e.originalError ?? e.cause) as typeof e;
  }
  return undefined;
}

export class KafkaPublisher {
  private readonly kafka: Kafka;
  private readonly topics: ReturnType<typeof topicNames>;
  private readonly logger: KafkaLogger;
  private readonly includeQuotes: boolean;
  private readonly historyIntervalS: number;
  private readonly fundingQueueAlarm: number;
  private readonly historyQueueMax: number;
  private readonly maxBatch: number;

  private readonly surfaces = new Map<string, Waiting<SurfaceSnapshot>>();
  private readonly curves = new Map<string, Waiting<ForwardCurveSnapshot>>();
  private funding: Array<Waiting<FundingRate>> = [];
  private history: Array<Waiting<SurfaceSnapshot>> = [];
  private readonly lastHistoryBucket = new Map<string, number>();
  /** Listed points of each forward-curve object (the surface snapshot holds the object, its snapshot the points). */
  private readonly curvePoints = new WeakMap<object, ForwardCurveSnapshot['points']>();
  private inFlight: OutRecord[] | null = null;

  private producer: Producer | null = null;
  private restoreDone = false;
  private restoreAttempts = 0;
  private accepting = true;
  private stopped = false;
  private readonly abort = new AbortController();
  private wake: (() => void) | null = null;
  private loopDone: Promise<void> | null = null;
  private subscription: Subscription | null = null;
  private down = false;
  private lastAlarmDepth = 0;

  private readonly latencyRing = new Float64Array(LATENCY_RING);
  private latencyCount = 0;
  private readonly s = {
    sent: { surfaces: 0, forwardCurves: 0, funding: 0, history: 0 } as KindCounts,
    conflated: 0,
    invalid: 0,
    failures: 0,
    connectFailures: 0,
    historyDropped: 0,
    fundingAlreadyPublished: 0,
    fundingRestored: 0,
    fundingQueueMaxDepth: 0,
    lastPublishLatencyMs: null as number | null,
    lastSentAtMs: null as number | null,
    lastError: null as string | null,
  };

  /** Resolves once topics exist and the producer is connected for the first time (never rejects). */
  readonly ready: Promise<void>;
  private resolveReady!: () => void;

  constructor(private readonly opts: KafkaPublisherOptions) {
    if (opts.brokers.length === 0) throw new Error('KafkaPublisher needs at least one broker (KAFKA_BROKERS)');
    this.logger = opts.logger ?? silentLogger;
    this.kafka = new Kafka(kafkaClientConfig(opts.brokers, opts.clientId ?? 'vol-surface-service', this.logger));
    this.topics = topicNames(opts.prefix);
    this.includeQuotes = opts.includeQuotes ?? true;
    this.historyIntervalS = opts.historyIntervalS ?? 60;
    this.fundingQueueAlarm = opts.fundingQueueAlarm ?? 100_000;
    this.historyQueueMax = opts.historyQueueMax ?? 10_000;
    this.maxBatch = opts.maxBatchMessages ?? 1000;
    this.ready = new Promise((r) => (this.resolveReady = r));
  }

  /** The full topic names used (prefix applied). */
  get topicNames(): Readonly<ReturnType<typeof topicNames>> {
    return this.topics;
  }

  /**
   * Subscribe to the cache's updates and start the background connect/send loop. Returns at once (the broker may be
   * absent). Call once.
   */
  start(updates$?: Observable<CacheUpdate>): this {
    if (this.loopDone) throw new Error('KafkaPublisher.start called twice');
    if (updates$) this.subscription = updates$.subscribe({ next: (u) => this.enqueue(u) });
    this.loopDone = this.loop().catch((err: unknown) => {
      this.logger.error({ err }, 'kafka publisher loop crashed (bug): nothing more will be published');
    });
    return this;
  }

  /**
   * Take one cache update for publishing. Synchronous, O(1), never throws, never waits on the broker.
   * Updates arriving after close() began are ignored.
   */
  enqueue(u: CacheUpdate): void {
    if (!this.accepting) return;
    const now = performance.now();
    switch (u.type) {
      case 'surface': {
        const s = u.snapshot;
        const key = surfaceKey(s.source, s.pair, s.model);
        if (this.surfaces.has(key)) this.s.conflated++;
        this.surfaces.set(key, { item: s, enqueuedAt: now });
        if (this.historyIntervalS > 0) {
          // The first snapshot of each aligned bucket floor(obs / interval): a history store that keeps the first
          // snapshot per (coarser, aligned) bucket then holds the same snapshots on a replica as on the calibrator.
          const bucket = Math.floor(s.observationTimestamp / this.historyIntervalS);
          const last = this.lastHistoryBucket.get(key);
          if (last === undefined || bucket > last) {
            this.lastHistoryBucket.set(key, bucket);
            this.history.push({ item: s, enqueuedAt: now });
            if (this.history.length > this.historyQueueMax) {
              this.history.splice(0, this.history.length - this.historyQueueMax);
              this.s.historyDropped++;
            }
          }
        }
        break;
      }
      case 'forwardCurve': {
        const c = u.snapshot;
        this.curvePoints.set(c.curve, c.points);
        const key = pairKey(c.source, c.pair);
        if (this.curves.has(key)) this.s.conflated++;
        this.curves.set(key, { item: c, enqueuedAt: now });
        break;
      }
      case 'funding': {
        this.funding.push({ item: u.point, enqueuedAt: now });
        const depth = this.funding.length;
        if (depth > this.s.fundingQueueMaxDepth) this.s.fundingQueueMaxDepth = depth;
        if (depth > this.fundingQueueAlarm && depth >= 2 * this.lastAlarmDepth) {
          this.lastAlarmDepth = Math.max(depth, this.fundingQueueAlarm);
          this.logger.error(
            { depth, alarm: this.fundingQueueAlarm },
            'KAFKA FUNDING QUEUE OVER ITS ALARM BOUND: the broker has not acknowledged for a long time; points are kept (none dropped), memory grows',
          );
        }
        break;
      }
    }
    this.wake?.();
  }

  /** Counters and queue depths now. */
  stats(): PublisherStats {
    const pending: KindCounts = { surfaces: this.surfaces.size, forwardCurves: this.curves.size, funding: this.funding.length, history: this.history.length };
    for (const r of this.inFlight ?? []) pending[r.kind]++;
    return {
      connected: this.producer !== null && !this.down,
      pending,
      sent: { ...this.s.sent },
      conflated: this.s.conflated,
      invalid: this.s.invalid,
      failures: this.s.failures,
      connectFailures: this.s.connectFailures,
      historyDropped: this.s.historyDropped,
      fundingAlreadyPublished: this.s.fundingAlreadyPublished,
      fundingRestored: this.s.fundingRestored,
      fundingQueueOverAlarm: this.funding.length > this.fundingQueueAlarm,
      fundingQueueMaxDepth: this.s.fundingQueueMaxDepth,
      lastPublishLatencyMs: this.s.lastPublishLatencyMs,
      lastSentAtMs: this.s.lastSentAtMs,
      lastError: this.s.lastError,
    };
  }

  /**
   * Publish latencies (cache update -> broker ack, ms) of the last acknowledged records (at most 10 000), oldest
   * first. For measurements; not an SLO.
   */
  latencies(): number[] {
    const n = Math.min(this.latencyCount, LATENCY_RING);
    const out: number[] = [];
    for (let i = this.latencyCount - n; i < this.latencyCount; i++) out.push(this.latencyRing[i % LATENCY_RING]!);
    return out;
  }

  /** True when nothing waits to be sent and nothing is in flight. */
  idle(): boolean {
    return this.inFlight === null && this.surfaces.size === 0 && this.curves.size === 0 && this.funding.length === 0 && this.history.length === 0;
  }

  /**
   * Wait until everything enqueued so far is acknowledged, or `timeoutMs` passes.
   * @returns true when flushed, false on timeout
   */
  async flush(timeoutMs = 10_000): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (!this.idle()) {
      if (performance.now() >= deadline || this.stopped) return this.idle();
      await sleep(20);
    }
    return true;
  }

  /**
   * Graceful stop: stop taking updates, flush for at most `timeoutMs`, then disconnect (at most ~2.5 s more). What could not be sent in
   * time is logged with its counts (it is lost for this process; surfaces and curves are republished by the next
   * calibration, funding points by the next start's restore-and-compare).
   */
  async close(timeoutMs = 5000): Promise<{ flushed: boolean; pending: KindCounts }> {
    this.subscription?.unsubscribe();
    this.subscription = null;
    this.accepting = false;
    const flushed = this.loopDone ? await this.flush(timeoutMs) : this.idle();
    const pending = this.stats().pending;
    this.stopped = true;
    this.abort.abort();
    this.wake?.();
    if (this.loopDone) await Promise.race([this.loopDone, sleep(1000)]);
    const p = this.producer;
    this.producer = null;
    if (p) await Promise.race([p.disconnect().catch(() => {}), sleep(1500)]);
    if (!flushed) this.logger.error({ pending }, 'kafka publisher closed before everything was acknowledged');
    else this.logger.info({ sent: this.s.sent }, 'kafka publisher flushed and closed');
    return { flushed, pending };
  }

  // ---------------------------------------------------------------------------------------------------------------

  private async loop(): Promise<void> {
    let attempt = 0;
    while (!this.stopped) {
      if (!this.producer) {
        try {
          await this.connect();
          attempt = 0;
        } catch (err) {
          this.s.connectFailures++;
          this.noteFailure(err, 'kafka broker unavailable; publishing will resume when it answers');
          await sleep(backoffMs(attempt++, this.opts.minBackoffMs, this.opts.maxBackoffMs), this.abort.signal);
          continue;
        }
      }
      if (!this.inFlight) this.inFlight = this.takeBatch();
      if (!this.inFlight) {
        await this.waitForWork();
        continue;
      }
      const batch = this.inFlight;
      try {
        const byTopic = new Map<string, Message[]>();
        for (const r of batch) {
          let arr = byTopic.get(r.topic);
          if (!arr) byTopic.set(r.topic, (arr = []));
          arr.push(r.message);
        }
        await this.producer!.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
        this.acknowledged(batch);
        this.inFlight = null;
        attempt = 0;
        if (this.down) {
          this.down = false;
          this.logger.info({ pending: this.stats().pending }, 'kafka publishing resumed');
        }
      } catch (err) {
        this.s.failures++;
        this.noteFailure(err, 'kafka produce failed; the batch is kept and retried');
        const type = errorType(err);
        if (type && RENEW_PRODUCER_ERRORS.has(type)) {
          // The broker no longer knows this producer id: a new one is needed (records of this batch that the broker
          // had written before may then be written again; consumers dedupe by key and timestamp).
          this.logger.warn({ type }, 'kafka producer id rejected; reconnecting with a new producer id');
          await this.dropProducer();
        } else if (type === 'UNKNOWN_TOPIC_OR_PARTITION') {
          await this.dropProducer(); // reconnect re-creates missing topics
        }
        await sleep(backoffMs(attempt++, this.opts.minBackoffMs, this.opts.maxBackoffMs), this.abort.signal);
      }
    }
  }

  private noteFailure(err: unknown, msg: string): void {
    this.s.lastError = (err as Error)?.message ?? String(err);
    const pending = this.stats().pending;
    if (!this.down) {
      this.down = true;
      this.logger.warn({ err: this.s.lastError, pending }, msg);
    } else {
      this.logger.debug({ err: this.s.lastError, pending }, msg);
    }
  }

  private async dropProducer(): Promise<void> {
    const p = this.producer;
    this.producer = null;
    if (p) await Promise.race([p.disconnect().catch(() => {}), sleep(2000)]);
  }

  /** Ensure topics, restore funding once (if asked), connect an idempotent producer. */
  private async connect(): Promise<void> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      await ensureTopics(admin, this.opts, this.logger);
    } finally {
      await admin.disconnect().catch(() => {});
    }
    if (this.opts.onRestoredFunding && !this.restoreDone) await this.restoreFunding();
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 },
    });
    await producer.connect();
    if (this.stopped) {
      await producer.disconnect().catch(() => {});
      return;
    }
    this.producer = producer;
    if (this.down) this.logger.info({ brokers: this.opts.brokers }, 'kafka broker reachable again');
    this.logger.info({ brokers: this.opts.brokers, topics: this.topics }, 'kafka publisher connected');
    this.resolveReady();
  }

  /** Read funding-updates from the beginning into the service's store and drop the already-published queued points. */
  private async restoreFunding(): Promise<void> {
    const seen = new Set<string>();
    let restored = 0;
    try {
      this.restoreAttempts++;
      const r = await readTopicsToEnd(
        this.kafka,
        { topics: [this.topics.funding], clientId: this.opts.clientId, timeoutMs: this.opts.restoreTimeoutMs ?? 60_000, logger: this.logger },
        ({ message }) => {
          if (!message.value) return;
          let parsed;
          try {
            parsed = FundingUpdateMessageSchema.safeParse(JSON.parse(message.value.toString('utf8')));
          } catch {
            return;
          }
          if (!parsed.success) return;
          const p = messageToFunding(parsed.data);
          seen.add(`${fundingKey(p.source, p.instrumentId)}|${p.timestamp}`);
          this.opts.onRestoredFunding!(p);
          restored++;
        },
      );
      this.logger.info({ points: restored, ms: r.ms }, 'funding history restored from kafka');
    } catch (err) {
      if (this.restoreAttempts < 3) throw err;
      this.logger.error({ err: (err as Error).message }, 'funding history restore from kafka failed 3 times; publishing without it (points may be published twice)');
    }
    this.restoreDone = true;
    this.s.fundingRestored = restored;
    if (seen.size > 0) {
      const before = this.funding.length;
      this.funding = this.funding.filter((w) => !seen.has(`${fundingKey(w.item.source, w.item.instrumentId)}|${w.item.timestamp}`));
      this.s.fundingAlreadyPublished += before - this.funding.length;
    }
  }

  private waitForWork(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = null;
        resolve();
      };
      if (this.stopped || !this.idle()) this.wake();
    });
  }

  /**
   * Drop every waiting surface, curve and history document whose (source, pair) `keep` rejects, and return how many
   * were dropped; the batch in flight is not recalled, and funding points are kept (a point is never dropped; a
   * consumer dedupes by key and timestamp). Used when a sharded calibrator loses a pair (src/kafka/ownership.ts):
   * its new owner publishes the pair from then on.
   */
  discardPending(keep: (source: Source, pair: Pair) => boolean): number {
    let dropped = 0;
    for (const [key, w] of this.surfaces) if (!keep(w.item.source, w.item.pair)) (this.surfaces.delete(key), dropped++);
    for (const [key, w] of this.curves) if (!keep(w.item.source, w.item.pair)) (this.curves.delete(key), dropped++);
    const history = this.history.filter((w) => keep(w.item.source, w.item.pair));
    dropped += this.history.length - history.length;
    this.history = history;
    return dropped;
  }

  /** Build and validate the next batch: latest surfaces and curves, then funding in order, then history. */
  private takeBatch(): OutRecord[] | null {
    const out: OutRecord[] = [];
    for (const [key, w] of this.surfaces) {
      this.surfaces.delete(key);
      const s = w.item;
      this.push(out, 'surfaces', TOPICS.surfaces, key, s.observationTimestamp, w.enqueuedAt, () =>
        SurfaceSnapshotMessageSchema.safeParse(surfaceToMessage(s, this.pointsOf(s), this.includeQuotes)),
      );
    }
    for (const [key, w] of this.curves) {
      this.curves.delete(key);
      const c = w.item;
      this.push(out, 'forwardCurves', TOPICS.forwardCurves, key, c.observationTimestamp, w.enqueuedAt, () =>
        ForwardCurveMessageSchema.safeParse(forwardCurveToMessage(c)),
      );
    }
    let n = 0;
    while (n < this.funding.length && out.length < this.maxBatch) {
      const w = this.funding[n++]!;
      const p = w.item;
      this.push(out, 'funding', TOPICS.funding, fundingKey(p.source, p.instrumentId), p.timestamp, w.enqueuedAt, () =>
        FundingUpdateMessageSchema.safeParse(fundingToMessage(p)),
      );
    }
    if (n > 0) this.funding.splice(0, n);
    if (this.funding.length <= this.fundingQueueAlarm) this.lastAlarmDepth = 0;
    // History documents are 4-13 KB: at most HISTORY_PER_BATCH per batch keeps a partition's record batch far
    // below the topic's max.message.bytes (8 MiB) after a long outage.
    let h = 0;
    while (h < this.history.length && h < HISTORY_PER_BATCH && out.length < this.maxBatch) {
      const w = this.history[h++]!;
      const s = w.item;
      this.push(out, 'history', TOPICS.surfaceHistory, surfaceKey(s.source, s.pair, s.model), s.observationTimestamp, w.enqueuedAt, () =>
        SurfaceSnapshotMessageSchema.safeParse(surfaceToMessage(s, this.pointsOf(s), false)),
      );
    }
    if (h > 0) this.history.splice(0, h);
    return out.length > 0 ? out : null;
  }

  /**
   * Forward points of a surface's curve object: those of the ForwardCurveSnapshot holding the same object (see
   * {@link curvePoints}); else the curve's own `points` with their origin inferred as src/quant/chain/expiryGroups.ts forwardPoints assigns
   * it (an expiry with options is `option-underlying`, any other `future`); else the slices' forwards.
   */
  private pointsOf(s: SurfaceSnapshot): ForwardCurveSnapshot['points'] {
    const known = this.curvePoints.get(s.forwardCurve);
    if (known) return known;
    const own = (s.forwardCurve as { points?: ReadonlyArray<{ expirationTimestamp: number; T: number; forward: number }> }).points;
    const optionExpiries = new Set(s.slices.map((sl) => sl.expirationTimestamp));
    if (own) {
      return own.map((p) => ({
        expirationTimestamp: p.expirationTimestamp,
        T: p.T,
        forward: p.forward,
        origin: optionExpiries.has(p.expirationTimestamp) ? ('option-underlying' as const) : ('future' as const),
      }));
    }
    return s.slices.map((sl) => ({ expirationTimestamp: sl.expirationTimestamp, T: sl.T, forward: sl.forward, origin: 'option-underlying' as const }));
  }

  private push(
    out: OutRecord[],
    kind: keyof KindCounts,
    logical: TopicName,
    key: string,
    dataTimeS: number,
    enqueuedAt: number,
    build: () => { success: true; data: unknown } | { success: false; error: { issues: unknown[] } },
  ): void {
    let r;
    try {
      r = build();
    } catch (err) {
      r = { success: false as const, error: { issues: [String((err as Error)?.message ?? err)] } };
    }
    if (!r.success) {
      this.s.invalid++;
      this.logger.error({ topic: logical, key, issues: r.error.issues.slice(0, 5) }, 'kafka document failed its schema; not sent');
      return;
    }
    const topic = this.topicFor(logical);
    out.push({
      kind,
      topic,
      enqueuedAt,
      message: {
        key,
        value: JSON.stringify(r.data),
        timestamp: String(Math.round(dataTimeS * 1000)),
        headers: { schema: SCHEMA_HEADER[logical], 'content-type': 'application/json', 'produced-at': String(Date.now()) },
      },
    });
  }

  private topicFor(logical: TopicName): string {
    switch (logical) {
      case 'surface-snapshots':
        return this.topics.surfaces;
      case 'forward-curves':
        return this.topics.forwardCurves;
      case 'funding-updates':
        return this.topics.funding;
      case 'surface-history':
        return this.topics.surfaceHistory;
    }
  }

  private acknowledged(batch: readonly OutRecord[]): void {
    const now = performance.now();
    let newest = -Infinity;
    for (const r of batch) {
      this.s.sent[r.kind]++;
      const lat = now - r.enqueuedAt;
      this.latencyRing[this.latencyCount % LATENCY_RING] = lat;
      this.latencyCount++;
      if (r.enqueuedAt > newest) newest = r.enqueuedAt;
    }
    this.s.lastPublishLatencyMs = now - newest;
    this.s.lastSentAtMs = Date.now();
  }
}

/** p-th percentile (0..100) of `xs` by nearest rank; NaN for an empty list. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}
