/**
 * Child process of the freshness and memory benchmarks: the whole service (src/service.ts
 * startService) configured from the environment like `npm start` (PORT 0, silent logs), with
 * optional overrides: BENCH_SIM_OPTION_RATE (option ticker refreshes per second, all three
 * simulated exchanges) and BENCH_DERIBIT_URL (the Deribit feed's URL).
 * With BENCH_BASELINE=1 it only loads the service's modules and idles (the memory floor).
 *
 * IPC: sends `{type: 'ready', url, simulatorPid}` once listening (simulatorPid: the simulators' own process,
 * SIMULATOR_PROCESS=separate, the default); answers `{type: 'stats'}` with its memory and CPU usage
 * (process.cpuUsage, µs: the service's threads, its calibration workers included; and the main thread's event-loop
 * utilization, performance.eventLoopUtilization), feed counters, the
 * simulator process's own figures, the calibration pool's and the history recorder's (src/history/recorder.ts). Stops on
 * SIGTERM.
 */
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { startService, type RunningService } from '../src/service.js';

async function main(): Promise<void> {
  if (process.env.BENCH_BASELINE === '1') {
    process.send!({ type: 'ready', url: null });
    process.on('message', (m: { type?: string }) => {
      if (m?.type === 'stats') process.send!({ type: 'stats', memory: process.memoryUsage(), cpu: process.cpuUsage(), feeds: [] });
    });
    process.on('SIGTERM', () => process.exit(0));
    setInterval(() => undefined, 1 << 30);
    return;
  }
  const config = loadConfig({ LOG_LEVEL: 'silent', ...process.env, PORT: '0' });
  const rate = Number(process.env.BENCH_SIM_OPTION_RATE ?? '');
  const sim = Number.isFinite(rate) && rate > 0 ? { optionUpdatesPerSecond: rate } : {};
  const deribitUrl = process.env.BENCH_DERIBIT_URL;
  const svc: RunningService = await startService(config, pino({ level: 'silent' }), {
    simulator: sim,
    okxSimulator: sim,
    bybitSimulator: sim,
    // the freshness run: the Deribit feed reads the parent's simulator through its timing proxy
    ...(deribitUrl ? { deribit: { url: deribitUrl } } : {}),
  });
  process.send!({ type: 'ready', url: svc.url, simulatorPid: svc.simulatorProcess?.pid ?? null, calibrationWorkers: svc.calibration.size });
  process.on('message', (m: { type?: string }) => {
    if (m?.type !== 'stats') return;
    // elu: the main thread's event-loop utilization so far (the API, the stream hub and the sockets run there)
    const mine = { memory: process.memoryUsage(), cpu: process.cpuUsage(), elu: performance.eventLoopUtilization() };
    void (svc.simulatorProcess?.stats() ?? Promise.resolve(null)).then(
      (simProcess) =>
        process.send!({
          type: 'stats',
          ...mine,
          feeds: svc.feeds.map((f) => f.stats()),
          surfaces: svc.cache.allSurfaces().length,
          simulator: svc.simulator?.stats() ?? null,
          simulatorProcess: simProcess,
          pool: svc.calibration.stats(),
          history: svc.history.recorder ? { ...svc.history.recorder.stats } : null,
        }),
      (err: Error) => process.send!({ type: 'stats', ...mine, feeds: svc.feeds.map((f) => f.stats()), surfaces: svc.cache.allSurfaces().length, error: err.message }),
    );
  });
  const stop = () => {
    svc.stop().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('disconnect', stop);
}

main().catch((err) => {
  process.stderr.write(`serviceChild: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
