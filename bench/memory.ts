/**
 * Benchmark 5, memory: resident set size (RSS, /proc/<pid>/status VmRSS) of the service process
 * after BENCH_SOAK_S seconds (default 600 = 10 minutes; 30 with BENCH_QUICK=1) at full simulated rate
 * with 24 h of history held.
 *
 * The service runs in a child process exactly as `npm start` does (MARKET_SOURCE=simulated: the
 * embedded Deribit simulator in the same process, the calibration worker thread), with
 * SIM_HISTORY_HOURS=24 (the simulator pre-runs 24 h of market and seeds the iVSummary 24 h history;
 * the feed bootstraps 7 days of hourly funding) and every option refreshed BENCH_SIM_OPTION_RATE
 * times per second (default 1, the simulator's default as `npm start` runs it; 10 is the 100 ms
 * channel's maximum). RSS is sampled every 5 s; the figure
 * is the last sample, the peak is reported beside it.
 * Limit: the RSS of the same Node process with the service's modules loaded and no market data
 * (BENCH_BASELINE=1), the floor of any run; ratio = floor / figure.
 */
import { join } from 'node:path';
import { QUICK, ask, forkTs, nextMessage, rssOf, sleep, stopChild, type BenchRow } from './lib.js';

const here = new URL('.', import.meta.url).pathname;
const MB = 1024 * 1024;

interface Stats {
  memory: NodeJS.MemoryUsage;
  feeds: Array<{ messages: number; reconnects: number; dropped: Record<string, number> }>;
  surfaces: number;
}

async function baselineRss(): Promise<number> {
  const child = forkTs(join(here, 'serviceChild.ts'), { BENCH_BASELINE: '1' });
  try {
    await nextMessage(child, (m) => m?.type === 'ready', 120_000);
    await sleep(2_000);
    return rssOf(child.pid!);
  } finally {
    await stopChild(child);
  }
}

/** Run the memory soak; rows for the table. */
export async function runMemory(): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const soakS = Number(process.env.BENCH_SOAK_S ?? (QUICK ? 30 : 600));
  const rate = Number(process.env.BENCH_SIM_OPTION_RATE ?? 1);
  const notes: string[] = [];
  const floor = await baselineRss();
  const child = forkTs(join(here, 'serviceChild.ts'), {
    MARKET_SOURCE: 'simulated',
    SIM_HISTORY_HOURS: '24',
    BENCH_SIM_OPTION_RATE: String(rate),
    RATE_LIMIT_MAX: '0',
  });
  try {
    const { url } = await nextMessage<{ url: string }>(child, (m) => m?.type === 'ready', 600_000);
    const until = Date.now() + 300_000;
    while ((await fetch(`${url}/ready`)).status !== 200) {
      if (Date.now() > until) throw new Error('service not ready within 300 s');
      await sleep(1_000);
    }
    const first = await ask<Stats>(child, 'stats');
    const t0 = Date.now();
    const samples: number[] = [];
    let peak = 0;
    while (Date.now() - t0 < soakS * 1000) {
      await sleep(5_000);
      const rss = rssOf(child.pid!);
      samples.push(rss);
      peak = Math.max(peak, rss);
    }
    const last = await ask<Stats>(child, 'stats');
    const rss = rssOf(child.pid!);
    const elapsedS = (Date.now() - t0) / 1000;
    const msgs = (last.feeds[0]?.messages ?? 0) - (first.feeds[0]?.messages ?? 0);
    const iv = await fetch(`${url}/api/v1/global/data/iVSummary?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI`);
    const ivBody = iv.status === 200 ? ((await iv.json()) as Record<string, unknown>) : null;
    const hasDiffs = ivBody ? /"diff[A-Za-z]*":-?[0-9]/.test(JSON.stringify(ivBody)) : false;
    if (!hasDiffs) notes.push('memory: the iVSummary answer carried no 24 h change (history not seeded?): SIM_HISTORY_HOURS may not be supported by this build');
    return {
      notes,
      rows: [
        {
          section: 'memory',
          name: `RSS after ${Math.round(elapsedS)} s, simulated market (${rate} refresh/s per option), 24 h history`,
          value: rss / MB,
          unit: 'MB',
          limit: floor / MB,
          limitName: 'same process, modules loaded, no data',
          ratio: floor / rss,
          target: 'RSS < 400 MB',
          met: rss / MB < 400,
          extra: {
            peakRssMb: Math.max(peak, rss) / MB,
            heapUsedMb: last.memory.heapUsed / MB,
            heapTotalMb: last.memory.heapTotal / MB,
            externalMb: last.memory.external / MB,
            feedMessagesPerS: msgs / elapsedS,
            reconnects: last.feeds[0]?.reconnects ?? 0,
            surfaces: last.surfaces,
            soakS: elapsedS,
            optionUpdatesPerSecond: rate,
            ivSummary24hChanges: hasDiffs ? 'yes' : 'no',
          },
        },
      ],
    };
  } finally {
    await stopChild(child, 10_000);
  }
}
