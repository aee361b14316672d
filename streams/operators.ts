/**
 * RxJS operators of the recalibration pipeline.
 */
import { Observable, type OperatorFunction } from 'rxjs';

/**
 * Run `work` on source values with AT MOST ONE run in flight; while a run is in flight, only the
 * LATEST value that arrived is kept, and it runs as soon as the current run ends (the latest
 * state wins; intermediate states are skipped). Like `exhaustMap` with a trailing latest value.
 * A run that throws or rejects is reported to `onError` and skipped; the stream goes on. After
 * unsubscribe, a run still in flight is dropped silently (no emission, no error report).
 *
 * @param work synchronous or asynchronous work on one value; its result is emitted
 * @param onError called with the error and the value of a failed run
 * @param merge how a value arriving while another one is already pending combines with it (default: the newer
 *   replaces the older); the pipeline uses it so that a pending regular recalibration is never replaced by an
 *   urgent partial one
 */
export function latestWins<T, R>(
  work: (value: T) => R | Promise<R>,
  onError: (err: unknown, value: T) => void,
  merge: (pending: T, next: T) => T = (_pending, next) => next,
): OperatorFunction<T, R> {
  return (source) =>
    new Observable<R>((subscriber) => {
      let busy = false;
      let pending: { value: T } | null = null;
      let sourceDone = false;
      // After unsubscribe, a run still in flight is neither emitted nor reported (shutdown).
      let closed = false;

      const run = (value: T): void => {
        busy = true;
        let result: R | Promise<R>;
        try {
          result = work(value);
        } catch (err) {
          if (!closed) onError(err, value);
          finish();
          return;
        }
        if (result instanceof Promise) {
          result.then(
            (r) => {
              if (closed) return;
              subscriber.next(r);
              finish();
            },
            (err) => {
              if (closed) return;
              onError(err, value);
              finish();
            },
          );
        } else {
          subscriber.next(result);
          finish();
        }
      };
      const finish = (): void => {
        busy = false;
        if (pending) {
          const p = pending;
          pending = null;
          run(p.value);
        } else if (sourceDone) {
          subscriber.complete();
        }
      };
      const sub = source.subscribe({
        next: (v) => {
          if (busy) pending = { value: pending ? merge(pending.value, v) : v };
          else run(v);
        },
        error: (e) => subscriber.error(e),
        complete: () => {
          sourceDone = true;
          if (!busy) subscriber.complete();
        },
      });
      return () => {
        closed = true;
        pending = null;
        sub.unsubscribe();
      };
    });
}
