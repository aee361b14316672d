/**
 * The Kafka publisher's series of {@link ServiceMetrics} (src/metrics/serviceMetrics.ts), in a process that can
 * publish (ROLE all/calibrator; an API replica has its own series, src/kafka/metrics.ts): `KafkaPublisher.stats()`
 * (connection, queue depth per kind, sent, failures, conflated) and the publish latencies of the records acknowledged
 * since the previous scrape (`latencies()`, cache update -> broker ack), read at scrape time.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { KindCounts, PublisherStats } from '../kafka/publisher.js';
import { cumulativeCounter, type CumulativeCounts } from './cumulativeCounts.js';

/** What the metrics read from a Kafka publisher (src/kafka/publisher.ts KafkaPublisher). */
export interface PublisherLike {
  stats(): PublisherStats;
  /** Publish latencies in ms of the last acknowledged records, oldest first. */
  latencies(): number[];
}

/** Kafka publish latency buckets (cache update -> broker ack), seconds. */
const KAFKA_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Registers the publisher series; each is absent from a scrape (or 0 for the counters' first) while `publisher()`
 * gives null (the service does not publish now).
 */
export function registerKafkaPublisherSeries(registry: Registry, publisher: () => PublisherLike | null, counts: CumulativeCounts): void {
  const registers = [registry];
  const publisherStats = (): PublisherStats | null => publisher()?.stats() ?? null;
  new Gauge({
    name: 'volsurf_kafka_connected',
    help: 'Whether the Kafka producer is connected with its topics ensured (absent when not publishing)',
    registers,
    collect() {
      this.reset();
      const s = publisherStats();
      if (s) this.set(s.connected ? 1 : 0);
    },
  });
  new Gauge({
    name: 'volsurf_kafka_queue_depth',
    help: 'Records waiting for a Kafka ack (in-flight batch included), by kind',
    labelNames: ['kind'],
    registers,
    collect() {
      this.reset();
      const s = publisherStats();
      if (s) for (const [kind, n] of Object.entries(s.pending as KindCounts)) this.set({ kind }, n);
    },
  });
  new Counter({
    name: 'volsurf_kafka_sent_total',
    help: 'Records acknowledged by the Kafka broker, by kind',
    labelNames: ['kind'],
    registers,
    collect() {
      const s = publisherStats();
      if (s) for (const [kind, n] of Object.entries(s.sent as KindCounts)) counts.add(this, `ksent:${kind}`, { kind }, n);
    },
  });
  const failures = { name: 'volsurf_kafka_failures_total', help: 'Failed Kafka produce attempts (each retried)', key: 'kfail' };
  cumulativeCounter(registry, counts, failures, () => publisherStats()?.failures ?? null);
  const conflated = { name: 'volsurf_kafka_conflated_total', help: 'Surface/curve updates replaced by a newer one of the same key before they were sent', key: 'kconf' };
  cumulativeCounter(registry, counts, conflated, () => publisherStats()?.conflated ?? null);
  registerKafkaLatencySeries(registry, publisher);
}

/** The publish latency histogram: at each scrape, the latencies of the records acknowledged since the previous one. */
function registerKafkaLatencySeries(registry: Registry, publisher: () => PublisherLike | null): void {
  let ackedBefore = 0;
  new Histogram({
    name: 'volsurf_kafka_publish_latency_seconds',
    help: 'Kafka publish latency: cache update to broker acknowledgement, per record',
    buckets: KAFKA_BUCKETS,
    registers: [registry],
    collect() {
      // the publisher keeps the latencies of its last 10 000 acknowledged records
      const p = publisher();
      if (!p) return;
      const s = p.stats();
      const acked = s.sent.surfaces + s.sent.forwardCurves + s.sent.funding + s.sent.history;
      const fresh = acked - ackedBefore;
      ackedBefore = acked;
      if (fresh <= 0) return;
      const lat = p.latencies();
      for (const ms of lat.slice(Math.max(0, lat.length - fresh))) this.observe(ms / 1000);
    },
  });
}
