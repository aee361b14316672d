/**
 * An API replica (ROLE=api) against a REAL Apache Kafka broker (test/setup/kafka.ts) holding tens of MB of surface
 * documents, enough that reading the topics takes seconds:
 * - it never answers 200 with a surface older than the newest one on the topic: /ready and the surface route are
 *   503 "catching up" until it has read every partition up to the end offsets it saw at start, although by then
 *   it has read (applied, or skipped as superseded within a batch) older surfaces and the small forward curves;
 * - /ready turns 200 only after the replica caught up;
 * - staleness per document kind: a surface observed more than STALE_AFTER_S ago is 503 stale although its pair's
 *   forward curve is fresh;
 * - its /metrics has its consumer series (lag per topic/partition, catch-up time) and none of the publisher's.
 * Prints the catch-up time, the MB read, and how long after catch-up /ready was seen 200.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { ensureKafka } from '../setup/kafka.js';
import { http, startTestService } from '../helpers/service.js';
import { testNowS } from '../helpers/simClock.js';
import type { RunningService } from '../../src/service.js';
import { ensureTopics, topicNames } from '../../src/kafka/topics.js';
import { forwardCurveToMessage, SCHEMA_HEADER, surfaceToMessage, type SurfaceSnapshotMessage } from '../../src/kafka/schemas.js';
import type { Pair } from '../../src/domain/markets.js';
import { makeSnapshots } from './helpers.js';
import { one, parseProm, pick } from '../metrics/helpers.js';

const kafka = await ensureKafka();

const BTC: Pair = { base: 'BTC', quote: 'USD' };
const ETH: Pair = { base: 'ETH', quote: 'USD' };
const SOL: Pair = { base: 'SOL', quote: 'USDC' };
/** Versions of each big surface on the topic. */
const VERSIONS = 40;
/** Quotes per expiry of a big surface document (~150 bytes each: ~0.9 MB per document). */
const QUOTES_PER_EXPIRY = 3000;
const STALE_AFTER_S = 600;

/** A schema-valid surface document of `pair` at `observationTimestamp` with `sequence`, about 0.9 MB. */
function bigSurface(pair: Pair, observationTimestamp: number, sequence: number): SurfaceSnapshotMessage {
  const { surface, curve } = makeSnapshots('DERIBIT', pair, observationTimestamp, sequence, sequence);
  const m = surfaceToMessage(surface, curve.points, true);
  for (const e of m.expiries) {
    const q = e.quotes!;
    const many = Array.from({ length: QUOTES_PER_EXPIRY }, (_, i) => ({ ...q[i % q.length]!, instrument: `${q[i % q.length]!.instrument}-${i}` }));
    e.quotes = many;
    e.inputCount = many.length;
  }
  m.inputCount = m.expiries.reduce((a, e) => a + e.inputCount, 0);
  return m;
}

describe.skipIf(!kafka)('API replica catch-up and per-kind staleness (real broker)', () => {
  const brokers = kafka?.brokers ?? [];
  const prefix = `test-catchup-${randomUUID().slice(0, 8)}.`;
  const topics = topicNames(prefix);
  let svc: RunningService | undefined;

  afterAll(async () => {
    await svc?.stop();
    const admin = new Kafka({ clientId: 'catchup-test', brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => {});
    await admin.disconnect();
    await kafka?.stop();
  });

  it('serves nothing before it has read each partition to its start end offset, then only the newest surface', async () => {
    const client = new Kafka({ clientId: 'catchup-test', brokers, logLevel: logLevel.NOTHING });
    const admin = client.admin();
    await admin.connect();
    await ensureTopics(admin, { prefix, partitions: 3 });
    await admin.disconnect();

    // 1. The topics: VERSIONS big surfaces of BTC/USD and of ETH/USD (fresh-looking times, increasing sequence),
    //    small forward curves, and a SOL/USDC surface observed 2 * STALE_AFTER_S ago with a fresh forward curve.
    const producer = client.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    const t0 = testNowS(); // the replica runs on the test file's simulated timeline (test/helpers/simClock.ts)
    let bytes = 0;
    const send = async (topic: string, key: string, value: unknown, header: string) => {
      const raw = JSON.stringify(value);
      bytes += raw.length;
      await producer.send({ topic, acks: -1, messages: [{ key, value: raw, headers: { schema: header } }] });
    };
    for (let v = 1; v <= VERSIONS; v++) {
      for (const pair of [BTC, ETH]) {
        const obs = t0 + v * 0.01;
        await send(topics.surfaces, `DERIBIT:${pair.base}/${pair.quote}:SVI`, bigSurface(pair, obs, v), SCHEMA_HEADER['surface-snapshots']);
        await send(topics.forwardCurves, `DERIBIT:${pair.base}/${pair.quote}`, forwardCurveToMessage(makeSnapshots('DERIBIT', pair, obs, v).curve), SCHEMA_HEADER['forward-curves']);
      }
    }
    const sol = makeSnapshots('DERIBIT', SOL, t0 - 2 * STALE_AFTER_S, 1);
    await send(topics.surfaces, 'DERIBIT:SOL/USDC:SVI', surfaceToMessage(sol.surface, sol.curve.points, true), SCHEMA_HEADER['surface-snapshots']);
    await send(topics.forwardCurves, 'DERIBIT:SOL/USDC', forwardCurveToMessage(makeSnapshots('DERIBIT', SOL, t0, 7).curve), SCHEMA_HEADER['forward-curves']);
    await producer.disconnect();
    const mb = bytes / 1e6;
    expect(mb).toBeGreaterThan(50);

    // 2. The replica, polled without pause from the moment it listens.
    const tStart = Date.now();
    svc = await startTestService({
      ROLE: 'api',
      KAFKA_BROKERS: brokers.join(','),
      KAFKA_TOPIC_PREFIX: prefix,
      STALE_AFTER_S: String(STALE_AFTER_S),
      SOURCES: 'DERIBIT',
      PAIRS: 'DERIBIT:BTC/USD,DERIBIT:ETH/USD,DERIBIT:SOL/USDC',
    });
    const replica = svc.kafka.replica!;
    const url = (p: Pair) => `${svc!.url}/api/v1/global/data/surface?source=DERIBIT&baseCurrency=${p.base}&quoteCurrency=${p.quote}&volatilityModel=SVI`;
    let polls = 0;
    let heldWhileApplied = 0; // 503 answers while the replica had already applied some (older) surfaces
    let readyAtMs: number | null = null;
    let caughtUpSeenBeforeReady = false;
    const catchingUpMessages = new Set<string>();
    let maxLag = 0; // messages behind, summed over partitions, as the metrics report it
    for (;;) {
      maxLag = Math.max(maxLag, replica.stats().lag.reduce((a, l) => a + l.lag, 0));
      const appliedBefore = replica.stats().received.surfaces + replica.stats().superseded;
      const caughtUpBefore = replica.stats().caughtUp;
      const [ready, b, e] = await Promise.all([http('GET', `${svc.url}/ready`), http('GET', url(BTC)), http('GET', url(ETH))]);
      polls++;
      for (const r of [b, e]) {
        if (r.status === 200) {
          // never an older surface than the newest on the topic
          expect(r.body.sequence).toBe(VERSIONS);
        } else {
          expect(r.status).toBe(503);
          expect(r.body.message).toMatch(/catching up with Kafka/);
          if (appliedBefore > 0) heldWhileApplied++;
        }
      }
      if (ready.status === 503) {
        expect(ready.body.status).toBe('catching-up');
        catchingUpMessages.add(String(ready.body.message).replace(/[\d.]+/g, '#'));
      } else {
        expect(ready.status).toBe(200);
        readyAtMs = Date.now();
        caughtUpSeenBeforeReady = caughtUpBefore || replica.stats().caughtUp;
        break;
      }
      expect(Date.now() - tStart).toBeLessThan(180_000);
    }
    const st = replica.stats();
    expect(caughtUpSeenBeforeReady).toBe(true);
    expect(st.caughtUp).toBe(true);
    expect(st.catchUpMs).not.toBeNull();
    // the read took long enough to be observed: the replica held answers while holding older surfaces
    expect(heldWhileApplied).toBeGreaterThan(0);
    expect(maxLag).toBeGreaterThan(0); // the lag gauge saw the backlog
    // every document read: applied, or skipped for a later one of its key in the same fetched batch
    expect(st.received.surfaces + st.received.forwardCurves + st.superseded).toBe(2 * (2 * VERSIONS + 1));
    expect(st.received.surfaces).toBeGreaterThanOrEqual(3);

    // 3. After catch-up: the newest surfaces; SOL/USDC's surface stale although its forward curve is fresh.
    expect((await http('GET', url(BTC))).body.sequence).toBe(VERSIONS);
    const solSurface = await http('GET', url(SOL));
    expect(solSurface.status).toBe(503);
    expect(solSurface.body.message).toMatch(/SVI surface observed at .* ago \(limit 600 s\)/);
    const solCurve = await http('GET', `${svc.url}/api/v1/global/data/forwardCurve?source=DERIBIT&baseCurrency=SOL&quoteCurrency=USDC`);
    expect(solCurve.status).toBe(200);

    // 4. Metrics: consumer lag per topic/partition (0 after catch-up), catch-up time; no publisher series.
    const { samples: s, help } = parseProm((await http('GET', `${svc.url}/metrics`)).body as string);
    expect(one(s, 'volsurf_replica_caught_up')).toBe(1);
    expect(one(s, 'volsurf_replica_partitions_behind')).toBe(0);
    const lag = pick(s, 'volsurf_replica_consumer_lag');
    expect(lag.map((l) => `${l.labels.topic}/${l.labels.partition}`).sort()).toEqual(
      ['surface-snapshots', 'forward-curves', 'funding-updates'].flatMap((t) => [0, 1, 2].map((p) => `${t}/${p}`)).sort(),
    );
    for (const l of lag) expect(l.value).toBe(0);
    expect(one(s, 'volsurf_replica_catch_up_seconds', { phase: 'start-to-caught-up' })).toBeCloseTo(st.catchUpMs! / 1000, 6);
    expect(one(s, 'volsurf_replica_documents_total', { kind: 'surfaces' })).toBe(st.received.surfaces);
    expect(one(s, 'volsurf_replica_ignored_total', { reason: 'superseded' })).toBe(st.superseded);
    for (const name of ['volsurf_kafka_connected', 'volsurf_kafka_queue_depth', 'volsurf_kafka_sent_total']) expect(help.has(name), name).toBe(false);

    console.log(
      `[replica catch-up] ${mb.toFixed(1)} MB (${2 * VERSIONS + 1} surfaces, ${2 * VERSIONS + 1} curves; ${st.received.surfaces} surfaces applied, ${st.superseded} superseded) read in ${(st.catchUpMs! / 1000).toFixed(2)} s ` +
        `(${(mb / (st.catchUpMs! / 1000)).toFixed(1)} MB/s); /ready 200 seen ${((readyAtMs! - (st.startedAtMs! + st.catchUpMs!)) / 1000).toFixed(3)} s after catch-up, ` +
        `${((readyAtMs! - tStart) / 1000).toFixed(2)} s after start; largest consumer lag seen ${maxLag} messages (all partitions); ${polls} polls, ${heldWhileApplied} surface answers held while older surfaces were applied; ` +
        `messages seen: ${[...catchingUpMessages].slice(0, 2).join(' | ')}`,
    );
  }, 300_000);
});
