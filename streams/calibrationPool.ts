/**
 * Calibration off the thread serving REST: a pool of worker threads (streams/calibrationWorker.ts) that fit
 * chains, and the separate worker of the simulated 24 h history (adapters/simulator/historyWorker.ts, simulated mode only,
 * so that simulator code never loads in the production calibration workers).
 *
 * Pool (issue 12 item 2): `size` workers (default {@link defaultPoolSize}: `os.availableParallelism() - 1`, at
 * least 1, or CALIBRATION_WORKERS). Each (source, pair) is assigned to one worker on first sight (the worker with
 * the least expected work assigned so far), and stays there: the worker's {@link ChainFitter} keeps that pair's
 * memory (last good slices, repair counts). Each worker runs one fit at a time; fits waiting for a worker are
 * taken shortest-expected-first (an exponentially weighted mean of each pair's own fit times), aged by their
 * waiting time, so that a fast pair waits at most for the one fit in progress, never behind a queue of slow
 * ones, and a slow pair is never starved; a full fit (ChainView.full: start, after the source reconnected, after a
 * roll-off) goes before incremental ones, so that data stale after a reconnect is
 * refreshed first (the periodic safety net's full fit excepted: ChainView.periodic, its data is not stale); an urgent
 * partial fit (ChainView.refitOnly: a mark moved materially) goes next, and its time does not enter the pair's
 * expected fit time. The pipeline's `latestWins` keeps at most one request per pair in
 * flight (latest state wins), so a worker's queue holds at most one request per pair.
 *
 * Preemption at slice boundaries: when an urgent or a (non-periodic) full fit is queued while the worker runs a
 * regular incremental fit of any pair (or the periodic safety net's full fit: chainState.ts mayYield), the pool sets
 * the worker's shared yield flag; that fit stops before its next
 * slice refit (after at least one) and is rejected with {@link FitWithdrawnError}. The slices it refitted stay in the
 * worker's memory of its pair, so the pipeline's next regular fit of that pair, asked at once, reuses those whose
 * inputs did not change meanwhile (a yielded periodic full fit is asked again as a full one: the pipeline's safety net
 * is not skipped); that next fit is not preempted (a pair yields at most once in a row, so a stream of urgent fits
 * cannot starve it). Full fits after a start, reconnect or roll-off, and urgent fits, are never preempted.
 *
 * A worker that dies fails its pending requests with an error and is restarted on the next request (its pairs'
 * memory is lost; the next fit of each is cold).
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ChainFit } from '../src/domain/chainFit.js';
import type { ChainFitOptions } from '../src/quant/chain/chainFit.js';
import { mayYield, type ChainView } from './chainState.js';
import { encodeView } from './viewCodec.js';
import { siblingModule } from '../src/domain/moduleFile.js';

/**
 * The rejection of a fit withdrawn from the queue before a worker started it ({@link CalibrationPool.fit}'s signal),
 * or of a regular incremental fit that yielded its worker at a slice boundary to an urgent or reconnect fit queued
 * behind it (the slices it refitted stay in the worker's memory of the pair). Not a failure: ask again.
 */
export class FitWithdrawnError extends Error {
  /** @param running true when the fit had started and yielded, false when it was withdrawn from the queue */
  constructor(running = false) {
    super(running ? 'calibration fit yielded its worker to an urgent one' : 'calibration fit withdrawn before it started');
    this.name = 'FitWithdrawnError';
  }
}

/** Default pool size: one worker per core, minus one core for REST and ingest, at least one. */
export function defaultPoolSize(): number {
  return Math.max(1, availableParallelism() - 1);
}

interface Pending {
  resolve: (result: unknown) => void;
  reject: (err: Error) => void;
}

/**
 * One worker thread answering `{ id, ...body }` requests with `{ id, result }`, `{ id, error }` or `{ id, withdrawn:
 * true }` (rejected with {@link FitWithdrawnError}), in order.
 * Spawned lazily; restarted on the next request after it dies (pending requests then fail).
 */
export class WorkerChannel {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private idleTimer: NodeJS.Timeout | null = null;
  /** Workers stopped for idleness (diagnostics, tests). */
  idleStops = 0;

  /**
   * @param entry URL of the worker's module (TypeScript, loaded through streams/workerBoot.mjs)
   * @param data workerData given to the entry besides `entry`
   * @param name thread name (diagnostics)
   * @param idleMs stop the worker after this long without a request in flight (its memory is returned; the next
   *   request spawns a new one); 0 (default) keeps it
   */
  constructor(
    private readonly entry: URL,
    private readonly data: Record<string, unknown>,
    private readonly name: string,
    private readonly idleMs = 0,
  ) {}

  private spawn(): Worker {
    const w = new Worker(new URL('./workerBoot.mjs', import.meta.url), { workerData: { entry: this.entry.href, ...this.data }, name: this.name });
    w.on('message', (msg: { id: number; result?: unknown; error?: string; withdrawn?: boolean }) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.withdrawn === true) p.reject(new FitWithdrawnError(true));
      else if (msg.error === undefined) p.resolve(msg.result);
      else p.reject(new Error(msg.error));
      if (this.pending.size === 0 && this.idleMs > 0 && this.worker === w) {
        this.idleTimer = setTimeout(() => {
          this.idleTimer = null;
          if (this.worker !== w || this.pending.size > 0) return;
          this.worker = null;
          this.idleStops++;
          void w.terminate();
        }, this.idleMs);
        this.idleTimer.unref();
      }
    });
    const fail = (err: Error): void => {
      // a worker already replaced (stopped for idleness, or after its 'error') owns no pending request
      if (this.worker !== w) return;
      this.worker = null;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    w.on('error', fail);
    // (an idle stop has no pending request: nothing fails)
    w.on('exit', (code) => fail(new Error(`${this.name} worker exited with code ${code}`)));
    return w;
  }

  /** @throws Error (rejected promise) when the worker fails or the channel is closed */
  request<T>(body: Record<string, unknown>): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`${this.name} worker closed`));
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.worker ??= this.spawn();
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (r: unknown) => void, reject });
      this.worker!.postMessage({ id, ...body });
    });
  }

  /** Thread id of the running worker, or null. */
  get threadId(): number | null {
    return this.worker?.threadId ?? null;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const w = this.worker;
    this.worker = null;
    for (const p of this.pending.values()) p.reject(new Error(`${this.name} worker closed`));
    this.pending.clear();
    if (w) await w.terminate();
  }
}

interface Queued {
  readonly key: string;
  readonly view: ChainView;
  readonly namespace: string | undefined;
  readonly enqueuedAt: number;
  readonly resolve: (f: ChainFit) => void;
  readonly reject: (e: Error) => void;
}

interface Slot {
  readonly channel: WorkerChannel;
  readonly queue: Queued[];
  /** The fit the worker is running, or null (idle). */
  running: Queued | null;
  /** Shared with the worker (workerData.yieldFlag): 1 asks the running regular incremental fit to yield. */
  readonly yieldFlag: Int32Array;
  /** Sum of the expected fit times (ms) of the pairs assigned to this worker. */
  load: number;
}

/** Figures of the pool (metrics, tests). */
export interface PoolStats {
  readonly workers: number;
  /** (source:pair) -> worker index. */
  readonly assignment: Readonly<Record<string, number>>;
  /** (source:pair) -> expected fit time, ms (EWMA). */
  readonly expectedMs: Readonly<Record<string, number>>;
  /** Fits waiting for their worker now. */
  readonly queued: number;
  /** Running regular fits asked to yield to an urgent or reconnect fit queued behind them, since start. */
  readonly yieldRequests: number;
  /** Of those, the fits that did yield (the others had no slice left to refit), since start. */
  readonly yielded: number;
}

const now = (): number => performance.now();
/** Weight of the newest fit time in a pair's expected fit time. */
const EWMA = 0.3;
/** Expected fit time of a pair never fitted yet, ms. */
const UNKNOWN_MS = 20;
/** Head start of a full fit in a worker's queue, ms (more than any fit takes: full fits go first). */
const FULL_FIRST_MS = 60_000;
/** Head start of an urgent partial fit (ChainView.refitOnly), ms: after full fits, before every regular one. */
const URGENT_FIRST_MS = 30_000;

/**
 * A fit's head start in its worker's queue, ms: a full fit (start, reconnect of the source, roll-off; not the periodic
 * safety net) goes first, since that pair's served data is stale until it is done; an urgent partial fit next; 0 for
 * the others. A fit with a head start is also one that must not wait for a running regular fit (preemption).
 */
function headStart(view: ChainView): number {
  return view.full && !view.periodic ? FULL_FIRST_MS : view.refitOnly ? URGENT_FIRST_MS : 0;
}

/**
 * A pool of calibration worker threads (see the module docstring).
 */
export class CalibrationPool {
  private readonly slots: Slot[];
  private readonly assigned = new Map<string, number>();
  private readonly expected = new Map<string, number>();
  private closed = false;
  private yieldRequests = 0;
  private yielded = 0;
  /** Pairs whose last fit yielded: not asked to yield again until one of their fits completes (progress). */
  private readonly yieldedLast = new Set<string>();

  /**
   * @param fitOptions options of every fit (SABR beta), passed to the workers at spawn
   * @param size number of workers (>= 1; default {@link defaultPoolSize})
   * @throws RangeError when size is not a positive integer
   */
  constructor(fitOptions: ChainFitOptions = {}, size: number = defaultPoolSize()) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`CalibrationPool: size must be a positive integer, got ${size}`);
    this.slots = Array.from({ length: size }, (_, i) => {
      const yieldFlag = new SharedArrayBuffer(4);
      return {
        channel: new WorkerChannel(siblingModule('./calibrationWorker', import.meta.url), { fitOptions, yieldFlag }, `calibration-${i}`),
        queue: [],
        running: null,
        yieldFlag: new Int32Array(yieldFlag),
        load: 0,
      };
    });
  }

  /** Number of workers. */
  get size(): number {
    return this.slots.length;
  }

  /**
   * Fit `view` in the worker owning its (source, pair), with that pair's memory in `namespace` (default 'live').
   * @param signal aborting it while the fit still waits in the queue withdraws the fit (rejected with
   *   {@link FitWithdrawnError}); once the worker has started it, a regular incremental fit is asked to yield at its
   *   next slice boundary (rejected with FitWithdrawnError if it had a slice left to refit, else it completes)
   * @throws Error (rejected promise) when the worker fails or the pool is closed; FitWithdrawnError when withdrawn
   *   (signal) or when, a regular incremental fit, it yielded its worker to an urgent or reconnect fit queued behind it
   *   (preemption at a slice boundary, module docstring)
   */
  fit(view: ChainView, namespace?: string, signal?: AbortSignal): Promise<ChainFit> {
    if (this.closed) return Promise.reject(new Error('calibration pool closed'));
    if (signal?.aborted) return Promise.reject(new FitWithdrawnError());
    const key = `${namespace ?? 'live'}:${view.source}:${view.pair.base}/${view.pair.quote}`;
    const slot = this.slots[this.slotOf(key)]!;
    return new Promise<ChainFit>((resolve, reject) => {
      const job: Queued = { key, view, namespace, enqueuedAt: now(), resolve, reject };
      slot.queue.push(job);
      this.askToYield(slot, job);
      signal?.addEventListener(
        'abort',
        () => {
          const i = slot.queue.indexOf(job);
          if (i >= 0) {
            slot.queue.splice(i, 1);
            reject(new FitWithdrawnError());
          } else if (slot.running === job) this.requestYield(slot); // running: yield at the next slice boundary
        },
        { once: true },
      );
      this.pump(slot);
    });
  }

  /** The pool's assignment and expected fit times. */
  stats(): PoolStats {
    return {
      workers: this.slots.length,
      assignment: Object.fromEntries(this.assigned),
      expectedMs: Object.fromEntries(this.expected),
      queued: this.slots.reduce((a, s) => a + s.queue.length, 0),
      yieldRequests: this.yieldRequests,
      yielded: this.yielded,
    };
  }

  /**
   * Preemption: a fit that must not wait (urgent partial, or full after a start, reconnect or roll-off) queued while the
   * worker runs a regular incremental (or periodic full) fit asks that fit to yield at its next slice boundary (the worker reads the slot's
   * yieldFlag; src/quant/chain/chainFit.ts fitChain `shouldYield`). The wait of an urgent fit is then one slice fit, not a
   * whole pass of another pair (30 to 45 ms for a BTC chain with three models).
   */
  private askToYield(slot: Slot, job: Queued): void {
    if (headStart(job.view) > 0) this.requestYield(slot);
  }

  /**
   * Set the worker's yield flag when it runs a fit that may yield (mayYield: regular incremental, or periodic full;
   * full fits after a start, reconnect or roll-off and urgent fits never yield).
   */
  private requestYield(slot: Slot): void {
    const r = slot.running;
    if (!r || !mayYield(r.view)) return;
    // a pair whose previous fit yielded runs this one to its end: urgent fits of other pairs arriving faster than
    // its pass must not starve it
    if (this.yieldedLast.has(r.key)) return;
    if (Atomics.load(slot.yieldFlag, 0) !== 0) return;
    Atomics.store(slot.yieldFlag, 0, 1);
    this.yieldRequests++;
  }

  private slotOf(key: string): number {
    let i = this.assigned.get(key);
    if (i === undefined) {
      i = 0;
      for (let j = 1; j < this.slots.length; j++) if (this.slots[j]!.load < this.slots[i]!.load) i = j;
      this.assigned.set(key, i);
      this.expected.set(key, UNKNOWN_MS);
      this.slots[i]!.load += UNKNOWN_MS;
    }
    return i;
  }

  /** Start the next fit of `slot` when it is idle: the smallest expected time minus waiting time first. */
  private pump(slot: Slot): void {
    if (slot.running !== null || slot.queue.length === 0 || this.closed) return;
    const t = now();
    let best = 0;
    let bestScore = Infinity;
    for (let i = 0; i < slot.queue.length; i++) {
      const q = slot.queue[i]!;
      const score = (this.expected.get(q.key) ?? UNKNOWN_MS) - (t - q.enqueuedAt) - headStart(q.view);
      if (score < bestScore) {
        bestScore = score;
        best = i;
      }
    }
    const job = slot.queue.splice(best, 1)[0]!;
    slot.running = job;
    // the worker is idle: a request to yield left from the previous fit is void
    Atomics.store(slot.yieldFlag, 0, 0);
    const t0 = now();
    // the view's option quotes travel in columns (streams/viewCodec.ts): a structured clone of the quote objects
    // was a quarter of this thread's CPU
    slot.channel.request<ChainFit>({ view: encodeView(job.view), ...(job.namespace ? { namespace: job.namespace } : {}) }).then(
      (fit) => {
        // a partial fit says nothing of the pair's regular fit time
        if (!job.view.refitOnly) {
          const ms = now() - t0;
          const prev = this.expected.get(job.key) ?? UNKNOWN_MS;
          const next = prev + EWMA * (ms - prev);
          this.expected.set(job.key, next);
          slot.load += next - prev;
        }
        slot.running = null;
        this.yieldedLast.delete(job.key);
        job.resolve(fit);
        this.pump(slot);
      },
      (err: Error) => {
        slot.running = null;
        if (err instanceof FitWithdrawnError) {
          this.yielded++;
          this.yieldedLast.add(job.key);
        }
        job.reject(err);
        this.pump(slot);
      },
    );
  }

  /** Stop every worker; queued and pending requests are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.slots) {
      for (const q of s.queue.splice(0)) q.reject(new Error('calibration pool closed'));
    }
    await Promise.all(this.slots.map((s) => s.channel.close()));
  }
}
