/**
 * Benchmark of issue 22, "keep up with the real exchange rate": the service process ALONE (`MARKET_SOURCE=live`,
 * `SOURCES=DERIBIT`, its four pairs, about 2,300 options) against a Deribit-protocol server in another process (this
 * benchmark's: the Deribit simulator, behind the frame-stamping proxy of the fault tests), at 1x, 5x and 10x the
 * simulated rate (BENCH_LIVE_RATES, default "1,5,10"; 1 = every option re-marked once a second, 10 = Deribit's
 * `ticker.{instrument}.100ms` maximum).
 *
 * Per rate, after /ready and a warm-up (BENCH_LIVE_WARMUP_S, default 20 s):
 * - a quiet window (BENCH_LIVE_WINDOW_S, default 60 s; nothing polls the service): its CPU (process.cpuUsage of the
 *   child, every thread: main, calibration workers), RSS sampled every 5 s (max and the slope of a least-squares line
 *   through the samples, MB per minute: queue growth shows as a steady slope), the option tickers ingested per second
 *   and the expiry slices refitted, confirmed (kept without refit: within the tracking tolerance) and deferred per
 *   second (volsurf_slice_fits_total);
 * - a lag window (20 s): GET /surface (BTC/USD, SVI) polled every 10 ms; every BTC ticker frame is stamped when the
 *   proxy writes it to the service's socket; its lag is the first answer whose `observationTimestamp` reaches the
 *   frame's exchange timestamp, minus that instant (the tick reflected: confirmed or refitted), p50/p99;
 * - material moves: 2 vol pt parallel shifts of one BTC expiry (BENCH_LIVE_SHIFTS, default 40), iV/byStrike polled
 *   every 2 ms, from the last frame of the move to the answer that shows half of it (freshness.ts materialMoves).
 * Goals (issue 22): 1x < 0.15 core and < 250 MB; 10x < 0.5 core and RSS flat; a move visible p99 < 50 ms at 1x,
 * < 100 ms at 10x; every tick in the surface's observationTimestamp within 100 ms p99.
 */
import { performance } from 'node:perf_hooks';
import { startDeribitSimulator } from '../adapters/simulator/deribitServer.js';
import { WsProxy, freePort } from '../test/faults/wsProxy.js';
import { materialMoves } from './freshness.js';
import { QUICK, ask, forkBuilt, frameLatencies, nextMessage, quantile, sleep, stopChild, waitReady, type BenchRow } from './lib.js';

const now = () => performance.timeOrigin + performance.now();

interface ChildStats {
  readonly memory: NodeJS.MemoryUsage;
  readonly cpu: NodeJS.CpuUsage;
  readonly feeds: ReadonlyArray<{ messages: number }>;
}

/** Sum of volsurf_slice_fits_total per outcome in a Prometheus text exposition. */
function sliceFits(text: string): Record<string, number> {
  const out: Record<string, number> = { refitted: 0, confirmed: 0, deferred: 0 };
  for (const line of text.split('\n')) {
    if (!line.startsWith('volsurf_slice_fits_total{')) continue;
    const m = /outcome="([a-z]+)"\}\s+([0-9.e+]+)/.exec(line);
    if (m) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
  }
  return out;
}

/** Option ticker messages received by the feeds so far (the feed stats' message counter). */
function messages(s: ChildStats): number {
  let n = 0;
  for (const f of s.feeds) n += f.messages;
  return n;
}

/** Least-squares slope of y against x. */
function slope(x: readonly number[], y: readonly number[]): number {
  const n = x.length;
  if (n < 2) return 0;
  const mx = x.reduce((a, b) => a + b, 0) / n;
  const my = y.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (x[i]! - mx) * (y[i]! - my);
    sxx += (x[i]! - mx) ** 2;
  }
  return sxx > 0 ? sxy / sxx : 0;
}

async function one(rate: number): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const simPort = await freePort();
  const sim = await startDeribitSimulator({ port: simPort, host: '127.0.0.1', optionUpdatesPerSecond: rate });
  const proxy = await WsProxy.start(simPort);
  const cap = 4_000_000;
  const frameTs = new Float64Array(cap);
  const frameAt = new Float64Array(cap);
  let n = 0;
  let recording = false;
  let watcher: ((text: string, at: number) => void) | null = null;
  proxy.tap = (text) => {
    if (watcher) watcher(text, now());
    if (!recording || n >= cap) return;
    if (!text.startsWith('{"jsonrpc":"2.0","method":"subscription"') || !text.includes('"ticker.BTC-')) return;
    const m = /"timestamp":(\d+)/.exec(text);
    if (!m) return;
    frameTs[n] = Number(m[1]);
    frameAt[n] = now();
    n++;
  };
  const notes: string[] = [];
  const child = forkBuilt('bench/serviceChild.ts', {
    MARKET_SOURCE: 'live',
    SOURCES: 'DERIBIT',
    DERIBIT_WS_URL: proxy.url(),
    RATE_LIMIT_MAX: '0',
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
  });
  try {
    const { url } = await nextMessage<{ url: string }>(child, (m) => m?.type === 'ready', 120_000);
    const surfaceUrl = `${url}/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI`;
    await waitReady(url);
    const warmS = Number(process.env.BENCH_LIVE_WARMUP_S ?? (QUICK ? 10 : 20));
    await sleep(warmS * 1000);
    const windowS = Number(process.env.BENCH_LIVE_WINDOW_S ?? (QUICK ? 15 : 60));
    const s0 = await ask<ChildStats>(child, 'stats');
    const f0 = sliceFits(await (await fetch(`${url}/metrics`)).text());
    const t0 = now();
    const rssT: number[] = [];
    const rssMb: number[] = [];
    while (now() - t0 < windowS * 1000) {
      await sleep(5_000);
      const s = await ask<ChildStats>(child, 'stats');
      rssT.push((now() - t0) / 60_000);
      rssMb.push(s.memory.rss / 1e6);
    }
    const s1 = await ask<ChildStats>(child, 'stats');
    const f1 = sliceFits(await (await fetch(`${url}/metrics`)).text());
    const el = (now() - t0) / 1000;
    const cores = (s1.cpu.user + s1.cpu.system - s0.cpu.user - s0.cpu.system) / 1e6 / el;
    const ticksPerS = (messages(s1) - messages(s0)) / el;
    const per = (k: string) => ((f1[k] ?? 0) - (f0[k] ?? 0)) / el;
    const rssMax = Math.max(...rssMb, s1.memory.rss / 1e6);
    const rssSlope = slope(rssT, rssMb);

    // lag window: every BTC tick -> the surface's observationTimestamp
    const obs: Array<{ receivedAt: number; obsMs: number }> = [];
    recording = true;
    const l0 = now();
    while (now() - l0 < (QUICK ? 8_000 : 20_000)) {
      const sentAt = now();
      const r = await fetch(surfaceUrl);
      const text = await r.text();
      const m = /"observationTimestamp":([0-9.e+]+)/.exec(text);
      if (r.status === 200 && m) obs.push({ receivedAt: now(), obsMs: Math.round(Number(m[1]) * 1000) });
      const wait = 10 - (now() - sentAt);
      if (wait > 0) await sleep(wait);
    }
    recording = false;
    const tailEnd = now() + 2_000;
    while (now() < tailEnd) {
      const r = await fetch(surfaceUrl);
      const m = /"observationTimestamp":([0-9.e+]+)/.exec(await r.text());
      if (r.status === 200 && m) obs.push({ receivedAt: now(), obsMs: Math.round(Number(m[1]) * 1000) });
      await sleep(10);
    }
    const { latencies: lag, firsts } = frameLatencies(frameTs, frameAt, n, obs);
    const shifts = Number(process.env.BENCH_LIVE_SHIFTS ?? (QUICK ? 10 : 40));
    const moves = await materialMoves({ sim, url, watch: (f) => (watcher = f) }, shifts, 400, 2, 2);
    if (moves.missed > 0) notes.push(`live rate ${rate}x: ${moves.missed} of ${shifts} 2 vol pt shifts not visible within 3 s`);
    const label = `live Deribit (4 pairs), ${rate}x (${rate} re-mark/s per option)`;
    const moveLimit = rate <= 1 ? 50 : 100;
    const coreLimit = rate <= 1 ? 0.15 : rate >= 10 ? 0.5 : null;
    const common = { ticksPerS, refitsPerS: per('refitted'), confirmsPerS: per('confirmed'), deferredPerS: per('deferred'), windowS: el };
    return {
      notes,
      rows: [
        {
          section: 'live-rate',
          name: `${label}: service CPU`,
          value: cores,
          unit: 'cores',
          limit: null,
          limitName: null,
          ratio: null,
          target: coreLimit === null ? null : `< ${coreLimit} core`,
          met: coreLimit === null ? null : cores < coreLimit,
          extra: common,
        },
        {
          section: 'live-rate',
          name: `${label}: service RSS max`,
          value: rssMax,
          unit: 'MB',
          limit: null,
          limitName: null,
          ratio: null,
          target: rate <= 1 ? '< 250 MB' : `flat (slope ${rssSlope.toFixed(2)} MB/min over ${el.toFixed(0)} s)`,
          met: rate <= 1 ? rssMax < 250 : null,
          extra: { rssSlopeMbPerMin: rssSlope, samples: rssMb.length },
        },
        {
          section: 'live-rate',
          name: `${label}: slices refitted per second (vs ${ticksPerS.toFixed(0)} ticks/s)`,
          value: per('refitted'),
          unit: '/s',
          limit: null,
          limitName: null,
          ratio: null,
          target: null,
          met: null,
          extra: common,
        },
        {
          section: 'live-rate',
          name: `${label}: every BTC tick -> surface observationTimestamp: p99`,
          value: quantile(lag, 0.99),
          unit: 'ms',
          limit: null,
          limitName: null,
          ratio: null,
          target: 'p99 < 100 ms',
          met: quantile(lag, 0.99) < 100,
          extra: { p50Ms: quantile(lag, 0.5), frames: n, surfacesSeen: firsts.length },
        },
        {
          section: 'live-rate',
          name: `${label}: material move (2 vol pt shift of one expiry) -> REST: p99`,
          value: quantile(moves.fromLast, 0.99),
          unit: 'ms',
          limit: null,
          limitName: null,
          ratio: null,
          target: `p99 < ${moveLimit} ms`,
          met: moves.missed === 0 && quantile(moves.fromLast, 0.99) < moveLimit,
          extra: { p50Ms: quantile(moves.fromLast, 0.5), shifts, missed: moves.missed, expiry: moves.expiry },
        },
      ],
    };
  } finally {
    await stopChild(child);
    await proxy.close();
    await sim.close();
  }
}

/** Run the live-rate benchmark at each rate of BENCH_LIVE_RATES (default 1, 5, 10); rows for the table. */
export async function runLiveRate(): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const rates = (process.env.BENCH_LIVE_RATES ?? '1,5,10').split(',').map(Number).filter((x) => Number.isFinite(x) && x > 0);
  const rows: BenchRow[] = [];
  const notes: string[] = [];
  for (const rate of rates) {
    const r = await one(rate);
    rows.push(...r.rows);
    notes.push(...r.notes);
  }
  return { rows, notes };
}
