/**
 * The main-thread side of the simulated 24 h history's worker (simulated mode only): the history of the twin market
 * is printed and fitted in a worker thread of its own (./historyWorker.ts, ./history.ts), apart from the production
 * calibration pool, whose worker never loads simulator code.
 */
import type { ChainFit } from '../../src/domain/chainFit.js';
import type { ChainFitOptions } from '../../src/quant/chain/chainFit.js';
import { WorkerChannel } from '../../streams/calibrationPool.js';
import type { HistorySpec } from './history.js';
import { siblingModule } from '../../src/domain/moduleFile.js';

/**
 * The worker of the simulated 24 h history (simulated mode only): prints the twin market's chains and fits
 * them (./historyWorker.ts, ./history.ts), apart from the production calibration pool.
 */
export class HistoryWorker {
  private readonly channel: WorkerChannel;

  /**
   * @param fitOptions options of every fit (SABR beta)
   * @param idleMs stop the thread after this long without work (default 30 000: the seeding needs it a few seconds
   *   every `everyS`, 5 minutes, so its memory, the simulator modules and the twin market, is not held between);
   *   the next point respawns it and the twin market steps from its start again, in the worker
   */
  constructor(fitOptions: ChainFitOptions = {}, idleMs = 30_000) {
    this.channel = new WorkerChannel(siblingModule('./historyWorker', import.meta.url), { fitOptions }, 'history', idleMs);
  }

  /** Times the thread was stopped for idleness. */
  get idleStops(): number {
    return this.channel.idleStops;
  }

  /**
   * Print step `step` of the simulated history `spec` and fit every pair.
   * @throws Error (rejected promise) when the worker fails or is closed
   */
  fitHistory(spec: HistorySpec, step: number): Promise<ChainFit[]> {
    return this.channel.request<ChainFit[]>({ history: { spec, step } });
  }

  async close(): Promise<void> {
    await this.channel.close();
  }
}
