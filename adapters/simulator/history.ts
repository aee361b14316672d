/**
 * The simulated market's last 24 hours, so that GET iVSummary shows its 24 h changes from the start in
 * simulated mode (issue 4: "the simulator pre-runs 24 h of market history at start").
 *
 * How, and why it is honest:
 * 1. Pre-run. The simulator's Market is built `hours` before now (same seed) and stepped to now in steps of
 *    `stepS` seconds (its own stochastic dynamics, adapters/simulator/market.ts), then its clock becomes the
 *    real clock and the simulator serves from that state: the live market is the continuation of the path.
 * 2. Replaying the path. A twin Market with the same seed, start and step sequence follows exactly the same
 *    path (the Market is deterministic in seed, start time and step() calls). At each seed time t (every
 *    `everyS` seconds from now - hours to now) the twin's listings of the three simulated exchanges (Deribit,
 *    OKX and Bybit on the shared market, each through its own view and chains, rolled like the servers') are
 *    printed as the simulated exchanges print them at t (Deribit: every option's and future's ticker, mark IV
 *    rounded to 0.01 %, bid/ask on the tick, and the indices; OKX: instruments, index tickers, opt-summary,
 *    futures mark price and tickers; Bybit: instruments, option tickers, linear ticker snapshots), normalized by
 *    each exchange's real normalizer into a ChainState per pair, and calibrated by the
 *    same fitChain as the live data, memory namespace 'history'. The twin and the printing live in the
 *    calibration worker ({@link TwinMarketPrinter}), like the fits, so that the thread serving REST only builds
 *    the snapshots (and the one iVSummary of each history point, src/cache/history.ts summarizeSurface). The SVI, SABR and Vanna-Volga snapshots go to the 24 h history (src/cache/history.ts), not
 *    to the cache.
 * 3. Just in time. A seed point of time t is calibrated `leadS` before the live service first needs it, at
 *    t + 24 h (the 24 h change at time t' reads the point nearest t' - 24 h): at start only the
 *    points from now - 24 h to now - 24 h + leadS (3 points per pair with the defaults), then one per pair
 *    every `everyS`. So the seeding costs a few fits at start-up and a trickle afterwards, never 24 h of
 *    calibrations at once.
 * The only difference from live data: in a seed chain every ticker is printed at the same instant t (live, each
 * option is refreshed about once a second).
 */
import type { Logger } from 'pino';
import type { MarketEvent } from '../../src/domain/events.js';
import { SOURCES, pairKey, type Source } from '../../src/domain/markets.js';
import type { SurfaceSnapshot } from '../../src/cache/snapshot.js';
import { DIFF_HORIZON_S } from '../../src/cache/history.js';
import { normalizeDeribit } from '../deribit/normalize.js';
import { Market } from './market.js';
import { prerunMarket } from './prerun.js';
import { DeribitChains } from './chains.js';
import { futureTicker, indexData, notification, optionTicker, type SettlementMemory } from './deribitMessages.js';
import { Rng } from './rng.js';
import { MarketView, OKX_VIEW, BYBIT_VIEW } from './exchangeView.js';
import { OkxChains } from './okxChains.js';
import { indexStats, indexTickerItem, markPriceItem, okxPush, optSummaryItem, tickerItem } from './okxMessages.js';
import { BybitChains } from './bybitChains.js';
import { linearRecord, optionTickerData } from './bybitMessages.js';
import { OkxNormalizer, normalizeOkxInstruments } from '../okx/normalize.js';
import { BybitNormalizer, normalizeBybitInstruments } from '../bybit/normalize.js';
import type { Normalizer } from '../../src/domain/feeds.js';
import { ChainState, type ChainView } from '../../streams/chainState.js';
import { buildSnapshots } from '../../src/cache/snapshotBuilder.js';
import type { ChainFit } from '../../src/domain/chainFit.js';
import type { ChainFitter } from '../../src/quant/chain/chainFitter.js';

/** Which history: the market seed, its start (Unix ms, now - hours), its step (seconds), the exchanges printed. */
export interface HistorySpec {
  readonly seed: number;
  readonly startMs: number;
  readonly stepS: number;
  /** Exchanges whose chains are printed (default all three). */
  readonly sources?: readonly Source[];
}

/**
 * The twin market of a history and the three simulated exchanges' listings on it, printed at step n (time
 * startMs + n stepS) as each simulator prints it: Deribit option and future tickers and indices (JSON-RPC
 * notifications), OKX instruments, index tickers, opt-summary, futures mark price and tickers (v5 pushes), Bybit
 * instruments, option tickers and linear ticker snapshots; each normalized by that exchange's own normalizer
 * into one ChainView per (source, pair). Steps only forward (a request for an earlier step than the last one
 * printed throws). Runs in the calibration worker.
 */
export class TwinMarketPrinter {
  private readonly market: Market;
  private readonly deribit: DeribitChains;
  private readonly okx: { readonly view: MarketView; readonly chains: OkxChains; readonly normalizer: OkxNormalizer };
  private readonly bybit: { readonly view: MarketView; readonly chains: BybitChains; readonly normalizer: BybitNormalizer };
  private readonly rng: Rng;
  private readonly memory: SettlementMemory = new Map();
  private simMs: number;
  private step = 0;

  constructor(readonly spec: HistorySpec) {
    this.simMs = spec.startMs;
    this.market = new Market({ seed: spec.seed, clock: () => this.simMs });
    this.deribit = new DeribitChains(this.market);
    const okxView = new MarketView(this.market, OKX_VIEW);
    this.okx = { view: okxView, chains: new OkxChains(okxView), normalizer: new OkxNormalizer() };
    const bybitView = new MarketView(this.market, BYBIT_VIEW);
    this.bybit = { view: bybitView, chains: new BybitChains(bybitView), normalizer: new BybitNormalizer() };
    this.rng = Rng.derive(spec.seed, 'history:quotes');
  }

  /**
   * The chain views of every simulated (source, pair) at step `n` (>= the last step printed).
   * @throws RangeError for an earlier step
   */
  viewsAt(n: number): ChainView[] {
    const { startMs, stepS } = this.spec;
    if (n < this.step) throw new RangeError(`TwinMarketPrinter: step ${n} is before the current step ${this.step}`);
    while (this.step < n) {
      this.step++;
      this.simMs = startMs + this.step * stepS * 1000;
      this.market.step(stepS);
      this.deribit.refresh(this.simMs);
      this.okx.chains.refresh(this.simMs);
      this.bybit.chains.refresh(this.simMs);
    }
    const tMs = startMs + n * stepS * 1000;
    const tS = tMs / 1000;
    this.simMs = tMs;
    const states = new Map<string, ChainState>();
    const apply = (events: readonly MarketEvent[]): void => {
      for (const e of events) {
        if (e.kind !== 'option' && e.kind !== 'future' && e.kind !== 'index') continue;
        const key = pairKey(e.source, e);
        let st = states.get(key);
        if (!st) states.set(key, (st = new ChainState(e.source, { base: e.base, quote: e.quote })));
        st.apply(e);
      }
    };
    const through = (normalize: Normalizer, raw: unknown): void => {
      const r = normalize(raw, tS);
      if (r.ok) apply(r.events);
    };

    const printed = new Set<Source>(this.spec.sources ?? SOURCES);

    // Deribit
    const indices = new Map<string, { u: Parameters<typeof indexData>[2]; dp: number }>();
    for (const inst of printed.has('DERIBIT') ? this.deribit.all() : []) {
      indices.set(inst.product.priceIndex, { u: inst.underlying, dp: inst.product.priceDecimals });
      const data = inst.kind === 'option' ? optionTicker(this.market, inst, tMs, this.rng, this.memory) : futureTicker(this.market, inst, tMs, this.rng, this.memory);
      through(normalizeDeribit, notification(`ticker.${inst.name}.100ms`, data));
    }
    for (const [name, x] of indices) through(normalizeDeribit, notification(`deribit_price_index.${name}`, indexData(this.market, name, x.u, x.dp, tMs)));

    // OKX
    const okx = this.okx;
    okx.normalizer.registerInstruments(normalizeOkxInstruments(okx.chains.all().map((i) => i.json), tS).events);
    for (const family of printed.has('OKX') ? okx.chains.familyNames() : []) {
      const fam = okx.chains.family(family)!;
      const stats = indexStats(okx.view, fam.underlying, tMs);
      through(okx.normalizer.normalize, okxPush({ channel: 'index-tickers', instId: family }, [indexTickerItem(family, fam.priceDecimals, okx.view.spot(fam.underlying), stats, tMs)]));
      const items = okx.chains.list('OPTION', family).map((i) => optSummaryItem(okx.view, i, tMs));
      if (items.length > 0) through(okx.normalizer.normalize, okxPush({ channel: 'opt-summary', instFamily: family }, items));
      for (const inst of okx.chains.list('FUTURES', family)) {
        through(okx.normalizer.normalize, okxPush({ channel: 'mark-price', instId: inst.instId }, [markPriceItem(okx.view, inst, tMs)]));
        through(okx.normalizer.normalize, okxPush({ channel: 'tickers', instId: inst.instId }, [tickerItem(okx.view, inst, tMs, this.rng, stats)]));
      }
    }

    // Bybit
    const bybit = this.bybit;
    const listed = printed.has('BYBIT') ? [...bybit.chains.list('option'), ...bybit.chains.list('linear')] : [];
    bybit.normalizer.registerListing(normalizeBybitInstruments(listed.map((i) => i.json), tS).listing);
    for (const inst of listed) {
      const topic = `tickers.${inst.symbol}`;
      const msg =
        inst.category === 'option'
          ? { id: `${topic}-history-${tMs}`, topic, ts: tMs, data: optionTickerData(bybit.view, inst, tMs, this.rng), type: 'snapshot' }
          : { topic, type: 'snapshot', data: linearRecord(bybit.view, inst, tMs, this.rng), cs: 1, ts: tMs };
      through(bybit.normalizer.normalize, msg);
    }
    return [...states.values()].map((st) => st.view());
  }
}

/**
 * Print and fit step `n` of a history on this thread (the calibration worker does this; tests too): one
 * TwinMarketPrinter per spec, fits with `fitter` in memory namespace 'history'.
 */
export function historyFitter(fitter: ChainFitter): (spec: HistorySpec, n: number) => ChainFit[] {
  const printers = new Map<string, TwinMarketPrinter>();
  return (spec, n) => {
    const key = `${spec.seed}:${spec.startMs}:${spec.stepS}`;
    let p = printers.get(key);
    if (!p) printers.set(key, (p = new TwinMarketPrinter(spec)));
    return p.viewsAt(n).map((v) => fitter.fit(v, 'history'));
  };
}

/** Options of {@link prepareSimulatedHistory}. */
export interface SimulatedHistoryOptions {
  /** Market seed (SIM_SEED). */
  readonly seed: number;
  /** Hours of history (SIM_HISTORY_HOURS), > 0 (24 gives the 24 h changes from the start). Default 24. */
  readonly hours?: number;
  /** Market step of the pre-run, seconds. Default 300. */
  readonly stepS?: number;
  /** Spacing of the seed points, seconds (a multiple of stepS). Default 300 (the history's bucket). */
  readonly everyS?: number;
  /** Seed points are calibrated this many seconds before the live service needs them. Default 600. */
  readonly leadS?: number;
  /** Real clock, Unix ms. Default Date.now. */
  readonly clock?: () => number;
  /** Exchanges whose history is seeded (SOURCES; default all three). */
  readonly sources?: readonly Source[];
  /**
   * Build the pre-run Market here (default true). False when the simulators run in another process
   * (SIMULATOR_PROCESS=separate): that process builds the same market with prerunMarket (adapters/simulator/prerun.ts).
   */
  readonly buildMarket?: boolean;
}

/** What {@link SimulatedHistory.start} needs. */
export interface SeedingTarget {
  /**
   * Prints and fits step `n` of the history `spec`: one fit per pair (the calibration worker's `fitHistory`,
   * or {@link historyFitter} on this thread).
   */
  readonly fitAt: (spec: HistorySpec, n: number) => readonly ChainFit[] | Promise<readonly ChainFit[]>;
  /** Receives every snapshot built from a seed fit (the history's `record`). */
  readonly onSnapshot: (s: SurfaceSnapshot) => void;
  readonly logger?: Pick<Logger, 'info' | 'warn'>;
}

/** Progress of the seeding. */
export interface SeedingProgress {
  /** Seed times calibrated so far. */
  readonly points: number;
  /** Seed times in total. */
  readonly total: number;
  /** Observation time (Unix s) of the newest seed point, null before the first. */
  readonly newestS: number | null;
}

/** A pre-run market and the seeding of its history (see the module docstring). */
export interface SimulatedHistory {
  /**
   * The Market to give the simulator: stepped from now - hours to now, on the real clock from now on; null with
   * `buildMarket: false` (the simulator process builds it from {@link SimulatedHistory.spec} and `steps`, adapters/simulator/prerun.ts).
   */
  readonly market: Market | null;
  /** Market steps from the start of the history to now (what {@link prerunMarket} needs). */
  readonly steps: number;
  /** The history's seed, start and step (what the twin needs). */
  readonly spec: HistorySpec;
  /** Unix ms of the start of the history (now - hours). */
  readonly startMs: number;
  /** Start the just-in-time seeding (idempotent). */
  start(target: SeedingTarget): void;
  /** Resolves when the seed points due so far (by the clock, with the lead) are all in. */
  caughtUp(): Promise<void>;
  progress(): SeedingProgress;
  /** Stop seeding (pending timers cleared). */
  stop(): void;
}

/**
 * Hand the snapshots built from one seed point's fits to the target, each pair's sequence number one past its last
 * (`sequences`: key `source:base/quote` -> last sequence number, updated).
 */
function deliverSeedFits(fits: readonly ChainFit[], sequences: Map<string, number>, target: SeedingTarget): void {
  for (const fit of fits) {
    const key = `${fit.source}:${fit.pair.base}/${fit.pair.quote}`;
    const seq = (sequences.get(key) ?? 0) + 1;
    sequences.set(key, seq);
    for (const s of buildSnapshots(fit, seq).surfaces) target.onSnapshot(s);
  }
}

/**
 * The history's options with their defaults (hours 24, stepS 300, everyS 300, leadS 600, clock Date.now).
 * @throws RangeError when hours <= 0 or everyS is not a positive multiple of stepS
 */
function historySettings(opts: SimulatedHistoryOptions): { hours: number; stepS: number; everyS: number; leadS: number; clock: () => number } {
  const hours = opts.hours ?? 24;
  const stepS = opts.stepS ?? 300;
  const everyS = opts.everyS ?? 300;
  const leadS = opts.leadS ?? 600;
  const clock = opts.clock ?? Date.now;
  if (!(hours > 0)) throw new RangeError(`prepareSimulatedHistory: hours must be > 0, got ${hours}`);
  if (!(stepS > 0 && everyS > 0 && Number.isInteger(everyS / stepS))) throw new RangeError(`prepareSimulatedHistory: everyS (${everyS}) must be a positive multiple of stepS (${stepS})`);
  return { hours, stepS, everyS, leadS, clock };
}

/**
 * Build the pre-run simulator market and the seeder of its history.
 * @throws RangeError when hours <= 0 or everyS is not a positive multiple of stepS
 */
export function prepareSimulatedHistory(opts: SimulatedHistoryOptions): SimulatedHistory {
  const { hours, stepS, everyS, leadS, clock } = historySettings(opts);
  const nowMs = clock();
  const nSteps = Math.round((hours * 3600) / stepS);
  const startMs = nowMs - nSteps * stepS * 1000;
  const spec: HistorySpec = { seed: opts.seed, startMs, stepS, ...(opts.sources ? { sources: [...opts.sources] } : {}) };

  const market = opts.buildMarket === false ? null : prerunMarket(spec, nSteps, clock);

  const stepsPerPoint = everyS / stepS;
  const total = nSteps / stepsPerPoint + 1;
  let started = false;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let points = 0;
  let newestS: number | null = null;
  let waiters: Array<() => void> = [];
  let idle = true;
  const sequences = new Map<string, number>();
  /** Real time (ms) at which seed point j is needed: the 24 h change reads it DIFF_HORIZON_S after its time. */
  const dueAt = (j: number): number => startMs + j * everyS * 1000 + DIFF_HORIZON_S * 1000 - leadS * 1000;

  const notify = (): void => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };

  const run = async (target: SeedingTarget): Promise<void> => {
    idle = false;
    try {
      while (!stopped && points < total && dueAt(points) <= clock()) {
        const j = points;
        try {
          const fits = await target.fitAt(spec, j * stepsPerPoint);
          if (stopped) return;
          deliverSeedFits(fits, sequences, target);
          if (j === 0) target.logger?.info({ atS: startMs / 1000, pairs: fits.length }, 'simulated history: first 24 h reference point calibrated');
        } catch (err) {
          // a fit cut short by stop() (its worker closed) is no failure
          if (stopped) return;
          target.logger?.warn({ err: (err as Error).message, step: j * stepsPerPoint }, 'simulated history: a seed point failed; it is missing');
        }
        points = j + 1;
        newestS = (startMs + j * everyS * 1000) / 1000;
      }
    } finally {
      idle = true;
      notify();
    }
    if (!stopped && points < total) {
      timer = setTimeout(() => void run(target), Math.max(1000, dueAt(points) - clock()));
      timer.unref();
    }
  };

  return {
    market,
    steps: nSteps,
    spec,
    startMs,
    start(target) {
      if (started || stopped) return;
      started = true;
      void run(target);
    },
    caughtUp() {
      if (stopped || (idle && (points >= total || dueAt(points) > clock()))) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
    progress: () => ({ points, total, newestS }),
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      notify();
    },
  };
}
