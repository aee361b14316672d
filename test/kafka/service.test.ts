/**
 * The whole service with Kafka, on the embedded simulator and a REAL Apache Kafka broker (test/setup/kafka.ts):
 * - every topic receives schema-valid documents with the decisions.md keys while the simulator runs;
 * - ROLE=calibrator publishes and answers only /health and /ready;
 * - a calibrator (ROLE=all) and an API replica (ROLE=api) as two processes (`node --import tsx src/main.ts`) give
 *   identical answers to the same surface, vanilla, byStrike and iVSummary (figures; the 24 h changes depend on each
 *   process's history) queries once the replica has the same snapshot, for every model the build calibrates;
 * - restart with Kafka: the funding history is back (a point only Kafka knows is served) and nothing is published
 *   twice.
 * Unique topic prefix per test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { ensureKafka, REPO_ROOT } from '../setup/kafka.js';
import { http, listeningUrl, startTestService, waitFor } from '../helpers/service.js';
import type { RunningService } from '../../src/service.js';
import { MarketCache } from '../../src/cache/marketCache.js';
import { SimulatedClock } from '../../src/domain/clock.js';
import { KafkaPublisher } from '../../src/kafka/publisher.js';
import { topicNames } from '../../src/kafka/topics.js';
import {
  ForwardCurveMessageSchema,
  FundingUpdateMessageSchema,
  SurfaceSnapshotMessageSchema,
  type ForwardCurveMessage,
  type FundingUpdateMessage,
  type SurfaceSnapshotMessage,
} from '../../src/kafka/schemas.js';
import { consumeUntil, fundingPoint, type Rec } from './helpers.js';
import { simStartEnv, testNowS } from '../helpers/simClock.js';

const kafka = await ensureKafka();

const PAIRS = ['BTC/USD', 'ETH/USD', 'SOL/USDC', 'XRP/USDC'];
const PERPETUALS = ['DERIBIT:BTC-PERPETUAL', 'DERIBIT:ETH-PERPETUAL', 'DERIBIT:SOL_USDC-PERPETUAL', 'DERIBIT:XRP_USDC-PERPETUAL'];

describe.skipIf(!kafka)('the service with Kafka (simulator + real broker)', () => {
  const brokers = kafka?.brokers ?? [];
  const prefixes: string[] = [];
  const services: RunningService[] = [];
  const children: ChildProcess[] = [];
  const newPrefix = (what: string): string => {
    const p = `test-svc-${what}-${randomUUID().slice(0, 8)}.`;
    prefixes.push(p);
    return p;
  };

  afterAll(async () => {
    for (const s of services) await s.stop().catch(() => {});
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    const admin = new Kafka({ clientId: 'service-test', brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: prefixes.flatMap((p) => Object.values(topicNames(p))) }).catch(() => {});
    await admin.disconnect();
    await kafka?.stop();
  });

  it('every topic receives schema-valid documents with the right keys while the simulator runs', async () => {
    const prefix = newPrefix('all');
    const topics = topicNames(prefix);
    const svc = await startTestService({ KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix });
    services.push(svc);
    await svc.kafka.publisher!.ready; // topics exist
    const keysOf = (recs: Rec[], t: string) => new Set(recs.filter((r) => r.topic === t).map((r) => r.key));
    const recs = await consumeUntil(
      brokers,
      Object.values(topics),
      (r) =>
        [...keysOf(r, topics.surfaces)].filter((k) => k.endsWith(':SVI')).length >= 4 && keysOf(r, topics.forwardCurves).size >= 4 &&
        keysOf(r, topics.funding).size >= 4 && [...keysOf(r, topics.surfaceHistory)].filter((k) => k.endsWith(':SVI')).length >= 4 &&
        r.filter((x) => x.topic === topics.surfaces).length >= 24,
      180_000,
    );
    // One key per (pair, model): every pair has its SVI surface; the other models where they serve an expiry.
    const surfaceKeys = [...keysOf(recs, topics.surfaces)];
    expect(surfaceKeys.filter((k) => k.endsWith(':SVI')).sort()).toEqual(PAIRS.map((p) => `DERIBIT:${p}:SVI`));
    for (const k of surfaceKeys) expect(k).toMatch(/^DERIBIT:(BTC\/USD|ETH\/USD|SOL\/USDC|XRP\/USDC):(SVI|SABR|VANNA_VOLGA|ESSVI)$/);
    expect([...keysOf(recs, topics.forwardCurves)].sort()).toEqual(PAIRS.map((p) => `DERIBIT:${p}`));
    expect([...keysOf(recs, topics.funding)].sort()).toEqual(PERPETUALS);
    expect([...keysOf(recs, topics.surfaceHistory)].filter((k) => k.endsWith(':SVI')).sort()).toEqual(PAIRS.map((p) => `DERIBIT:${p}:SVI`));
    const lastSeq = new Map<string, number>();
    for (const r of recs.sort((a, b) => a.offset - b.offset)) {
      if (r.topic === topics.surfaces || r.topic === topics.surfaceHistory) {
        const m = SurfaceSnapshotMessageSchema.parse(r.value) as SurfaceSnapshotMessage;
        expect(r.key).toBe(`${m.source}:${m.baseCurrency}/${m.quoteCurrency}:${m.volatilityModel}`);
        expect(m.expiries.length).toBeGreaterThan(0);
        expect(m.inputCount).toBe(m.expiries.reduce((a, e) => a + e.inputCount, 0));
        expect(m.forwardCurve.length).toBeGreaterThanOrEqual(m.expiries.length);
        if (r.topic === topics.surfaces) {
          expect(m.sequence).toBeGreaterThan(lastSeq.get(r.key) ?? 0); // in order per key
          lastSeq.set(r.key, m.sequence);
          expect(m.expiries.every((e) => e.quotes && e.quotes.length === e.inputCount)).toBe(true);
        }
      } else if (r.topic === topics.forwardCurves) {
        const m = ForwardCurveMessageSchema.parse(r.value) as ForwardCurveMessage;
        expect(r.key).toBe(`${m.source}:${m.baseCurrency}/${m.quoteCurrency}`);
      } else {
        const m = FundingUpdateMessageSchema.parse(r.value) as FundingUpdateMessage;
        expect(r.key).toBe(`${m.source}:${m.instrumentId}`);
      }
    }
    const funding = recs.filter((r) => r.topic === topics.funding);
    expect(new Set(funding.map((r) => `${r.key}|${(r.value as FundingUpdateMessage).timestamp}`)).size).toBe(funding.length);
    expect(svc.kafka.publisher!.stats().invalid).toBe(0);
    await svc.stop();
  }, 240_000);

  it('ROLE=calibrator publishes and answers only /health and /ready', async () => {
    const prefix = newPrefix('cal');
    const svc = await startTestService({ KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix, ROLE: 'calibrator' });
    services.push(svc);
    expect((await http('GET', `${svc.url}/health`)).body).toEqual({ status: 'ok' });
    await waitFor(async () => (await http('GET', `${svc.url}/ready`)).status === 200, 180_000, 'calibrator /ready 200');
    const r = await http('GET', `${svc.url}/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI`);
    expect(r.status).toBe(404);
    await svc.kafka.publisher!.ready;
    const recs = await consumeUntil(brokers, [topicNames(prefix).surfaces], (x) => x.length > 0);
    expect(recs[0]!.topic).toBe(`${prefix}surface-snapshots`);
    await svc.stop();
  }, 240_000);

  it('a calibrator and an API replica (two processes) answer the same queries identically', async () => {
    const prefix = newPrefix('replica');
    // Deribit only (as startTestService), to keep two services and a broker affordable on a 2-core machine.
    const common = { KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix, LOG_PRETTY: 'false', LOG_LEVEL: 'info', PORT: '0', SOURCES: 'DERIBIT' };
    // Slow recalibration so that both processes often hold the same snapshot.
    const A = await startChild({ ...common, ROLE: 'all', CALIBRATION_THROTTLE_MS: '1500' }, children);
    const B = await startChild({ ...common, ROLE: 'api' }, children);
    await waitFor(async () => (await http('GET', `${A}/ready`)).status === 200, 180_000, 'calibrator /ready 200');
    await waitFor(async () => (await http('GET', `${B}/ready`)).status === 200, 120_000, 'replica /ready 200');

    const surfaceUrl = (base: string, pair: string, model: string) => {
      const [b, q] = pair.split('/');
      return `${base}/api/v1/global/data/surface?source=DERIBIT&baseCurrency=${b}&quoteCurrency=${q}&volatilityModel=${model}`;
    };
    const compared: string[] = [];
    const cases: Array<[string, string]> = [['BTC/USD', 'SVI'], ['ETH/USD', 'SVI'], ['SOL/USDC', 'SVI'], ['BTC/USD', 'SABR'], ['ETH/USD', 'VANNA_VOLGA']];
    for (const [pair, model] of cases) {
      const [base, quote] = pair.split('/') as [string, string];
      if ((await http('GET', surfaceUrl(A, pair, model))).status === 400) {
        compared.push(`${pair} ${model}: not calibrated by this build`); // the other models arrive with issue 4
        continue;
      }
      let done = false;
      for (let attempt = 0; attempt < 100 && !done; attempt++) {
        const sa = await http('GET', surfaceUrl(A, pair, model));
        const sb = await http('GET', surfaceUrl(B, pair, model));
        if (sa.status !== 200 || sb.status !== 200 || sa.body.sequence !== sb.body.sequence) {
          await new Promise((r) => setTimeout(r, 100));
          continue;
        }
        const ex = sa.body.expiries as Array<{ expirationTimestamp: number; forwardPrice: number }>;
        const pick = [ex[1]!, ex[Math.floor(ex.length / 2)]!, ex[ex.length - 1]!];
        const vanilla = pick.flatMap((e, i) =>
          (['CALL', 'PUT', 'FORWARD'] as const).map((t) => ({
            instrumentId: `${t}-${i}`,
            baseCurrency: base,
            quoteCurrency: quote,
            amount: 1.5,
            vanillaOptionType: t,
            source: 'DERIBIT',
            priceMethod: 'DERIBIT',
            expirationTimestamp: e.expirationTimestamp,
            strike: e.forwardPrice * (0.9 + 0.1 * i),
            volatilityModel: model,
          })),
        );
        const byStrike = pick.flatMap((e, i) =>
          [0.7, 1, 1.3].map((m) => ({
            instrumentId: `s-${i}-${m}`,
            baseCurrency: base,
            quoteCurrency: quote,
            source: 'DERIBIT',
            volatilityModel: model,
            // between listed expiries too: interpolation in total variance must agree as well
            expirationTimestamp: e.expirationTimestamp - 3 * 3600,
            strike: e.forwardPrice * m,
          })),
        );
        const summaryUrl = surfaceUrl('', pair, model).replace('/surface?', '/iVSummary?');
        const [va, vb, ba, bb, ia, ib] = await Promise.all([
          http('POST', `${A}/api/v1/global/optionValuation/vanilla`, vanilla),
          http('POST', `${B}/api/v1/global/optionValuation/vanilla`, vanilla),
          http('POST', `${A}/api/v1/global/data/iV/byStrike`, byStrike),
          http('POST', `${B}/api/v1/global/data/iV/byStrike`, byStrike),
          http('GET', `${A}${summaryUrl}`),
          http('GET', `${B}${summaryUrl}`),
        ]);
        const sa2 = await http('GET', surfaceUrl(A, pair, model));
        const sb2 = await http('GET', surfaceUrl(B, pair, model));
        if (sa2.body.sequence !== sa.body.sequence || sb2.body.sequence !== sa.body.sequence) continue; // moved meanwhile
        expect(va.status).toBe(200);
        expect(ba.status).toBe(200);
        expect(sb.body).toEqual(sa.body); // the whole surface: parameters, diagnostics, forwards, ATM vols
        expect(vb.body).toEqual(va.body);
        expect(bb.body).toEqual(ba.body);
        if (ia.status !== 404) {
          // iVSummary: the figures of the same snapshot are identical; the 24 h changes depend on each process's
          // history store (the calibrator's may be seeded from the simulator's own past, which is not on Kafka).
          expect(ia.status).toBe(200);
          expect(ib.status).toBe(200);
          expect(withoutDiffs(ib.body)).toEqual(withoutDiffs(ia.body));
          expect(ia.body.volatilityConstMat.length).toBeGreaterThan(0);
        }
        expect(va.body).toHaveLength(9);
        expect(ba.body.every((x: { impliedVolatility: number }) => x.impliedVolatility > 0.05 && x.impliedVolatility < 5)).toBe(true);
        compared.push(`${pair} ${model} #${sa.body.sequence}${ia.status === 200 ? ' (+iVSummary)' : ''}`);
        done = true;
      }
      expect(done, `no common snapshot of ${pair} ${model} within 100 attempts`).toBe(true);
    }
    // Funding history too.
    const now = Math.floor(testNowS());
    const fq = `/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=BTC-PERPETUAL&startTime=${now - 3 * 86400}&endTime=${now}`;
    await waitFor(async () => {
      const [fa, fb] = await Promise.all([http('GET', `${A}${fq}`), http('GET', `${B}${fq}`)]);
      return fa.status === 200 && fa.body.length > 0 && JSON.stringify(fa.body) === JSON.stringify(fb.body);
    }, 30_000, 'identical funding history on the replica');
    expect(compared).toHaveLength(cases.length);
    expect(compared.filter((c) => c.includes(' SVI #'))).toHaveLength(3);
    console.log(`[replica parity] identical answers: ${compared.join('; ')}`);
  }, 300_000);

  it('restart with Kafka: the funding history is back and nothing is published twice', async () => {
    const prefix = newPrefix('restart');
    const topics = topicNames(prefix);
    const env = { KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix };
    const svc1 = await startTestService(env);
    services.push(svc1);
    await waitFor(() => svc1.cache.funding.instruments().length === 4 && svc1.kafka.publisher!.stats().sent.funding > 0, 120_000, 'funding published');
    expect(await svc1.kafka.publisher!.flush(30_000)).toBe(true);
    const published = svc1.kafka.publisher!.stats().sent.funding;
    expect(published).toBe(svc1.cache.funding.instruments().reduce((a, i) => a + i.points, 0));
    await svc1.stop();

    // A point only Kafka knows: 30 days old, older than the exchange's history the service fetches.
    const old = Math.floor(testNowS() / 3600) * 3600 - 30 * 86400;
    // on the test's simulated timeline, as the services (never the wall clock beside a simulated time)
    const side = new MarketCache(new SimulatedClock(testNowS()), 30);
    const pub = new KafkaPublisher({ brokers, prefix, clientId: 'restart-test' }).start(side.updates$);
    side.addFunding(fundingPoint(old, 1.234e-5));
    expect(await pub.flush(30_000)).toBe(true);
    await pub.close();

    const svc2 = await startTestService(env);
    services.push(svc2);
    await waitFor(() => svc2.kafka.publisher!.stats().fundingRestored > 0, 120_000, 'funding restored');
    expect(svc2.kafka.publisher!.stats().fundingRestored).toBe(published + 1);
    const r = await http('GET', `${svc2.url}/api/v1/global/data/fundingRates?source=DERIBIT&instrumentId=BTC-PERPETUAL&startTime=${old - 1}&endTime=${old + 1}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual([{ interest: 1.234e-5, timestamp: old }]);
    await waitFor(() => svc2.cache.funding.instruments().length === 4, 30_000, 'feed funding history');
    expect(await svc2.kafka.publisher!.flush(30_000)).toBe(true);
    const sent2 = svc2.kafka.publisher!.stats().sent.funding;
    await svc2.stop();
    // Each (key, timestamp) exactly once on the topic: the restarted service sent only new points.
    const total = published + 1 + sent2;
    const recs = await consumeUntil(brokers, [topics.funding], (x) => x.length >= total, 60_000);
    await new Promise((res) => setTimeout(res, 500));
    expect(new Set(recs.map((x) => `${x.key}|${(x.value as FundingUpdateMessage).timestamp}`)).size).toBe(recs.length);
    expect(sent2).toBeLessThanOrEqual(4); // at most a new hourly point per instrument
  }, 240_000);
});

/** A deep copy of `v` without the 24 h change fields (`diff*`) of iVSummary. */
function withoutDiffs(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutDiffs);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).filter(([k]) => !k.startsWith('diff')).map(([k, x]) => [k, withoutDiffs(x)]));
  }
  return v;
}

/** Start `src/main.ts` in a child process with `env`; resolves with its REST base URL from its JSON log. */
async function startChild(env: Record<string, string>, children: ChildProcess[]): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: REPO_ROOT,
    // the child runs on this test file's simulated timeline too (SIM_START_TIME = the timeline's time at spawn;
    // its clock starts when its config loads, a boot time later, so it lags by that: seconds, never an hour)
    // and a history store of its own (src/history): no two children open one file
    env: { ...process.env, ...simStartEnv(), HISTORY_DIR: mkdtempSync(join(tmpdir(), 'volsurf-kafka-history-')), ...env, KAFKA_BROKERS: env['KAFKA_BROKERS'] },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return listeningUrl(child);
}
