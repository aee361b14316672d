/**
 * Benchmark 5, memory: resident set size (RSS, /proc/<pid>/status VmRSS) of the service process
 * after BENCH_SOAK_S seconds (default 600 = 10 minutes; 30 with BENCH_QUICK=1) at full simulated rate
 * with 24 h of history held.
 *
 * The service runs in a child process exactly as `npm start` does (MARKET_SOURCE=simulated: the three
 * simulated exchanges in their own process, SIMULATOR_PROCESS=separate; the calibration worker pool), with
 * SIM_HISTORY_HOURS=24 (the simulator pre-runs 24 h of market and seeds the iVSummary 24 h history;
 * the feed bootstraps 7 days of hourly funding) and every option refreshed BENCH_SIM_OPTION_RATE
 * times per second (default 1, the simulator's default as `npm start` runs it; 10 is the 100 ms
 * channel's maximum). RSS is sampled every 5 s; the figure
 * is the last sample, the peak is reported beside it. The service's CPU (process.cpuUsage over the soak, every
 * thread: ingest, REST, calibration workers) and the simulator process's RSS and CPU are reported beside it
 * (issue 12 targets: the service alone < 0.5 core and < 300 MB).
 * Limit: the RSS of the same Node process with the service's modules loaded and no market data
 * (BENCH_BASELINE=1), the floor of any run; ratio = floor / figure.
 */
import { QUICK, ask, forkBuilt, nextMessage, rssOf, sleep, stopChild, type BenchRow } from './lib.js';

const MB = 1024 * 1024;

interface Stats {
  memory: NodeJS.MemoryUsage;
  /** process.cpuUsage() of the service, µs. */
  cpu: NodeJS.CpuUsage;
  feeds: Array<{ messages: number; reconnects: number; dropped: Record<string, number> }>;
  surfaces: number;
  simulatorProcess: { memory: NodeJS.MemoryUsage; cpu: NodeJS.CpuUsage } | null;
}

const cpuUs = (c: NodeJS.CpuUsage | undefined): number => (c ? c.user + c.system : Number.NaN);

async function baselineRss(): Promise<number> {
  const child = forkBuilt('bench/serviceChild.ts', { BENCH_BASELINE: '1' });
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
  const child = forkBuilt('bench/serviceChild.ts', {
    MARKET_SOURCE: 'simulated',
    SIM_HISTORY_HOURS: '24',
    BENCH_SIM_OPTION_RATE: String(rate),
    RATE_LIMIT_MAX: '0',
  });
  try {
    const { url, simulatorPid, calibrationWorkers: workers } = await nextMessage<{ url: string; simulatorPid: number | null; calibrationWorkers: number }>(child, (m) => m?.type === 'ready', 600_000);
    const until = Date.now() + 300_000;
    while ((await fetch(`${url}/ready`)).status !== 200) {
      if (Date.now() > until) throw new Error('service not ready within 300 s');
      await sleep(1_000);
    }
    const first = await ask<Stats>(child, 'stats');
    const t0 = Date.now();
    const samples: number[] = [];
    let peak = 0;
    let simPeak = 0;
    while (Date.now() - t0 < soakS * 1000) {
      await sleep(5_000);
      const rss = rssOf(child.pid!);
      samples.push(rss);
      peak = Math.max(peak, rss);
      if (simulatorPid) simPeak = Math.max(simPeak, rssOf(simulatorPid));
    }
    const last = await ask<Stats>(child, 'stats');
    const rss = rssOf(child.pid!);
    const simRss = simulatorPid ? rssOf(simulatorPid) : Number.NaN;
    const elapsedS = (Date.now() - t0) / 1000;
    const cores = (cpuUs(last.cpu) - cpuUs(first.cpu)) / (elapsedS * 1e6);
    const simCores = (cpuUs(last.simulatorProcess?.cpu) - cpuUs(first.simulatorProcess?.cpu)) / (elapsedS * 1e6);
    const msgs = last.feeds.reduce((a, f) => a + f.messages, 0) - first.feeds.reduce((a, f) => a + f.messages, 0);
    const iv = await fetch(`${url}/api/v1/global/data/iVSummary?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI`);
    const ivBody = iv.status === 200 ? ((await iv.json()) as Record<string, unknown>) : null;
    const hasDiffs = ivBody ? /"diff[A-Za-z]*":-?[0-9]/.test(JSON.stringify(ivBody)) : false;
    if (!hasDiffs) notes.push('memory: the iVSummary answer carried no 24 h change (history not seeded?): SIM_HISTORY_HOURS may not be supported by this build');
    if (!simulatorPid) notes.push('memory: the simulators ran inside the service process (SIMULATOR_PROCESS=inprocess): the service figures include them');
    const simulators: Record<string, number> = simulatorPid ? { simulatorsRssMb: simRss / MB, simulatorsPeakRssMb: simPeak / MB, simulatorsCores: simCores } : {};
    const rows: BenchRow[] = [
      {
        section: 'memory',
        name: `service alone (simulators in their own process): RSS after ${Math.round(elapsedS)} s, ${rate} refresh/s per option, 24 h history`,
        value: rss / MB,
        unit: 'MB',
        limit: floor / MB,
        limitName: 'same process, modules loaded, no data',
        ratio: floor / rss,
        target: 'RSS < 300 MB',
        met: rss / MB < 300,
        extra: {
          peakRssMb: Math.max(peak, rss) / MB,
          heapUsedMb: last.memory.heapUsed / MB,
          heapTotalMb: last.memory.heapTotal / MB,
          externalMb: last.memory.external / MB,
          ...simulators,
          feedMessagesPerS: msgs / elapsedS,
          reconnects: last.feeds.reduce((a, f) => a + f.reconnects, 0),
          surfaces: last.surfaces,
          soakS: elapsedS,
          optionUpdatesPerSecond: rate,
          calibrationWorkers: workers,
          ivSummary24hChanges: hasDiffs ? 'yes' : 'no',
        },
      },
      {
        section: 'memory',
        name: `service alone: CPU over the same ${Math.round(elapsedS)} s (nobody asking; all its threads)`,
        value: cores,
        unit: 'cores',
        limit: null,
        limitName: null,
        ratio: null,
        target: '< 0.5 core',
        met: cores < 0.5,
        extra: { ...simulators, feedMessagesPerS: msgs / elapsedS },
      },
    ];
    if (simulatorPid) {
      rows.push({
        section: 'memory',
        name: 'the simulators (three exchanges, their own process): RSS beside the service',
        value: simRss / MB,
        unit: 'MB',
        limit: null,
        limitName: null,
        ratio: null,
        target: null,
        met: null,
        extra: { cores: simCores, peakRssMb: simPeak / MB },
      });
    }
    return { notes, rows };
  } finally {
    await stopChild(child, 10_000);
  }
}
