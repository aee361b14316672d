/**
 * The RxJS pipelines from normalized market events to the cache.
 *
 * ```
 * events$ ─┬─ status  ──> cache.setFeedConnected
 *          ├─ funding ──> cache.addFunding (dedup by timestamp)
 *          └─ option | future | index ─ groupBy (source, pair) ─> ChainState (latest per instrument)
 *               ─┬─ auditTime(throttleMs) ──────────────> 'regular' ─┬─ latestWins(view, fit: worker) ─ buildSnapshots ─> cache
 *                └─ an expiry's smile moved >= urgentVolPts ─> 'urgent' ┘     (a surface per model, forward curve)
 * ```
 * Per (source, pair), one {@link PairScheduler}: at most one calibration in flight and the latest state wins
 * ({@link latestWins}; the view is taken when its fit starts); `auditTime` bounds the rate of regular
 * recalibrations. Source: docs/architecture.md.
 *
 * Urgent partial refits (issue 12, freshness): an option tick after which its expiry's smile moved by at least
 * `urgentVolPts` vol points against the marks it was last refitted to (ChainState: the marks' moves smoothed across
 * strikes by least squares, so that one mark's noise is not a move) triggers at once, without waiting for the
 * throttle, a partial recalibration that refits only the urgent expiries (ChainView.refitOnly; the others keep their
 * last fits, carried to the new forwards) and publishes it. The regular throttled recalibration still follows and
 * refits everything that changed; a partial run does not count as calibrating the state (isSettled, the next
 * view's changed expiries). A full fit pending is never replaced by a partial one. The urgent trigger waits
 * `urgentCoalesceMs` (default 5 ms) after the first urgent tick, so that one refit takes the exchange's whole burst.
 *
 * Incremental refits (issue 12 item 1): each view carries the expiries changed since the last SUCCESSFUL fit of
 * its pair (ChainView.changedExpiries; a superset when views were skipped or a fit failed) and whether a full cold
 * fit is due (ChainView.full: first view, roll-off, reconnect of the source, or `fullRefitEveryMs` elapsed). The
 * fit entry point (the worker's ChainFitter, which keeps each pair's previous slices in its FitMemory) decides
 * what to refit from them.
 */
import { auditTime, filter, groupBy, map, merge, mergeMap, share, Subject, Subscription, tap, type Observable } from 'rxjs';
import type { Clock } from '../src/domain/clock.js';
import type { FeedStatus, FundingRate, FutureQuote, IndexPrice, MarketEvent, OptionQuote } from '../src/domain/events.js';
import { pairKey } from '../src/domain/markets.js';
import type { MarketCache } from '../src/cache/marketCache.js';
import { ChainState } from './chainState.js';
import { buildSnapshots, type CalibrationResult } from '../src/cache/snapshotBuilder.js';
import { ChainFitter } from '../src/quant/chain/chainFitter.js';
import type { ChainFit } from '../src/domain/chainFit.js';
import type { ChainView } from './chainState.js';
import { latestWins } from './operators.js';
import { FitWithdrawnError } from './calibrationPool.js';
import type { Logger } from '../src/domain/logger.js';

/** What the pipeline needs of a logger. */
export type PipelineLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

/** Options of {@link startPipelines}. */
export interface PipelineOptions {
  readonly cache: MarketCache;
  /** Service clock (wall clock, or the replay clock). */
  readonly clock: Clock;
  /** Minimum ms between two calibrations of one (source, pair). */
  readonly throttleMs: number;
  readonly logger: PipelineLogger;
  /**
   * Fits a chain view; default a {@link ChainFitter} on this thread. The service passes a worker
   * thread's fit (streams/calibrationPool.ts) so that fitting never blocks REST. `signal` is aborted when an
   * urgent refit of the pair arrives while this (regular) fit waits for a worker or runs in one: the fit may then be
   * withdrawn from the queue, or stop at its next slice boundary (rejected with the pool's FitWithdrawnError); the
   * urgent refit runs first and the regular one again after it. A running regular fit may also be rejected with
   * FitWithdrawnError when it yields its worker to another pair's urgent or reconnect fit (the pool's preemption): it
   * is asked again at once.
   */
  readonly fit?: (view: ChainView, signal?: AbortSignal) => ChainFit | Promise<ChainFit>;
  /** Called after each calibration (metrics, logs). */
  readonly onCalibrated?: (r: CalibrationResult) => void;
  /**
   * The safety net of incremental refits: a (source, pair) gets a full cold fit (ChainView.full) at least this
   * often, ms. Default 60 000. Full fits also happen at start, after an instrument rolled off, and after the
   * source reconnected.
   */
  readonly fullRefitEveryMs?: number;
  /**
   * Urgency threshold, vol points (CALIBRATION_URGENT_VOL_PTS; default 0: off): an expiry whose smile moved at least
   * this far against the marks it was last refitted to (ChainStateOptions.urgentVolPts) gets an immediate partial
   * refit (module docstring).
   */
  readonly urgentVolPts?: number;
  /**
   * An urgent refit starts this many ms after the first urgent tick (default {@link URGENT_COALESCE_MS}), so that the
   * rest of the exchange's burst (a market move reprices a whole expiry, one frame per instrument, back to back) is in
   * the same refit instead of a second one queued behind it.
   */
  readonly urgentCoalesceMs?: number;
}

/**
 * Default coalescing window of urgent refits, ms. Measured on the simulated default (bench/freshness.ts, a 1 vol pt
 * shift of one BTC expiry): without it, the first frames of the move started a refit of a partial move and the rest
 * waited for it (two runs of 15-45 ms each per move).
 */
export const URGENT_COALESCE_MS = 5;

/** What starts a recalibration: the throttled regular one, an urgent partial one, or both waiting. */
type Trigger = 'regular' | 'urgent' | 'both';
/** Two triggers waiting for one fit: both kinds are kept (the urgent partial refit runs first, then the regular one). */
const mergeTriggers = (a: Trigger, b: Trigger): Trigger => (a === b ? a : 'both');

type ChainEvent = OptionQuote | FutureQuote | IndexPrice;

/**
 * What every pair's {@link PairScheduler} shares with the pipeline: its options, the fit, the chain states and the
 * calibrated versions (read by isSettled), the "full fit for every pair" signal (refitAllFull).
 */
interface SchedulerShared {
  readonly opts: PipelineOptions;
  readonly fit: (view: ChainView, signal?: AbortSignal) => ChainFit | Promise<ChainFit>;
  /** Per (source, pair) key: the chain state (created by the pair's first event). */
  readonly states: Map<string, ChainState>;
  /** Per key: the version of the last regular (not partial) run, succeeded or failed. */
  readonly calibratedVersion: Map<string, number>;
  readonly fullAll$: Subject<void>;
}

/**
 * The recalibration scheduler of one (source, pair) (module docstring): applies the pair's events to its ChainState,
 * turns them into 'regular' (throttled) and 'urgent' (coalesced) triggers, runs at most one fit at a time with the
 * latest state ({@link latestWins}), lets an urgent partial refit go before a regular one waiting for (or running in) a
 * worker, and builds the snapshots of each fit. One per pair, for the pipeline's lifetime.
 */
class PairScheduler {
  private state: ChainState | null = null;
  /** Sequence number of the last published result. */
  private sequence = 0;
  /** The last published result: unchanged slices share its frozen quote lists. */
  private lastResult: CalibrationResult | undefined = undefined;
  /** Version of the last SUCCESSFUL fit: what the next view's changed expiries are relative to. */
  private fittedVersion = 0;
  /** performance.now() when the last full view was taken (-Infinity: never, or a periodic full fit was withdrawn). */
  private lastFullAt = -Infinity;
  /** Emits after a run when urgent moves wait (they arrived while a full fit was due or in flight). */
  private readonly kick$ = new Subject<void>();
  /** A regular recalibration owed after the urgent one running first (or withdrawn from the queue for it). */
  private readonly regularKick$ = new Subject<void>();
  private regularOwed = false;
  /** The view of the run in flight (at most one), and how to withdraw it while it waits for a worker (regular runs). */
  private inFlight: ChainView | null = null;
  private withdraw: AbortController | null = null;

  /** @param key the pair's key (pairKey(source, pair)) */
  constructor(
    private readonly key: string,
    private readonly shared: SchedulerShared,
  ) {}

  /** The calibration results of the pair whose events are `group$` (subscribe once). */
  results(group$: Observable<ChainEvent>): Observable<CalibrationResult> {
    const { opts, states, fullAll$ } = this.shared;
    const { cache } = opts;
    const changes$ = group$.pipe(
      filter((e) => {
        if (!this.state) {
          this.state = new ChainState(e.source, { base: e.base, quote: e.quote }, { urgentVolPts: opts.urgentVolPts ?? 0 });
          states.set(this.key, this.state);
        }
        const changed = this.state.apply(e);
        if (changed) cache.touch(e.source, { base: e.base, quote: e.quote }, e.receivedAt);
        return changed;
      }),
      share(),
    );
    const regular$ = changes$.pipe(
      auditTime(opts.throttleMs),
      map((): Trigger => 'regular'),
    );
    const coalesceMs = opts.urgentCoalesceMs ?? URGENT_COALESCE_MS;
    const urgentTicks$ = merge(changes$, this.kick$).pipe(filter(() => this.state!.hasUrgent(this.fittedVersion)));
    const urgent$ = (coalesceMs > 0 ? urgentTicks$.pipe(auditTime(coalesceMs)) : urgentTicks$).pipe(map((): Trigger => 'urgent'));
    const fullNow$ = fullAll$.pipe(
      filter(() => this.state !== null),
      map((): Trigger => {
        this.state!.requireFullNow();
        return 'regular';
      }),
    );
    return merge(regular$, urgent$, this.regularKick$.pipe(map((): Trigger => 'regular')), fullNow$).pipe(
      // an urgent refit withdraws the pair's regular fit waiting for (or running in) a worker: it runs first, the
      // regular after
      tap((trigger) => {
        // (not when the regular view in flight was taken after the move: it holds it, nothing is urgent any more)
        if (trigger !== 'regular' && this.withdraw && this.state!.hasUrgent(this.fittedVersion)) this.withdraw.abort();
      }),
      latestWins((trigger) => this.run(trigger), (err) => this.failed(err), mergeTriggers),
      filter((x): x is { chainFit: ChainFit; view: ChainView } => x !== null),
      map((x) => this.builtOrFailed(x)),
      filter((r): r is CalibrationResult => r !== null),
    );
  }

  /** Start the fit of a trigger's view (null: nothing to do). */
  private run(trigger: Trigger): { chainFit: ChainFit; view: ChainView } | null | Promise<{ chainFit: ChainFit; view: ChainView }> {
    const view = this.viewFor(trigger);
    if (!view) return null;
    this.inFlight = view;
    this.withdraw = view.refitOnly ? null : new AbortController();
    const r = this.shared.fit(view, this.withdraw?.signal);
    return r instanceof Promise ? r.then((chainFit) => ({ chainFit, view })) : { chainFit: r, view };
  }

  /**
   * The view for a trigger, taken now (the latest state): the urgent partial view first when one is due, whatever
   * the trigger, else the regular one when a regular run is asked for (or owed); null when nothing is left to do.
   * (A regular trigger that finds a move still in its coalescing window runs it first too: taken by the regular
   * view, the move waited for a whole regular pass, behind the other pairs' fits in the worker queue: 240 ms in
   * bench/freshness.ts, against 25 ms for an urgent refit.)
   */
  private viewFor(trigger: Trigger): ChainView | null {
    const s = this.state!;
    const since = this.fittedVersion;
    const wantRegular = trigger !== 'urgent' || this.regularOwed;
    const urgentView = s.urgentView(since);
    if (urgentView) {
      if (wantRegular) this.regularOwed = true;
      return urgentView;
    }
    if (!wantRegular) return null;
    this.regularOwed = false;
    s.rollOff(this.shared.opts.clock.now());
    // nothing applied since the last successful fit and no full fit due: that fit already shows this state
    if (s.version <= since && !s.fullDue(since)) return null;
    const t = performance.now();
    const view = s.view(since, undefined, t - this.lastFullAt >= (this.shared.opts.fullRefitEveryMs ?? 60_000));
    if (view.full) this.lastFullAt = t;
    return view;
  }

  /**
   * The snapshots of a finished fit ({@link built}), or null when they cannot be built (a slice the cache cannot
   * read): that fit failed ({@link failed}), the last good surface stays, and the pair's stream goes on.
   */
  private builtOrFailed(x: { chainFit: ChainFit; view: ChainView }): CalibrationResult | null {
    try {
      return this.built(x);
    } catch (err) {
      this.failed(err, x.view);
      return null;
    }
  }

  /** A run failed or was withdrawn (latestWins' error handler), or its snapshots could not be built. */
  private failed(err: unknown, view: ChainView = this.inFlight!): void {
    this.withdraw = null;
    if (err instanceof FitWithdrawnError) {
      // withdrawn from the queue, or yielded its worker at a slice boundary (the slices it refitted are kept
      // in the worker's memory): the urgent refit waiting goes first, this regular one again after it (a
      // periodic full fit again as a full one: the safety net is not skipped)
      if (view.periodic === true) this.lastFullAt = -Infinity;
      this.regularOwed = true;
      this.regularKick$.next();
      return;
    }
    // a failed regular run still counts as done for that version: the last good surface stays
    if (!view.refitOnly) this.shared.calibratedVersion.set(this.key, view.version);
    this.shared.opts.logger.error({ err, source: view.source, pair: `${view.pair.base}/${view.pair.quote}`, partial: view.refitOnly !== undefined }, 'calibration failed; the last good surface stays');
    if (view.refitOnly) this.settleOwed();
    this.kickIfUrgent();
  }

  /** The snapshots of a finished fit, numbered; records the fitted version. */
  private built({ chainFit, view }: { chainFit: ChainFit; view: ChainView }): CalibrationResult {
    this.withdraw = null;
    const built = buildSnapshots(chainFit, this.sequence + 1, this.lastResult);
    this.sequence += 1;
    const result = view.refitOnly ? { ...built, partial: true } : built;
    this.lastResult = result;
    if (!view.refitOnly) {
      this.shared.calibratedVersion.set(this.key, chainFit.version);
      this.fittedVersion = chainFit.version;
    }
    // an urgent move that arrived while a full fit was due (no partial view then) is not left to the throttle
    this.kickIfUrgent();
    if (view.refitOnly) this.settleOwed();
    return result;
  }

  /** After an urgent run: the regular one it went before is due now (its throttle window has passed). */
  private settleOwed(): void {
    if (!this.regularOwed) return;
    this.regularOwed = false;
    this.regularKick$.next();
  }

  /** An urgent move waits (it arrived while a full fit was due or in flight): trigger its refit now. */
  private kickIfUrgent(): void {
    if (this.state!.hasUrgent(this.fittedVersion)) this.kick$.next();
  }
}

function isChainEvent(e: MarketEvent): e is ChainEvent {
  return e.kind === 'option' || e.kind === 'future' || e.kind === 'index';
}

/** Running pipelines. */
export interface Pipelines {
  /** Unsubscribe to stop them. */
  readonly subscription: Subscription;
  /**
   * True when every (source, pair) chain state seen so far has been calibrated at its latest
   * version (nothing pending or in flight). Replay uses it to know the final state is served.
   */
  isSettled(): boolean;
  /**
   * Ask every (source, pair) seen so far for a full cold fit of its latest state, at once (isSettled turns false
   * until each is done). The service calls it when a replay has been read: the served end state then depends on the
   * recorded data alone, not on which intermediate states the timing let the warm refits start from.
   */
  refitAllFull(): void;
}

/**
 * Subscribe the pipelines to `events$`.
 */
export function startPipelines(events$: Observable<MarketEvent>, opts: PipelineOptions): Pipelines {
  const { cache } = opts;
  const inThread = new ChainFitter();
  const fit = opts.fit ?? ((view: ChainView) => inThread.fit(view));
  const shared$ = events$.pipe(share());
  const subs = new Subscription();

  const states = new Map<string, ChainState>();
  const calibratedVersion = new Map<string, number>();
  const wasDisconnected = new Set<string>();
  const fullAll$ = new Subject<void>();
  const shared: SchedulerShared = { opts, fit, states, calibratedVersion, fullAll$ };

  subs.add(
    shared$
      .pipe(filter((e): e is FeedStatus => e.kind === 'status'))
      .subscribe((e) => {
        if (e.state !== 'connecting') cache.setFeedConnected(e.source, e.state === 'connected');
        if (e.state === 'disconnected') wasDisconnected.add(e.source);
        else if (e.state === 'connected' && wasDisconnected.delete(e.source)) {
          // quotes may have jumped while away: the next fit of each of the source's pairs is a full one
          for (const st of states.values()) if (st.source === e.source) st.requireFull();
        }
      }),
  );

  subs.add(
    shared$.pipe(filter((e): e is FundingRate => e.kind === 'funding')).subscribe((e) => {
      cache.addFunding(e);
    }),
  );

  subs.add(
    shared$
      .pipe(
        filter(isChainEvent),
        groupBy((e) => pairKey(e.source, e)),
        mergeMap((group$) => new PairScheduler(group$.key, shared).results(group$)),
      )
      .subscribe((r) => {
        for (const s of r.surfaces) cache.putSurface(s);
        if (r.forwardCurve) cache.putForwardCurve(r.forwardCurve);
        opts.onCalibrated?.(r);
      }),
  );
  return {
    subscription: subs,
    isSettled: () => {
      for (const [key, st] of states) if ((calibratedVersion.get(key) ?? -1) < st.version) return false;
      return true;
    },
    refitAllFull: () => fullAll$.next(),
  };
}
