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
 * Per (source, pair): at most one calibration in flight and the latest state wins
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
  const { cache, clock, logger } = opts;
  const inThread = new ChainFitter();
  const fit = opts.fit ?? ((view: ChainView) => inThread.fit(view));
  const shared$ = events$.pipe(share());
  const subs = new Subscription();

  const sequences = new Map<string, number>();
  /** Per (source, pair) the last published result: unchanged slices share its frozen quote lists. */
  const lastResults = new Map<string, CalibrationResult>();
  const states = new Map<string, ChainState>();
  const calibratedVersion = new Map<string, number>();
  /** Version of the last SUCCESSFUL fit per (source, pair): what the next view's changed expiries are relative to. */
  const fittedVersion = new Map<string, number>();
  const lastFullAt = new Map<string, number>();
  const fullEveryMs = opts.fullRefitEveryMs ?? 60_000;
  const wasDisconnected = new Set<string>();
  const fullAll$ = new Subject<void>();

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
        mergeMap((group$) => {
          let state: ChainState | null = null;
          const key = group$.key;
          const changes$ = group$.pipe(
            filter((e) => {
              if (!state) {
                state = new ChainState(e.source, { base: e.base, quote: e.quote }, { urgentVolPts: opts.urgentVolPts ?? 0 });
                states.set(key, state);
              }
              const changed = state.apply(e);
              if (changed) cache.touch(e.source, { base: e.base, quote: e.quote }, e.receivedAt);
              return changed;
            }),
            share(),
          );
          const regular$ = changes$.pipe(
            auditTime(opts.throttleMs),
            map((): Trigger => 'regular'),
          );
          /** Emits after a run when urgent moves wait (they arrived while a full fit was due or in flight). */
          const kick$ = new Subject<void>();
          const coalesceMs = opts.urgentCoalesceMs ?? URGENT_COALESCE_MS;
          const urgentTicks$ = merge(changes$, kick$).pipe(filter(() => state!.hasUrgent(fittedVersion.get(key) ?? 0)));
          const urgent$ = (coalesceMs > 0 ? urgentTicks$.pipe(auditTime(coalesceMs)) : urgentTicks$).pipe(map((): Trigger => 'urgent'));
          const kickIfUrgent = (): void => {
            if (state!.hasUrgent(fittedVersion.get(key) ?? 0)) kick$.next();
          };
          /** A regular recalibration owed after the urgent one running first (or withdrawn from the queue for it). */
          const regularKick$ = new Subject<void>();
          let regularOwed = false;
          /** The view of the run in flight (at most one), and how to withdraw it while it waits for a worker (regular runs). */
          let inFlight: ChainView | null = null;
          let withdraw: AbortController | null = null;
          /** After an urgent run: the regular one it went before is due now (its throttle window has passed). */
          const settleOwed = (): void => {
            if (!regularOwed) return;
            regularOwed = false;
            regularKick$.next();
          };
          /**
           * The view for a trigger, taken now (the latest state): the urgent partial view first when one is due, whatever
           * the trigger, else the regular one when a regular run is asked for (or owed); null when nothing is left to do.
           * (A regular trigger that finds a move still in its coalescing window runs it first too: taken by the regular
           * view, the move waited for a whole regular pass, behind the other pairs' fits in the worker queue: 240 ms in
           * bench/freshness.ts, against 25 ms for an urgent refit.)
           */
          const viewFor = (trigger: Trigger): ChainView | null => {
            const s = state!;
            const since = fittedVersion.get(key) ?? 0;
            const wantRegular = trigger !== 'urgent' || regularOwed;
            const urgentView = s.urgentView(since);
            if (urgentView) {
              if (wantRegular) regularOwed = true;
              return urgentView;
            }
            if (!wantRegular) return null;
            regularOwed = false;
            s.rollOff(clock.now());
            // nothing applied since the last successful fit and no full fit due: that fit already shows this state
            if (s.version <= since && !s.fullDue(since)) return null;
            const t = performance.now();
            const view = s.view(since, undefined, t - (lastFullAt.get(key) ?? -Infinity) >= fullEveryMs);
            if (view.full) lastFullAt.set(key, t);
            return view;
          };
          const fullNow$ = fullAll$.pipe(
            filter(() => state !== null),
            map((): Trigger => {
              state!.requireFullNow();
              return 'regular';
            }),
          );
          return merge(regular$, urgent$, regularKick$.pipe(map((): Trigger => 'regular')), fullNow$).pipe(
            // an urgent refit withdraws the pair's regular fit waiting for (or running in) a worker: it runs first, the
            // regular after
            tap((trigger) => {
              // (not when the regular view in flight was taken after the move: it holds it, nothing is urgent any more)
              if (trigger !== 'regular' && withdraw && state!.hasUrgent(fittedVersion.get(key) ?? 0)) withdraw.abort();
            }),
            latestWins(
              (trigger): { chainFit: ChainFit; view: ChainView } | null | Promise<{ chainFit: ChainFit; view: ChainView }> => {
                const view = viewFor(trigger);
                if (!view) return null;
                inFlight = view;
                withdraw = view.refitOnly ? null : new AbortController();
                const r = fit(view, withdraw?.signal);
                return r instanceof Promise ? r.then((chainFit) => ({ chainFit, view })) : { chainFit: r, view };
              },
              (err) => {
                const view = inFlight!;
                withdraw = null;
                if (err instanceof FitWithdrawnError) {
                  // withdrawn from the queue, or yielded its worker at a slice boundary (the slices it refitted are kept
                  // in the worker's memory): the urgent refit waiting goes first, this regular one again after it (a
                  // periodic full fit again as a full one: the safety net is not skipped)
                  if (view.periodic === true) lastFullAt.delete(key);
                  regularOwed = true;
                  regularKick$.next();
                  return;
                }
                // a failed regular run still counts as done for that version: the last good surface stays
                if (!view.refitOnly) calibratedVersion.set(key, view.version);
                logger.error({ err, source: view.source, pair: `${view.pair.base}/${view.pair.quote}`, partial: view.refitOnly !== undefined }, 'calibration failed; the last good surface stays');
                if (view.refitOnly) settleOwed();
                kickIfUrgent();
              },
              mergeTriggers,
            ),
            filter((x): x is { chainFit: ChainFit; view: ChainView } => x !== null),
            map(({ chainFit, view }) => {
              withdraw = null;
              const seq = (sequences.get(key) ?? 0) + 1;
              sequences.set(key, seq);
              const built = buildSnapshots(chainFit, seq, lastResults.get(key));
              const result = view.refitOnly ? { ...built, partial: true } : built;
              lastResults.set(key, result);
              if (!view.refitOnly) {
                calibratedVersion.set(key, chainFit.version);
                fittedVersion.set(key, chainFit.version);
              }
              // an urgent move that arrived while a full fit was due (no partial view then) is not left to the throttle
              kickIfUrgent();
              if (view.refitOnly) settleOwed();
              return result;
            }),
          );
        }),
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
