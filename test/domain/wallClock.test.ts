/**
 * The wall clock the test processes see (issue 21): `.ci/run` runs the service-backed suites under libfaketime
 * (`scripts/clock-matrix.sh`, labels `wall-*`) with the wall clock a year after and a month before the tests'
 * pinned simulated start, so that a test comparing a simulated time with `Date.now()` fails on the day it is
 * written. That only proves something if the faked time really reaches every place the service reads time:
 * this vitest fork, the calibration worker threads and child processes (the simulators' own process).
 *
 * Always: the three clocks agree within 5 s. With `FAKE_WALL_CLOCK` (the ISO time given to faketime, set by the
 * matrix), each also lies in [FAKE_WALL_CLOCK, FAKE_WALL_CLOCK + 6 h] (a faked clock that runs from there),
 * far from the real date; the times are printed for the CI log.
 */
import { execFileSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';

/** Date.now() read in a new worker thread of this process. */
function workerNowMs(): Promise<number> {
  return new Promise((resolve, reject) => {
    const w = new Worker('require("node:worker_threads").parentPort.postMessage(Date.now())', { eval: true });
    w.once('message', (ms: number) => {
      resolve(ms);
      void w.terminate();
    });
    w.once('error', reject);
  });
}

/** Date.now() read in a child Node.js process (the environment, LD_PRELOAD included, is inherited). */
function childNowMs(): number {
  return Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(Date.now()))'], { encoding: 'utf8' }));
}

describe('the wall clock of the test processes', () => {
  it('is one clock in this fork, its worker threads and its child processes (and the faked one when FAKE_WALL_CLOCK is set)', async () => {
    const forkMs = Date.now();
    const workerMs = await workerNowMs();
    const childMs = childNowMs();
    const fake = process.env.FAKE_WALL_CLOCK;
    // eslint-disable-next-line no-console
    console.info(
      `wall clock: fork ${new Date(forkMs).toISOString()}, worker thread ${new Date(workerMs).toISOString()}, child process ${new Date(childMs).toISOString()}` +
        (fake ? ` (faketime from ${fake})` : ' (not faked)'),
    );
    expect(Math.abs(workerMs - forkMs)).toBeLessThan(5_000);
    expect(Math.abs(childMs - forkMs)).toBeLessThan(5_000);
    if (fake) {
      const fakeMs = Date.parse(fake);
      expect(Number.isFinite(fakeMs), `FAKE_WALL_CLOCK is not an ISO time: ${fake}`).toBe(true);
      for (const [where, ms] of [['fork', forkMs], ['worker thread', workerMs], ['child process', childMs]] as const) {
        expect(ms - fakeMs, `${where}: ${new Date(ms).toISOString()} is not the faked clock from ${fake}`).toBeGreaterThanOrEqual(0);
        expect(ms - fakeMs, `${where}: ${new Date(ms).toISOString()} is not the faked clock from ${fake}`).toBeLessThan(6 * 3600_000);
      }
    }
  });
});
