/**
 * Calibration worker thread: receives {@link ChainView}s, answers {@link ChainFit}s (fitChain), so
 * that fitting never blocks the thread serving REST. Messages: `{ id, view }` -> `{ id, fit }` or
 * `{ id, error }`.
 */
import { parentPort } from 'node:worker_threads';
import { fitChain } from './calibrate.js';
import type { ChainView } from './chainState.js';

parentPort!.on('message', (msg: { id: number; view: ChainView }) => {
  try {
    parentPort!.postMessage({ id: msg.id, fit: fitChain(msg.view) });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error)?.message ?? String(err) });
  }
});
