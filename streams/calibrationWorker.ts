/**
 * Calibration worker thread (one of the pool's, streams/calibrationPool.ts): receives {@link ChainView}s, answers
 * {@link ChainFit}s (SVI, SABR and Vanna-Volga per expiry, streams/calibrate.ts), so that fitting never blocks the
 * thread serving REST. Messages: `{ id, view, namespace? }` -> `{ id, result: ChainFit }`, or `{ id, error }` on
 * failure. `workerData.fitOptions` holds the {@link ChainFitOptions} (SABR beta). The worker's {@link ChainFitter}
 * keeps, per (source, pair) and namespace, the last good slice of each expiry and the repair/rejection counts;
 * they are lost when the worker restarts. Production code only: no simulator module is loaded here (the
 * simulated history has its own worker, adapters/simulator/historyWorker.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ChainFitter, type ChainFitOptions } from './calibrate.js';
import type { ChainView } from './chainState.js';

const fitter = new ChainFitter(((workerData as { fitOptions?: ChainFitOptions } | null)?.fitOptions ?? {}) as ChainFitOptions);

parentPort!.on('message', (msg: { id: number; view: ChainView; namespace?: string }) => {
  try {
    parentPort!.postMessage({ id: msg.id, result: fitter.fit(msg.view, msg.namespace) });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error)?.message ?? String(err) });
  }
});
