/**
 * Shared pieces of the benchmark suite (`npm run bench`, bench/run.ts): percentiles, the result
 * row shape, the table on stdout, child processes running TypeScript through tsx or the production build as
 * `npm start` runs it, and the RSS of a process (Linux /proc).
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNodeFlags } from '../scripts/startFlags.mjs';
import { cpus, loadavg, tmpdir } from 'node:os';

/** BENCH_QUICK=1: short runs for a smoke check (figures are indicative only). */
export const QUICK = process.env.BENCH_QUICK === '1';

/** One reported figure, beside its physical limit when one applies. */
export interface BenchRow {
  /** Section: ingest, calibration, rest, freshness, memory. */
  readonly section: string;
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  /** The physical limit measured in the same run (same unit), or null. */
  readonly limit: number | null;
  /** What the limit is. */
  readonly limitName: string | null;
  /** value / limit (or limit / value for times, so that 1 = at the limit and smaller = slower); null without a limit. */
  readonly ratio: number | null;
  /** The target, as text, and whether it is met (null when no target applies). */
  readonly target: string | null;
  readonly met: boolean | null;
  /** Secondary figures (p50/p99, counts...). */
  readonly extra?: Readonly<Record<string, number | string>>;
}

/** The q-quantile (0..1) of `xs` by linear interpolation between order statistics (Hyndman-Fan type 7, as numpy's default). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const h = (s.length - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  return s[lo]! + (h - lo) * (s[hi]! - s[lo]!);
}

export const median = (xs: readonly number[]): number => quantile(xs, 0.5);

/** Round to `d` significant digits for display. */
export function sig(x: number | null | undefined, d = 3): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '-';
  if (x === 0) return '0';
  const abs = Math.abs(x);
  if (abs >= 10 ** d) return Math.round(x).toLocaleString('en-US');
  return Number(x.toPrecision(d)).toString();
}

/** The rows as a fixed-width table. */
export function table(rows: readonly BenchRow[]): string {
  const head = ['section', 'figure', 'value', 'unit', 'limit (same run)', 'ratio', 'target', 'met'];
  const body = rows.map((r) => [
    r.section,
    r.name,
    sig(r.value),
    r.unit,
    r.limit === null ? '-' : `${sig(r.limit)} (${r.limitName})`,
    r.ratio === null ? '-' : sig(r.ratio, 2),
    r.target ?? '-',
    r.met === null ? '-' : r.met ? 'yes' : 'NO',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** The machine, for the JSON file. */
export function machine(): Record<string, unknown> {
  const c = cpus();
  return { cpus: c.length, cpuModel: c[0]?.model ?? 'unknown', node: process.version, loadavg1m: loadavg()[0], platform: process.platform };
}

const root = fileURLToPath(new URL('..', import.meta.url));

export { startNodeFlags };

let built = false;

/**
 * A fresh history folder (src/history) for one forked service: each child writes a store of its own (as the service
 * does by default), and no two open one file. Removed when the benchmark process exits.
 */
export function benchHistoryDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'volsurf-bench-history-'));
  process.once('exit', () => rmSync(d, { recursive: true, force: true }));
  return d;
}

/**
 * Fork a module of the production build (`npm run build`: dist/, built once per benchmark run) with the node flags of
 * `npm start` and an IPC channel: the service's children of the benchmarks run as the service does.
 * @param modulePath the module's TypeScript source, relative to the repository root (e.g. `bench/serviceChild.ts`)
 */
export function forkBuilt(modulePath: string, env: Record<string, string> = {}): ChildProcess {
  if (!built) {
    execFileSync(process.execPath, [join(root, 'scripts/build.mjs')], { stdio: 'ignore' });
    built = true;
  }
  // BENCH_CHILD_NODE_FLAGS: extra node flags for the forked service, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
  // (not allowed in NODE_OPTIONS); the profile is written when the child exits (stopChild's SIGTERM)
  const extra = (process.env.BENCH_CHILD_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
  return fork(join(root, 'dist', modulePath.replace(/\.ts$/, '.js')), [], {
    execArgv: [...startNodeFlags(), ...extra],
    env: { ...process.env, HISTORY_DIR: benchHistoryDir(), ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** Fork a TypeScript module (through tsx) with an IPC channel. */
export function forkTs(modulePath: string, env: Record<string, string> = {}): ChildProcess {
  return fork(modulePath, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, HISTORY_DIR: benchHistoryDir(), ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** The next IPC message of `child` satisfying `pred`, or a rejection after `timeoutMs` / on exit. */
export function nextMessage<T>(child: ChildProcess, pred: (m: any) => boolean, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no message from the child within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMsg = (m: unknown) => {
      if (pred(m)) {
        cleanup();
        resolve(m as T);
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`child exited (${code})`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMsg);
      child.off('exit', onExit);
    };
    child.on('message', onMsg);
    child.on('exit', onExit);
  });
}

/** Ask the child with `{type}` and await its `{type, ...}` answer. */
export async function ask<T>(child: ChildProcess, type: string, timeoutMs = 30_000, extra: Record<string, unknown> = {}): Promise<T> {
  const p = nextMessage<T>(child, (m) => m && m.type === type, timeoutMs);
  child.send({ type, ...extra });
  return p;
}

/** Stop a child: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(t);
}

/** Resident set size of process `pid`, bytes (Linux /proc/<pid>/status VmRSS); NaN elsewhere. */
export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Time `fn` `n` times; milliseconds of each run. */
export function timeRuns(n: number, fn: () => void): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn();
    out.push(performance.now() - t0);
  }
  return out;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One answer of a REST poll: when it was received (ms, performance clock) and the observation it showed (Unix ms). */
export interface ObservationPoll {
  readonly receivedAt: number;
  readonly obsMs: number;
}

/**
 * Frame -> REST visibility (freshness.ts, liveRate.ts): the first answer showing each new observation (`firsts`), and
 * per stamped frame (exchange timestamp `frameTs[i]`, Unix ms, written to the service's socket at `frameAt[i]`, in
 * write order, so with non-decreasing timestamps: one socket, in order) the latency to the first answer whose
 * observation reaches its timestamp; `invisible` counts the frames no answer reached.
 */
export function frameLatencies(frameTs: Float64Array, frameAt: Float64Array, n: number, polls: readonly ObservationPoll[]): { latencies: number[]; firsts: ObservationPoll[]; invisible: number } {
  const firsts: ObservationPoll[] = [];
  for (const p of polls) if (firsts.length === 0 || p.obsMs > firsts[firsts.length - 1]!.obsMs) firsts.push(p);
  const latencies: number[] = [];
  let invisible = 0;
  let j = 0;
  for (let i = 0; i < n; i++) {
    while (j < firsts.length && firsts[j]!.obsMs < frameTs[i]!) j++;
    if (j >= firsts.length) invisible++;
    else latencies.push(firsts[j]!.receivedAt - frameAt[i]!);
  }
  return { latencies, firsts, invisible };
}

/**
 * Wait until the service at `url` answers GET /ready with 200.
 * @throws Error when it does not within `timeoutMs` (default 300 s)
 */
export async function waitReady(url: string, timeoutMs = 300_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await fetch(`${url}/ready`)).status !== 200) {
    if (Date.now() > until) throw new Error(`service not ready within ${timeoutMs / 1000} s`);
    await sleep(1_000);
  }
}
