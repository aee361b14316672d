/**
 * Calibration worker thread (one of the pool's, streams/calibrationPool.ts): receives chain views, answers
 * {@link ChainFit}s (SVI, SABR and Vanna-Volga per expiry, src/quant/chain/chainFit.ts), so that fitting never blocks the
 * thread serving REST. Messages: `{ id, view, namespace? }` (the view's option quotes in columns, streams/viewCodec.ts)
 * -> `{ id, result: ChainFit }`, `{ id, withdrawn: true }`
 * when a regular incremental (or periodic full) fit yielded to an urgent one, or `{ id, error }` on failure. `workerData.fitOptions` holds
 * the {@link ChainFitOptions} (SABR beta); `workerData.yieldFlag`, when given, is a SharedArrayBuffer of one Int32
 * that the pool sets to 1 when a fit that must not wait (urgent, or full after a reconnect) is queued behind the one
 * running here: a regular incremental or periodic full fit then stops at its next slice boundary (fitChain's `shouldYield`; the slices
 * it refitted stay in the pair's memory). The worker's {@link ChainFitter} keeps, per (source, pair) and namespace,
 * the last good slice of each expiry and the repair/rejection counts; they are lost when the worker restarts.
 * Production code only: no simulator module is loaded here (the simulated history has its own worker,
 * adapters/simulator/historyWorker.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ChainFitter } from '../src/quant/chain/chainFitter.js';
import { FitYielded } from '../src/quant/chain/fitMemory.js';
import type { ChainFitOptions } from '../src/quant/chain/chainFit.js';
import { decodeView, type EncodedView } from './viewCodec.js';

const data = (workerData ?? {}) as { fitOptions?: ChainFitOptions; yieldFlag?: SharedArrayBuffer };
const fitter = new ChainFitter(data.fitOptions ?? {});
const flag = data.yieldFlag ? new Int32Array(data.yieldFlag) : null;
const shouldYield = flag ? (): boolean => Atomics.load(flag, 0) !== 0 : undefined;

parentPort!.on('message', (msg: { id: number; view: EncodedView; namespace?: string }) => {
  try {
    parentPort!.postMessage({ id: msg.id, result: fitter.fit(decodeView(msg.view), msg.namespace, shouldYield) });
  } catch (err) {
    if (err instanceof FitYielded) parentPort!.postMessage({ id: msg.id, withdrawn: true });
    else parentPort!.postMessage({ id: msg.id, error: (err as Error)?.message ?? String(err) });
  }
});
