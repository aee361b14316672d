/**
 * Helpers of the Kafka publishing tests: hand-built snapshots (raw SVI slices on a VolSurface, a ForwardCurve), a
 * plain kafkajs consumer that collects records, and a broker that can be stopped and restarted by PID with its data
 * dir kept (scripts/kafka/start.sh formats a fresh data dir on every start, so a restart re-executes the broker's
 * own java command line instead).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { Kafka, logLevel, type IHeaders } from 'kafkajs';
import type { Pair, Source } from '../../src/domain/markets.js';
import type { ExpirySlice, ForwardCurveSnapshot, ForwardPoint, SmileQuote, SurfaceSnapshot } from '../../src/cache/snapshot.js';
import type { FundingRate } from '../../src/domain/events.js';
import { VolSurface } from '../../src/quant/surface.js';
import { ForwardCurve } from '../../src/quant/forwardCurve.js';
import type { SviParams } from '../../src/quant/svi.js';
import { REPO_ROOT, startLocalKafka, type KafkaHandle } from '../setup/kafka.js';

const YEAR_S = 365 * 86400;

/**
 * A surface snapshot and its forward-curve snapshot sharing one ForwardCurve object, as src/cache/snapshotBuilder.ts builds
 * them: two expiries (7 and 30 days) with raw SVI slices, a future-only third point (90 days).
 * @param level shifts the SVI `a` parameter, so successive snapshots differ
 */
export function makeSnapshots(
  source: Source,
  pair: Pair,
  observationTimestamp: number,
  sequence: number,
  level = 0,
): { surface: SurfaceSnapshot; curve: ForwardCurveSnapshot } {
  const spot = pair.base === 'BTC' ? 100_000 : pair.base === 'ETH' ? 3_000 : 150;
  const expiries = [7, 30].map((d) => Math.floor(observationTimestamp / 86400) * 86400 + d * 86400 + 8 * 3600);
  const points: ForwardPoint[] = expiries.map((e, i) => ({
    expirationTimestamp: e,
    T: (e - observationTimestamp) / YEAR_S,
    forward: spot * (1 + 0.002 * (i + 1)),
    origin: 'option-underlying',
  }));
  const fut = Math.floor(observationTimestamp / 86400) * 86400 + 90 * 86400 + 8 * 3600;
  points.push({ expirationTimestamp: fut, T: (fut - observationTimestamp) / YEAR_S, forward: spot * 1.01, origin: 'future' });
  const fc = new ForwardCurve(spot, points);
  const slices: ExpirySlice[] = points.slice(0, 2).map((p, i) => {
    const params: SviParams = { a: 0.002 + 0.001 * i + level * 1e-4, b: 0.05 + 0.01 * i, rho: -0.3, m: 0.01, sigma: 0.1 + 0.05 * i };
    const quotes: SmileQuote[] = [0.9, 1, 1.1].map((m) => ({
      instrument: `${pair.base}-X${i}-${Math.round(p.forward * m)}-${m < 1 ? 'P' : 'C'}`,
      strike: Math.round(p.forward * m),
      optionType: m < 1 ? 'P' : 'C',
      k: Math.log(Math.round(p.forward * m) / p.forward),
      markIv: 0.5 + 0.01 * i,
      bidIv: m === 1 ? null : 0.49,
      askIv: 0.51,
    }));
    return Object.freeze({
      expirationTimestamp: p.expirationTimestamp,
      T: p.T,
      forward: p.forward,
      params: Object.freeze({ ...params }),
      fit: Object.freeze({ rmseVolPts: 0.1 * (i + 1), maxErrorVolPts: 0.3, quotesUsed: 3, butterflyFree: true, method: 'raw-svi', calibrationMs: 1.25 }),
      quotes: Object.freeze(quotes),
    });
  });
  const surface: SurfaceSnapshot = Object.freeze({
    source,
    pair,
    model: 'SVI' as const,
    observationTimestamp,
    spot,
    slices: Object.freeze(slices),
    surface: new VolSurface(slices.map((s) => ({ expirationTimestamp: s.expirationTimestamp, T: s.T, forward: s.forward, params: s.params as unknown as SviParams }))),
    forwardCurve: fc,
    calibrationMs: 3.5,
    sequence,
  });
  const curve: ForwardCurveSnapshot = Object.freeze({ source, pair, observationTimestamp, spot, points: Object.freeze(points), curve: fc, sequence });
  return { surface, curve };
}

/** A funding point of DERIBIT BTC-PERPETUAL at `timestamp` (s). */
export function fundingPoint(timestamp: number, interest = 1e-5, instrumentId = 'BTC-PERPETUAL'): FundingRate {
  return { kind: 'funding', source: 'DERIBIT', instrumentId, base: 'BTC', quote: 'USD', interest, intervalHours: 1, timestamp };
}

/** One consumed record. */
export interface Rec {
  topic: string;
  partition: number;
  offset: number;
  key: string;
  value: unknown;
  raw: string;
  headers: Record<string, string>;
  timestampMs: number;
}

function headersOf(h: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h ?? {})) out[k] = String(Array.isArray(v) ? v[0] : v);
  return out;
}

/**
 * Consume `topics` from the beginning with a fresh consumer group until `done(records)` is true.
 * @throws on timeout, with the count read so far
 */
export async function consumeUntil(brokers: string[], topics: string[], done: (recs: Rec[]) => boolean, timeoutMs = 45_000): Promise<Rec[]> {
  const kafka = new Kafka({ clientId: 'test-consumer', brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `test-${randomUUID()}`, maxWaitTimeInMs: 100 });
  const recs: Rec[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const guard = setTimeout(() => reject(new Error(`consumeUntil: timed out with ${recs.length} records of ${topics.join(', ')}`)), timeoutMs);
      consumer
        .run({
          eachMessage: async ({ topic, partition, message }) => {
            const raw = message.value?.toString('utf8') ?? '';
            recs.push({
              topic,
              partition,
              offset: Number(message.offset),
              key: message.key?.toString('utf8') ?? '',
              value: JSON.parse(raw),
              raw,
              headers: headersOf(message.headers),
              timestampMs: Number(message.timestamp),
            });
            if (done(recs)) {
              clearTimeout(guard);
              resolve();
            }
          },
        })
        .catch(reject);
      if (done(recs)) {
        clearTimeout(guard);
        resolve();
      }
    });
  } finally {
    await consumer.disconnect();
  }
  return recs;
}

/** A private broker that can be stopped and restarted with the same data dir. */
export interface RestartableBroker extends KafkaHandle {
  readonly port: number;
  /** Current broker JVM pid. */
  pid(): number;
  /** SIGTERM the broker and wait until it has exited (controlled shutdown). */
  halt(): Promise<void>;
  /** Start the same broker again (same config, same data dir) and wait until a client answers; resolves with the ms it took. */
  resume(): Promise<number>;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Run scripts/kafka/wait-ready.mjs against `broker`. */
function waitReady(broker: string, pid: number, timeoutS = 90): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('node', [`${REPO_ROOT}scripts/kafka/wait-ready.mjs`, broker, String(timeoutS), String(pid)], { stdio: 'ignore' });
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`broker ${broker} not ready (wait-ready exit ${code})`))));
  });
}

/**
 * Start a private broker with scripts/kafka/start.sh (first free port pair from `basePort`) whose process can be
 * halted and resumed by PID. stop() stops it (stop.sh, by the PID file, which resume() keeps current) and deletes
 * its data. Returns null when the machine cannot run a broker (tests skip).
 */
export async function startRestartableBroker(basePort: number): Promise<RestartableBroker | null> {
  const handle = await startLocalKafka(basePort);
  if (!handle) return null;
  const broker = handle.brokers[0]!;
  const port = Number(broker.split(':')[1]);
  const pidFile = `${REPO_ROOT}.cache/kafka/broker-${port}.pid`;
  const logFile = `${REPO_ROOT}.cache/kafka/broker-${port}.log`;
  let pid = Number(readFileSync(pidFile, 'utf8').trim());
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((s) => s.length > 0);
  return {
    brokers: handle.brokers,
    port,
    pid: () => pid,
    async halt() {
      if (!alive(pid)) return;
      process.kill(pid, 'SIGTERM');
      await waitFor(() => !alive(pid), 60_000, `broker pid ${pid} to exit`);
    },
    async resume() {
      if (alive(pid)) return 0;
      const t0 = Date.now();
      const out = openSync(logFile, 'a');
      const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', out, out], cwd: REPO_ROOT });
      child.unref();
      pid = child.pid!;
      writeFileSync(pidFile, `${pid}\n`);
      // Same safety net as start.sh's watchdog: the broker dies with this test process.
      spawn('bash', ['-c', `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${pid} 2>/dev/null; do sleep 1; done; kill -TERM ${pid} 2>/dev/null`], {
        detached: true,
        stdio: 'ignore',
      }).unref();
      try {
        await waitReady(broker, pid);
      } catch (err) {
        const tail = readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n');
        throw new Error(`${(err as Error).message}; broker log tail:\n${tail}`);
      }
      return Date.now() - t0;
    },
    stop: () => handle.stop(),
  };
}

/** Poll `cond` every 50 ms until true or `timeoutMs` (throws with `what`). */
export async function eventually(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
