/**
 * Child-process entry of the simulated exchanges (SIMULATOR_PROCESS=separate, the default of simulated mode;
 * forked by adapters/simulator/processClient.ts), so that the service's own CPU and memory are measured apart
 * from the simulators'.
 *
 * IPC (JSON): parent -> `{ type: 'start', options: SimulatorProcessOptions }`; child -> `{ type: 'ready',
 * endpoints: SimulatorEndpoints, pid }` or `{ type: 'failed', error }`. Parent -> `{ type: 'stats' }`; child ->
 * `{ type: 'stats', memory, cpu, deribit, okx, bybit }` (process.memoryUsage(), process.cpuUsage() in µs, each
 * simulator's counters). Parent -> `{ type: 'stop' }`: close the simulators and exit 0. The child also exits when
 * the IPC channel closes (the service died), so it never outlives the service.
 */
import { prerunMarket } from './prerun.js';
import { startSimulatedExchanges, type SimulatedExchanges } from './exchanges.js';
import type { SimulatorProcessOptions } from './processClient.js';

let running: SimulatedExchanges | null = null;
let stopping = false;

async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    await running?.close().catch(() => undefined);
  }
  process.exit(code);
}

process.on('message', (m: { type?: string; options?: SimulatorProcessOptions }) => {
  if (m?.type === 'start' && m.options && !running) {
    const o = m.options;
    const offsetMs = o.clockOffsetMs ?? 0;
    const clock = (): number => Date.now() + offsetMs;
    const market = o.history ? prerunMarket(o.history.spec, o.history.steps, clock) : undefined;
    startSimulatedExchanges({ sources: o.sources, seed: o.seed, clock, ...(market ? { market } : {}), deribit: o.deribit ?? {}, okx: o.okx ?? {}, bybit: o.bybit ?? {} }).then(
      (r) => {
        running = r;
        process.send!({ type: 'ready', endpoints: r.endpoints, pid: process.pid });
      },
      (err: Error) => {
        process.send!({ type: 'failed', error: err?.stack ?? String(err) });
        void stop(1);
      },
    );
  } else if (m?.type === 'stats') {
    process.send!({
      type: 'stats',
      memory: process.memoryUsage(),
      cpu: process.cpuUsage(),
      deribit: running?.deribit?.stats() ?? null,
      okx: running?.okx?.stats() ?? null,
      bybit: running?.bybit?.stats() ?? null,
    });
  } else if (m?.type === 'stop') {
    void stop(0);
  }
});
process.on('disconnect', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
process.on('SIGINT', () => undefined); // the service forwards shutdown through 'stop' / disconnect
