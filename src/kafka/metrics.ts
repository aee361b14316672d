/**
 * Prometheus series of an API replica (ROLE=api), on a prom-client Registry of its own that the replica's /metrics
 * exposes after the service's series (src/metrics/serviceMetrics.ts `registries`). A replica never publishes, so
 * it has none of the publisher's `volsurf_kafka_*` series; these are its consumer side:
 *
 * - `volsurf_replica_consumer_lag{topic,partition}`: messages between the partition's high watermark (as of the
 *   last fetch) and the next offset the replica will read; until the first fetch of a partition, its end offset at
 *   start minus its first offset;
 * - `volsurf_replica_caught_up`: 1 once every partition was read to the end offsets seen at start (the replica
 *   serves from then on), 0 before;
 * - `volsurf_replica_partitions_behind`: partitions not yet read to their end offset of the start;
 * - `volsurf_replica_catch_up_seconds`: start() to caught up (absent before);
 * - `volsurf_replica_documents_total{kind}`: documents applied (surfaces, forwardCurves, funding);
 * - `volsurf_replica_ignored_total{reason}`: documents ignored, `invalid` (failed to parse/validate/rebuild),
 *   `older` (older than the one held for their key) or `superseded` (a later document of the same key was in the
 *   same fetched batch: only that one was applied).
 * Values are read from `KafkaReplica.stats()` at scrape time. Units per the Prometheus naming guide
 * (https://prometheus.io/docs/practices/naming/).
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { ReplicaStats } from './replica.js';

export class ReplicaMetrics {
  readonly registry = new Registry();
  /** Cumulative values already added to each counter, by series key. */
  private readonly seen = new Map<string, number>();

  constructor(stats: () => ReplicaStats) {
    const registers = [this.registry];
    const self = this;
    new Gauge({
      name: 'volsurf_replica_consumer_lag',
      help: 'Messages behind the partition high watermark, per topic (without prefix) and partition',
      labelNames: ['topic', 'partition'],
      registers,
      collect() {
        this.reset();
        for (const l of stats().lag) this.set({ topic: l.topic, partition: String(l.partition) }, l.lag);
      },
    });
    new Gauge({
      name: 'volsurf_replica_caught_up',
      help: 'Whether the replica has read every partition up to the end offsets it saw at start (it serves from then on)',
      registers,
      collect() {
        this.set(stats().caughtUp ? 1 : 0);
      },
    });
    new Gauge({
      name: 'volsurf_replica_partitions_behind',
      help: 'Partitions not yet read up to the end offsets seen at start',
      registers,
      collect() {
        this.set(stats().partitionsBehind);
      },
    });
    new Gauge({
      name: 'volsurf_replica_catch_up_seconds',
      help: 'Seconds from replica start to having read every partition up to the end offsets seen at start (absent before)',
      labelNames: ['phase'],
      registers,
      collect() {
        this.reset();
        const ms = stats().catchUpMs;
        if (ms !== null) this.set({ phase: 'start-to-caught-up' }, ms / 1000);
      },
    });
    new Counter({
      name: 'volsurf_replica_documents_total',
      help: 'Documents applied to the cache, by kind',
      labelNames: ['kind'],
      registers,
      collect() {
        for (const [kind, n] of Object.entries(stats().received)) self.addIncrease(this, `doc:${kind}`, { kind }, n);
      },
    });
    new Counter({
      name: 'volsurf_replica_ignored_total',
      help: 'Documents ignored: invalid (parse/validation/rebuild failed), older than the one held for their key, or superseded within a fetched batch',
      labelNames: ['reason'],
      registers,
      collect() {
        const s = stats();
        self.addIncrease(this, 'ign:invalid', { reason: 'invalid' }, s.invalid);
        self.addIncrease(this, 'ign:older', { reason: 'older' }, s.older);
        self.addIncrease(this, 'ign:superseded', { reason: 'superseded' }, s.superseded);
      },
    });
  }

  /** Prometheus text exposition of the replica's series. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  private addIncrease(counter: Counter<string>, key: string, labels: Record<string, string>, cumulative: number): void {
    const prev = this.seen.get(key) ?? 0;
    this.seen.set(key, cumulative);
    counter.inc(labels, Math.max(0, cumulative - prev));
  }
}
