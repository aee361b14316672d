/**
 * The immutable view of one (source, pair) chain that a chain fit takes as input (src/quant/chain/chainFit.ts
 * fitChain), taken by streams/chainState.ts ChainState.view / urgentView and sent to the calibration workers
 * (streams/viewCodec.ts). Plain data; times in Unix seconds, prices in the pair's quote currency.
 */
import type { FutureQuote, OptionQuote } from './events.js';
import type { Pair, Source } from './markets.js';

/** Immutable view of a chain, as calibration input. Times in Unix seconds. */
export interface ChainView {
  readonly source: Source;
  readonly pair: Pair;
  /** Newest exchange timestamp among the chain's events. */
  readonly observationTimestamp: number;
  /** Spot index (quote currency); null before any index/quote carried one. */
  readonly spot: number | null;
  readonly options: readonly OptionQuote[];
  readonly futures: readonly FutureQuote[];
  /** The chain state's version (count of applied changes) this view was taken at. */
  readonly version: number;
  /**
   * Incremental refit input (issue 12 item 1): the expiries (Unix s) whose option quotes or dated future changed
   * since the version given to streams/chainState.ts ChainState.view (the last successfully fitted one), ascending. Absent or
   * `full: true`: treat every expiry as changed.
   */
  readonly changedExpiries?: readonly number[];
  /**
   * True when this view needs a full cold fit: the first view, an instrument rolled off or removed, a reconnect of
   * the source (streams/chainState.ts ChainState.requireFull), or the periodic safety net (the pipeline's `fullRefitEveryMs`).
   */
  readonly full?: boolean;
  /** True when the spot index changed since that version (the forward curve's spot; slices fit their own forwards). */
  readonly spotChanged?: boolean;
  /**
   * An urgent partial view (streams/chainState.ts ChainState.urgentView): only these expiries (Unix s, ascending) may be refitted;
   * every other expiry keeps its last fit, carried to the view's forward and T, until the next regular view. Absent:
   * a regular view (every changed expiry is refitted).
   */
  readonly refitOnly?: readonly number[];
  /**
   * True on a full view that only the periodic safety net asked for (not the first view, a roll-off or a reconnect):
   * its data is not stale, so it does not jump the calibration worker's queue (streams/calibrationPool.ts).
   */
  readonly periodic?: boolean;
}

/**
 * True for a regular incremental view: not full, not an urgent partial one. The only kind of fit that may yield its
 * worker to an urgent one (streams/calibrationPool.ts preemption, src/quant/chain/chainFit.ts fitChain `shouldYield`).
 */
export function isRegularIncremental(view: Pick<ChainView, 'full' | 'refitOnly'>): boolean {
  return view.full === false && view.refitOnly === undefined;
}

/**
 * True for a fit that may yield its worker at a slice boundary to an urgent or reconnect fit queued behind it: a
 * regular incremental view, or a full view of the periodic safety net only (its data is not stale; a move waiting
 * behind its whole cold pass, 30 to 45 ms for a BTC chain, set the slowest urgent refits). Fits after a start,
 * reconnect or roll-off and urgent partial fits never yield (streams/calibrationPool.ts).
 */
export function mayYield(view: Pick<ChainView, 'full' | 'refitOnly' | 'periodic'>): boolean {
  return isRegularIncremental(view) || (view.full === true && view.periodic === true && view.refitOnly === undefined);
}
