/**
 * A worker thread that fits chains (streams/calibrationWorker.ts) off the main thread.
 *
 * Requests are answered in order; a worker that dies fails its pending requests with an error
 * and is restarted on the next request. The pipeline's `latestWins` keeps at most one request in
 * flight per (source, pair).
 */
import { Worker } from 'node:worker_threads';
import type { ChainFit, ChainFitOptions } from './calibrate.js';
import type { ChainView } from './chainState.js';
import type { HistorySpec } from './simulatedHistory.js';

interface Pending {
  resolve: (result: ChainFit | ChainFit[]) => void;
  reject: (err: Error) => void;
}

export class CalibrationWorker {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  /** @param fitOptions options of every fit (SABR beta), passed to the worker at spawn */
  constructor(private readonly fitOptions: ChainFitOptions = {}) {}

  private spawn(): Worker {
    const w = new Worker(new URL('./workerBoot.mjs', import.meta.url), {
      workerData: { entry: new URL('./calibrationWorker.ts', import.meta.url).href, fitOptions: this.fitOptions },
      name: 'calibration',
    });
    w.on('message', (msg: { id: number; fit?: ChainFit; fits?: ChainFit[]; error?: string }) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.fit) p.resolve(msg.fit);
      else if (msg.fits) p.resolve(msg.fits);
      else p.reject(new Error(msg.error ?? 'calibration worker error'));
    });
    const fail = (err: Error): void => {
      if (this.worker === w) this.worker = null;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`calibration worker exited with code ${code}`)));
    return w;
  }

  /**
   * Fit `view` in the worker, with the worker's memory of (source, pair) in `namespace` (default 'live';
   * the simulated history seeding passes its own, streams/simulatedHistory.ts).
   * @throws Error (rejected promise) when the worker fails or the pool is closed
   */
  fit(view: ChainView, namespace?: string): Promise<ChainFit> {
    return this.request({ view, ...(namespace ? { namespace } : {}) }) as Promise<ChainFit>;
  }

  /**
   * Print step `step` of the simulated history `spec` and fit every pair, in the worker (streams/simulatedHistory.ts).
   * @throws Error (rejected promise) when the worker fails or the pool is closed
   */
  fitHistory(spec: HistorySpec, step: number): Promise<ChainFit[]> {
    return this.request({ history: { spec, step } }) as Promise<ChainFit[]>;
  }

  private request(body: Record<string, unknown>): Promise<ChainFit | ChainFit[]> {
    if (this.closed) return Promise.reject(new Error('calibration worker closed'));
    this.worker ??= this.spawn();
    const id = this.nextId++;
    return new Promise<ChainFit | ChainFit[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker!.postMessage({ id, ...body });
    });
  }

  /** Stop the worker; pending requests are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}
