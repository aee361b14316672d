/**
 * Worker thread of the simulated 24 h history (simulated mode only; adapters/simulator/history.ts): receives
 * `{ id, history: { spec, step } }`, prints step `step` of the twin market of `spec` through the three exchanges'
 * normalizers and fits every pair (memory namespace 'history'); answers `{ id, result: ChainFit[] }` or
 * `{ id, error }`. It loads the simulator modules, which is why it is not the production calibration worker
 * (streams/calibrationWorker.ts). `workerData.fitOptions` holds the {@link ChainFitOptions}.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ChainFitter } from '../../src/quant/chain/chainFitter.js';
import type { ChainFitOptions } from '../../src/quant/chain/chainFit.js';
import { historyFitter, type HistorySpec } from './history.js';

const fitHistory = historyFitter(new ChainFitter(((workerData as { fitOptions?: ChainFitOptions } | null)?.fitOptions ?? {}) as ChainFitOptions));

parentPort!.on('message', (msg: { id: number; history: { spec: HistorySpec; step: number } }) => {
  try {
    parentPort!.postMessage({ id: msg.id, result: fitHistory(msg.history.spec, msg.history.step) });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error)?.message ?? String(err) });
  }
});
