/**
 * Calibration worker thread: receives {@link ChainView}s, answers {@link ChainFit}s (SVI, SABR and
 * Vanna-Volga per expiry, streams/calibrate.ts), so that fitting never blocks the thread serving REST.
 * Messages: `{ id, view, namespace? }` -> `{ id, fit }`; `{ id, history: { spec, step } }` -> `{ id, fits }`
 * (prints step `step` of the simulated history `spec` and fits every pair, streams/simulatedHistory.ts);
 * `{ id, error }` on failure. `workerData.fitOptions` holds the {@link ChainFitOptions} (SABR beta). The
 * worker's {@link ChainFitter} keeps, per (source, pair) and namespace, the last good slice of each expiry and
 * the repair/rejection counts; they are lost when the worker restarts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ChainFitter, type ChainFitOptions } from './calibrate.js';
import type { ChainView } from './chainState.js';
import { historyFitter, type HistorySpec } from './simulatedHistory.js';

const fitter = new ChainFitter(((workerData as { fitOptions?: ChainFitOptions } | null)?.fitOptions ?? {}) as ChainFitOptions);
const fitHistory = historyFitter(fitter);

type Request = { id: number; view: ChainView; namespace?: string } | { id: number; history: { spec: HistorySpec; step: number } };

parentPort!.on('message', (msg: Request) => {
  try {
    if ('history' in msg) parentPort!.postMessage({ id: msg.id, fits: fitHistory(msg.history.spec, msg.history.step) });
    else parentPort!.postMessage({ id: msg.id, fit: fitter.fit(msg.view, msg.namespace) });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error)?.message ?? String(err) });
  }
});
