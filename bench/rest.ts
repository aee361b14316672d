/**
 * Benchmark 3, REST over loopback with autocannon: vanilla with 1 and with 50 instruments, byStrike,
 * riskScenarios with 100 instruments, each beside a bare fastify route that takes the same request
 * body and answers a fixed JSON of the same size (bench/restChild.ts), all in one child process on
 * 127.0.0.1 (the production build with the node flags of `npm start`, bench/lib.ts forkBuilt) while autocannon runs
 * in this process (the machine's two cores: one each).
 *
 * Per route: requests/s, p50 and p99 latency at saturation (10 connections), ratio = route req/s /
 * bare req/s. Plus vanilla with 50 instruments at a fixed 1,000 requests/s (autocannon overallRate)
 * for the latency target (p99 < 5 ms at 1,000 req/s).
 */
import autocannon from 'autocannon';
type Result = Awaited<ReturnType<typeof autocannon>>;
import { QUICK, forkBuilt, nextMessage, stopChild, type BenchRow } from './lib.js';
import { REAL_CHAIN_FILE } from '../test/helpers/realChainCache.js';
import type { RestCase } from './restChild.js';


async function cannon(url: string, body: string, opts: { duration: number; connections: number; overallRate?: number }): Promise<Result> {
  return autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections: opts.connections,
    duration: opts.duration,
    ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
    timeout: 10,
  });
}

/** Run the REST benchmark; rows for the table (and notes for skipped routes). */
export async function runRest(): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const duration = QUICK ? 3 : 10;
  // the production build with the flags of `npm start`, as the service runs (the handlers without tsx's keepNames)
  const child = forkBuilt('bench/restChild.ts', { BENCH_REAL_CHAIN_FILE: REAL_CHAIN_FILE });
  const notes: string[] = [];
  const rows: BenchRow[] = [];
  try {
    const ready = await nextMessage<{ appPort: number; barePort: number; cases: RestCase[]; skipped: string[] }>(child, (m) => m?.type === 'ready', 120_000);
    for (const s of ready.skipped) notes.push(`REST route skipped: ${s}`);
    const app = `http://127.0.0.1:${ready.appPort}`;
    const bare = `http://127.0.0.1:${ready.barePort}`;
    for (const c of ready.cases) {
      await cannon(app + c.path, c.body, { duration: 1, connections: 10 }); // warm-up
      const r = await cannon(app + c.path, c.body, { duration, connections: 10 });
      await cannon(bare + c.barePath, c.body, { duration: 1, connections: 10 });
      const b = await cannon(bare + c.barePath, c.body, { duration, connections: 10 });
      const bad = r.non2xx + r.errors + r.timeouts;
      if (bad > 0) notes.push(`${c.name}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
      const ratio = r.requests.average / b.requests.average;
      const isVanilla1 = c.name.startsWith('vanilla, 1 ');
      const isScenarios = c.name.startsWith('riskScenarios');
      const targeted = isVanilla1 || isScenarios;
      rows.push({
        section: 'rest',
        name: `${c.name}: requests/s (10 connections)`,
        value: r.requests.average,
        unit: 'req/s',
        limit: b.requests.average,
        limitName: `bare route, same ${c.responseBytes} B answer`,
        ratio,
        target: targeted ? '>= 50% of the bare route' : null,
        met: targeted ? ratio >= 0.5 : null,
        extra: { p50Ms: r.latency.p50, p99Ms: r.latency.p99, bareP50Ms: b.latency.p50, bareP99Ms: b.latency.p99, responseBytes: c.responseBytes, requestBytes: c.body.length, requests: r.requests.total },
      });
      if (c.name.startsWith('vanilla, 50 ')) {
        const fixed = await cannon(app + c.path, c.body, { duration, connections: 10, overallRate: 1000 });
        const fixedBare = await cannon(bare + c.barePath, c.body, { duration, connections: 10, overallRate: 1000 });
        rows.push({
          section: 'rest',
          name: `${c.name}: p99 latency at 1,000 req/s`,
          value: fixed.latency.p99,
          unit: 'ms',
          limit: fixedBare.latency.p99,
          limitName: 'bare route p99 at 1,000 req/s',
          ratio: fixedBare.latency.p99 / Math.max(fixed.latency.p99, 1e-9),
          target: 'p99 < 5 ms at 1,000 req/s',
          met: fixed.latency.p99 < 5,
          extra: { p50Ms: fixed.latency.p50, achievedReqPerS: fixed.requests.average, non2xx: fixed.non2xx },
        });
      }
    }
  } finally {
    await stopChild(child);
  }
  return { rows, notes };
}
