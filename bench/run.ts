/**
 * `npm run bench`: the benchmark suite of issue 8 (not part of `npm test`). Prints a table on stdout
 * and writes bench/results/latest.json (gitignored). Each figure is measured beside its physical
 * limit in the same run and reported as a ratio too; see docs/operations.md "Benchmarks" for how to
 * read it.
 *
 * Sections (bench/<section>.ts): ingest, calibration, quality (bench/calibrationQuality.ts: fit quality on the
 * real chains against the reference fits), rest, freshness, reconnect, memory, streaming (the WebSocket API with
 * 1, 100 and 1,000 clients; BENCH_ONLY=streaming runs it alone), live-rate (bench/liveRate.ts, issue 22: the service
 * alone, live against a Deribit-protocol server at 1x, 5x and 10x the simulated rate; BENCH_LIVE_RATES), history
 * (bench/history.ts, issue 24: the store's write cost and bytes per day, as-of vanilla, 30 days of series, restart;
 * BENCH_HISTORY_WINDOW_S, BENCH_HISTORY_DAYS).
 * Environment:
 * - BENCH_QUICK=1: short runs (a smoke check; figures indicative only);
 * - BENCH_ONLY=ingest,calibration,...: run only these sections;
 * - BENCH_SOAK_S: memory soak length, s (default 600; 30 when quick);
 * - BENCH_SIM_OPTION_RATE: simulated option refreshes per second per option (default 1, as `npm start`; the
 *   freshness section runs 1 and 5 unless it is set, or BENCH_FRESHNESS_RATES lists the rates);
 * - BENCH_RECONNECTS: socket drops of the reconnect section (default 5);
 * - BENCH_THROTTLES: CALIBRATION_THROTTLE_MS values of the freshness runs (default "250,50");
 * - BENCH_POLL_MS: REST poll interval of the freshness run (default 10);
 * - BENCH_STREAM_CLIENTS: client counts of the streaming section (default "1,100,1000"); BENCH_STREAM_WINDOW_S: its
 *   measuring window per run, s (default 20; 8 when quick); BENCH_STREAM_INTERVAL_MS: the clients' interval_ms.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { runCalibration } from './calibration.js';
import { runCalibrationQuality } from './calibrationQuality.js';
import { runFreshness } from './freshness.js';
import { runIngest } from './ingest.js';
import { runLiveRate } from './liveRate.js';
import { runMemory } from './memory.js';
import { runRest } from './rest.js';
import { runReconnect } from './reconnect.js';
import { runStreaming } from './streaming.js';
import { runHistory } from './history.js';
import { QUICK, machine, sig, table, type BenchRow } from './lib.js';

const SECTIONS = ['ingest', 'calibration', 'quality', 'rest', 'freshness', 'live-rate', 'reconnect', 'memory', 'streaming', 'history'] as const;

async function main(): Promise<void> {
  const only = (process.env.BENCH_ONLY ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const want = (s: string) => only.length === 0 || only.includes(s);
  const rows: BenchRow[] = [];
  const notes: string[] = [];
  const errors: string[] = [];
  let quality: { text: string; details: string } | null = null;
  const started = new Date().toISOString();
  const load0 = loadavg()[0]!;
  for (const s of SECTIONS) {
    if (!want(s)) continue;
    process.stderr.write(`bench: ${s}...\n`);
    const t0 = Date.now();
    try {
      if (s === 'ingest') rows.push(...runIngest());
      else if (s === 'calibration') rows.push(...runCalibration());
      else if (s === 'quality') quality = runCalibrationQuality();
      else {
        const r =
          s === 'rest' ? await runRest() : s === 'freshness' ? await runFreshness() : s === 'live-rate' ? await runLiveRate() : s === 'reconnect' ? await runReconnect() : s === 'streaming' ? await runStreaming() : s === 'history' ? await runHistory() : await runMemory();
        rows.push(...r.rows);
        notes.push(...r.notes);
      }
    } catch (err) {
      errors.push(`${s}: ${(err as Error).stack ?? String(err)}`);
    }
    process.stderr.write(`bench: ${s} done in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
  }
  const m = machine();
  process.stdout.write(`\nvol-surface-service benchmarks${QUICK ? ' (BENCH_QUICK=1: indicative only)' : ''}: ${m.cpus} x ${m.cpuModel}, node ${m.node}, load average ${sig(load0, 2)} -> ${sig(loadavg()[0], 2)}\n\n`);
  process.stdout.write(`${table(rows)}\n`);
  const extras = rows.filter((r) => r.extra && Object.keys(r.extra).length > 0);
  if (extras.length > 0) {
    process.stdout.write('\ndetails:\n');
    for (const r of extras) {
      const parts = Object.entries(r.extra!).map(([k, v]) => `${k}=${typeof v === 'number' ? sig(v) : v}`);
      process.stdout.write(`  ${r.section} | ${r.name}: ${parts.join(', ')}\n`);
    }
  }
  if (quality) process.stdout.write(`\n${quality.text}\n\nper expiry:\n${quality.details}\n`);
  const missed = rows.filter((r) => r.met === false);
  if (missed.length > 0) {
    process.stdout.write('\ntargets missed:\n');
    for (const r of missed) process.stdout.write(`  ${r.name}: ${sig(r.value)} ${r.unit} vs ${r.target}\n`);
  }
  for (const n of notes) process.stdout.write(`note: ${n}\n`);
  for (const e of errors) process.stdout.write(`ERROR in section ${e}\n`);
  const dir = new URL('./results/', import.meta.url).pathname;
  mkdirSync(dir, { recursive: true });
  const doc = { started, finished: new Date().toISOString(), quick: QUICK, machine: { ...m, loadavg1mAtStart: load0, loadavg1mAtEnd: loadavg()[0] }, rows, notes, errors, quality };
  writeFileSync(`${dir}latest.json`, `${JSON.stringify(doc, null, 2)}\n`);
  process.stdout.write(`\nwritten: bench/results/latest.json\n`);
  if (errors.length > 0) process.exitCode = 1;
}

main().catch((err) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
