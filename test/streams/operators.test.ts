import { describe, expect, it } from 'vitest';
import { Subject, firstValueFrom, toArray } from 'rxjs';
import { latestWins } from '../../streams/operators.js';

describe('latestWins', () => {
  it('runs at most one at a time and runs only the latest value that arrived meanwhile', async () => {
    const src = new Subject<number>();
    let inFlight = 0;
    let maxInFlight = 0;
    const started: number[] = [];
    const releases: Array<() => void> = [];
    const out = firstValueFrom(
      src.pipe(
        latestWins(
          (v) =>
            new Promise<number>((resolve) => {
              inFlight++;
              maxInFlight = Math.max(maxInFlight, inFlight);
              started.push(v);
              releases.push(() => {
                inFlight--;
                resolve(v * 10);
              });
            }),
          () => {},
        ),
        toArray(),
      ),
    );
    src.next(1); // starts
    src.next(2); // pending
    src.next(3); // replaces 2
    src.next(4); // replaces 3
    expect(started).toEqual([1]);
    releases.shift()!();
    await Promise.resolve();
    await Promise.resolve();
    expect(started).toEqual([1, 4]);
    src.complete(); // completes after the in-flight run
    releases.shift()!();
    expect(await out).toEqual([10, 40]);
    expect(maxInFlight).toBe(1);
  });

  it('reports a failing run and goes on', async () => {
    const src = new Subject<number>();
    const errors: number[] = [];
    const out = firstValueFrom(
      src.pipe(
        latestWins(
          (v) => {
            if (v === 2) throw new Error('boom');
            return v;
          },
          (_e, v) => errors.push(v),
        ),
        toArray(),
      ),
    );
    src.next(1);
    src.next(2);
    src.next(3);
    src.complete();
    expect(await out).toEqual([1, 3]);
    expect(errors).toEqual([2]);
  });

  it('after unsubscribe, a run in flight is neither emitted nor reported', async () => {
    const src = new Subject<number>();
    const out: number[] = [];
    const errors: unknown[] = [];
    let reject!: (e: Error) => void;
    let resolveSecond!: (v: number) => void;
    const sub = src
      .pipe(
        latestWins(
          (v) =>
            new Promise<number>((res, rej) => {
              if (v === 1) reject = rej;
              else resolveSecond = res;
            }),
          (e) => errors.push(e),
        ),
      )
      .subscribe((v) => out.push(v));
    src.next(1);
    src.next(2); // pending
    sub.unsubscribe();
    reject(new Error('worker closed'));
    await Promise.resolve();
    await Promise.resolve();
    expect(errors).toEqual([]);
    expect(out).toEqual([]);
    expect(resolveSecond).toBeUndefined(); // the pending value never ran
  });
});
