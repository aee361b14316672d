/**
 * Run the simulated exchanges in their own child process (SIMULATOR_PROCESS=separate; entry
 * adapters/simulator/process.ts) and reach them over IPC: where they listen, their CPU, memory and counters,
 * and stopping them. The fault hooks of the simulators are in-process objects and are NOT reachable this way
 * (tests run SIMULATOR_PROCESS=inprocess).
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Source } from '../../src/domain/markets.js';
import { isTypeScript, siblingModule } from '../../src/domain/moduleFile.js';
import type { PrerunSpec } from './prerun.js';
import type { SimulatorEndpoints } from './exchanges.js';
import type { DeribitSimulatorOptions } from './deribitServer.js';
import type { OkxSimulatorOptions } from './okxServer.js';
import type { BybitSimulatorOptions } from './bybitServer.js';

/** Plain-data (JSON) simulator options: functions, clocks and markets cannot cross the process boundary. */
type Plain<T> = { [K in keyof T as NonNullable<T[K]> extends number | string | boolean ? K : never]?: T[K] };

/** What the simulator process runs. */
export interface SimulatorProcessOptions {
  readonly sources: readonly Source[];
  readonly seed: number;
  /** The simulators' clock = the machine's wall clock + this many ms (the parent service's simulated clock,
   * SIM_START_TIME, crosses the process boundary as this offset; both processes read the same wall clock). Default 0. */
  readonly clockOffsetMs?: number;
  /** Pre-run the market through this history (adapters/simulator/history.ts spec and steps), or none. */
  readonly history?: { readonly spec: PrerunSpec; readonly steps: number };
  readonly deribit?: Plain<DeribitSimulatorOptions>;
  readonly okx?: Plain<OkxSimulatorOptions>;
  readonly bybit?: Plain<BybitSimulatorOptions>;
}

/** Figures of the simulator process. */
export interface SimulatorProcessStats {
  readonly memory: NodeJS.MemoryUsage;
  /** process.cpuUsage() of the child, µs. */
  readonly cpu: NodeJS.CpuUsage;
  readonly deribit: unknown;
  readonly okx: unknown;
  readonly bybit: unknown;
}

/** The running simulator process. */
export interface SimulatorProcess {
  readonly pid: number;
  readonly endpoints: SimulatorEndpoints;
  /** @throws Error (rejected promise) when the process does not answer within 10 s or has exited */
  stats(): Promise<SimulatorProcessStats>;
  /** Stop the simulators and the process (SIGKILL after 5 s). */
  close(): Promise<void>;
}

function awaitMessage<T>(child: ChildProcess, type: string, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`simulator process: no '${type}' within ${timeoutMs} ms`)), timeoutMs);
    const onMsg = (m: { type?: string; error?: string }) => {
      if (m?.type === type) done(null, m as T);
      else if (m?.type === 'failed') done(new Error(`simulator process failed: ${m.error}`));
    };
    const onExit = (code: number | null) => done(new Error(`simulator process exited (${code})`));
    const done = (err: Error | null, v?: T) => {
      clearTimeout(timer);
      child.off('message', onMsg);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve(v!);
    };
    child.on('message', onMsg);
    child.on('exit', onExit);
  });
}

/**
 * Fork the simulator process and start the exchanges of `opts`; resolves once they listen.
 * @throws Error (rejected promise) when the process fails to start them within 120 s
 */
export async function startSimulatorProcess(opts: SimulatorProcessOptions): Promise<SimulatorProcess> {
  const entry = siblingModule('./process', import.meta.url);
  // TypeScript sources through tsx's loader, resolved from this package (not from the working directory); the build's
  // JavaScript as it is
  const execArgv = isTypeScript(entry) ? ['--import', import.meta.resolve('tsx')] : [];
  const child = fork(entry, [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'json' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    const ready = awaitMessage<{ endpoints: SimulatorEndpoints }>(child, 'ready', 120_000);
    child.send({ type: 'start', options: opts });
    const { endpoints } = await ready;
    return {
      pid: child.pid!,
      endpoints,
      async stats() {
        if (child.exitCode !== null || !child.connected) throw new Error('simulator process has exited');
        const p = awaitMessage<SimulatorProcessStats>(child, 'stats', 10_000);
        child.send({ type: 'stats' });
        return p;
      },
      async close() {
        if (child.exitCode !== null || child.signalCode !== null) return;
        if (child.connected) child.send({ type: 'stop' });
        const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(t);
      },
    };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
}
