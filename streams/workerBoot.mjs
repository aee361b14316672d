// Worker-thread bootstrap: registers the TypeScript loader (tsx) inside the worker, whose hooks
// --import flags do not reach in time, then loads the worker's TypeScript entry (workerData.entry).
import { workerData } from 'node:worker_threads';

if (String(workerData.entry).endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(workerData.entry);
