/**
 * What a chain fit keeps between recalibrations of one (source, pair), per model ({@link FitMemory}): the last good
 * slice per expiry (served when a new fit is rejected), the cumulative repair/rejection counts, each expiry's last own
 * fit with the inputs it was fitted to (incremental refits), the last calendar-ceiling wing repair per expiry, and the
 * yield protocol of a preemptible fit ({@link FitYielded}). Plain data, owned by one calibration worker's ChainFitter
 * (chainFitter.ts); chainFit.ts reads and updates it.
 */
import type { ExpirySlice } from '../../domain/chainFit.js';
import { VOLATILITY_MODELS, type VolatilityModel } from '../../domain/volatilityModels.js';
import type { SliceFit, SliceQuote, SmileModel } from '../models/index.js';
import type { DraftSlice } from './quality.js';
import type { SliceGate } from './sliceGate.js';
import type { EligibleGroup } from './expiryGroups.js';

/** The last good (served, not kept) slice of an expiry, with the model's typed parameters `P`, and when its chain was observed. */
export interface GoodSlice<P> {
  readonly slice: DraftSlice<P>;
  /** Observation time of the chain it was fitted to. */
  readonly fittedAt: number;
}

/** The cumulative repair/rejection counts of one model (ArbitrageCounts, mutable while a chain is fitted). */
export interface MutableCounts {
  fits: number;
  constrainedRefits: number;
  calendarRepaired: number;
  rejected: number;
  keptPrevious: number;
  dropped: number;
}

/**
 * The last calendar-ceiling wing repair of one expiry (chainFit.ts fitModel's wing repair), keyed by the own fits it was made
 * from: the identity ({@link FittedExpiry.id}) of the repaired slice's fit and of the next expiry's served slice.
 * `params` at `T` and `forward` (carried to a later observation by the model's carryForward); `failed` when that
 * repair did not give an arbitrage-free slice under the ceiling.
 */
export type WingRepair<P> =
  | { readonly key: string; readonly failed: true }
  | {
      readonly key: string;
      readonly failed: false;
      /** The model's typed parameters. */
      readonly params: P;
      readonly T: number;
      readonly forward: number;
      /** The refit's own method text, minimum density and warnings. */
      readonly method: string;
      readonly minDensity: number | null | undefined;
      readonly warnings: readonly string[];
    };

/** Counts of a model never fitted. */
function zeroCounts(): MutableCounts {
  return { fits: 0, constrainedRefits: 0, calendarRepaired: 0, rejected: 0, keptPrevious: 0, dropped: 0 };
}

/**
 * What one (source, pair) keeps between recalibrations, per model: the last good (served, not kept) slice of
 * each expiry, for the rejection rule, and the cumulative repair/rejection counts. Plain data; a
 * {@link ChainFitter} (one per calibration worker) holds one per (source, pair).
 */
export class FitMemory {
  readonly lastGood = new Map<VolatilityModel, Map<number, GoodSlice<unknown>>>(VOLATILITY_MODELS.map((m) => [m, new Map()]));
  readonly counts = new Map<VolatilityModel, MutableCounts>(VOLATILITY_MODELS.map((m) => [m, zeroCounts()]));
  /** Per model and expiry: the last own fit (pass 1) with the inputs it was fitted to (incremental refits). */
  readonly fitted = new Map<VolatilityModel, Map<number, FittedExpiry<unknown>>>(VOLATILITY_MODELS.map((m) => [m, new Map()]));
  /**
   * Per model and expiry: the last wing repair under the next expiry's calendar ceiling and the fits it was made from.
   * A later pass in which both fits are the same (reused or deferred, not refitted) serves that repair carried to its
   * T instead of refitting it (a warm SVI ceiling refit is 2 to 3 ms: it was 40 % of an urgent partial refit on the
   * real 878-option chain), after checking the ceiling again on the current grid.
   */
  readonly wingRepairs = new Map<VolatilityModel, Map<number, WingRepair<unknown>>>(VOLATILITY_MODELS.map((m) => [m, new Map()]));
  /** Per model and expiry: the last sparse-pass fit ({@link SparseFit}). */
  readonly sparseFits = new Map<VolatilityModel, Map<number, SparseFit<unknown>>>(VOLATILITY_MODELS.map((m) => [m, new Map()]));
  /** Next {@link FittedExpiry.id}. */
  nextFitId = 1;
  /**
   * True while a view that is not `full` is fitted (set by {@link fitChain}): unchanged expiries reuse their last
   * fit and changed ones refit warm. False: every expiry is fitted cold.
   */
  incremental = false;
  /**
   * The expiries an urgent partial view may refit (ChainView.refitOnly, set by {@link fitChain}); null for a regular
   * view. Every other expiry with an earlier fit keeps it, carried to the new forward and T, even when its inputs
   * changed ("deferred": its fit memory keeps the old inputs, so the next regular view refits it).
   */
  refitOnly: ReadonlySet<number> | null = null;
  /**
   * Set by {@link fitChain} on a view that may yield (src/domain/chainView.ts mayYield: regular incremental, or the periodic safety
   * net's full view) when the caller can preempt it: asked
   * before each slice refit after the first of the chain; true stops the chain fit there with {@link FitYielded}.
   * Null: the fit runs to its end.
   */
  shouldYield: (() => boolean) | null = null;
  /** Slices refitted (not reused, not deferred) by the chain fit in progress, every model. */
  chainRefits = 0;
  /**
   * Per model, expiries refitted (pass 1), reused (confirmed: unchanged or within the tracking tolerance), deferred
   * and fitted in the sparse pass by the last {@link fitModel}, and its calendar-ceiling wing
   * repairs refitted and reused ({@link wingRepairs}) (diagnostics, tests, the benchmark).
   */
  readonly lastPass = new Map<VolatilityModel, PassTally>();
  /**
   * Per model: the calendar flags and quality figures of the last pass and the fit identities of its served slices
   * (chainFit.ts derivedPass): a pass whose slices are the same fits reuses them instead of recomputing.
   */
  readonly derived = new Map<VolatilityModel, DerivedFigures>();

  /**
   * The maps of one model, typed by its parameters `P`: each model's entries are written only by its own passes
   * (chainFit.ts), with the parameters its module made, so they are read back as such (the one place the model's type
   * is restored from the registry's `SmileModel<unknown>`).
   */
  modelState<P>(smile: SmileModel<P>): {
    lastGood: Map<number, GoodSlice<P>>;
    fitted: Map<number, FittedExpiry<P>>;
    wingRepairs: Map<number, WingRepair<P>>;
    sparseFits: Map<number, SparseFit<P>>;
  } {
    const m = smile.name;
    return {
      lastGood: this.lastGood.get(m)! as Map<number, GoodSlice<P>>,
      fitted: this.fitted.get(m)! as Map<number, FittedExpiry<P>>,
      wingRepairs: this.wingRepairs.get(m)! as Map<number, WingRepair<P>>,
      sparseFits: this.sparseFits.get(m)! as Map<number, SparseFit<P>>,
    };
  }

  /** Forget the slices of expiries at or before `nowS`. */
  prune(nowS: number): void {
    for (const byExpiry of [...this.lastGood.values(), ...this.fitted.values(), ...this.wingRepairs.values(), ...this.sparseFits.values()]) {
      for (const e of [...byExpiry.keys()]) if (e <= nowS) byExpiry.delete(e);
    }
  }
}

/** What one model's pass of a chain fit did (FitMemory.lastPass). */
export interface PassTally {
  refitted: number;
  /** Confirmed: reused, unchanged or within the tracking tolerance (full and sparse expiries). */
  reused: number;
  warm: number;
  deferred: number;
  /** Sparse expiries fitted. */
  sparse: number;
  ceilingRefitted: number;
  ceilingReused: number;
  /** The calendar flags and quality figures were those of the previous pass (FitMemory.derived). */
  derivedReused: boolean;
}

/** The derived figures of one model's pass (FitMemory.derived): keyed by the served slices' fit identities. */
export interface DerivedFigures {
  readonly key: string;
  /** Each served slice's diagnostics after the calendar and quality passes, in T order. */
  readonly fits: readonly ExpirySlice['fit'][];
  readonly calendarFreeRaw: boolean;
  readonly calendarFree: boolean;
}

/** An expiry's last own fit and what it was fitted to (see {@link FitMemory.fitted}). */
export interface FittedExpiry<P> {
  /** Unique per memory: the identity of this fit (a refit gets a new one). */
  readonly id: number;
  /** {@link inputSignature} of the group fitted. */
  readonly signature: string;
  /** Identity of the shape prior used ('' when the fit does not depend on one). */
  readonly priorKey: string;
  readonly attempt: SliceFit<P>;
  readonly T: number;
  readonly forward: number;
  /** Observation time of the fit, Unix s. */
  readonly fittedAt: number;
  /** The quotes fitted (log-moneyness against `forward`). */
  readonly quotes: readonly SliceQuote[];
  /** The refit gate of this fit (src/quant/chain/sliceGate.ts), built on first use; null when it cannot be built. */
  gate: SliceGate | null | undefined;
}

/**
 * A sparse expiry's last fit (chainFit.ts sparse pass) and what it was made from: the identities of the served
 * neighbours its shape came from and its own quotes. Reused, carried to the new T and forward, while the neighbours
 * are the same fits and every quote's residual moved by less than its tracking tolerance.
 */
export interface SparseFit<P> {
  /** Unique per memory (from FitMemory.nextFitId): the identity of this fit. */
  readonly id: number;
  /** The neighbours' fit identities (FittedExpiry.id), and which sparse mode. */
  readonly key: string;
  readonly attempt: SliceFit<P>;
  readonly T: number;
  readonly forward: number;
  readonly quotes: readonly SliceQuote[];
  /** The method text of the sparse fit (chainFit.ts settle's `sparseHow`). */
  readonly how: string;
  readonly fittedAt: number;
}

const signatures = new WeakMap<EligibleGroup, string>();
/**
 * The inputs of an expiry's fit as one string: forward and every quote's strike, mark, bid and ask IV (exact
 * numbers). Equal signatures mean a refit would see the same data (T aside). Memoized per group object.
 */
export function inputSignature(g: EligibleGroup): string {
  let sig = signatures.get(g);
  if (sig === undefined) {
    const parts: string[] = [String(g.forward)];
    for (const q of g.quotes) parts.push(`${q.strike}:${q.markIv}:${q.bidIv}:${q.askIv}`);
    sig = parts.join('|');
    signatures.set(g, sig);
  }
  return sig;
}

/**
 * A chain fit stopped at a slice boundary because the caller asked it to yield (fitChain's `shouldYield`: an urgent
 * fit waits for this worker). Not a failure: the slices refitted so far are kept in the pair's memory.
 */
export class FitYielded extends Error {
  constructor() {
    super('chain fit yielded to an urgent one');
    this.name = 'FitYielded';
  }
}
