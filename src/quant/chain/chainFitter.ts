/**
 * The calibration worker's fitter: one {@link FitMemory} per (source, pair) and memory namespace around
 * chainFit.ts fitChain.
 */
import type { ChainFit } from '../../domain/chainFit.js';
import type { ChainView } from '../../domain/chainView.js';
import { fitChain, type ChainFitOptions } from './chainFit.js';
import { FitMemory } from './fitMemory.js';

/**
 * A stateful fitter: one {@link FitMemory} per (source, pair) and memory namespace, so that rejected fits can
 * keep the last good slice and the counts accumulate. One per calibration worker (and one for in-thread use).
 */
export class ChainFitter {
  private readonly memories = new Map<string, FitMemory>();

  constructor(private readonly options: ChainFitOptions = {}) {}

  /**
   * Fit `view` with the memory of its (source, pair) in `namespace` (default 'live'; the simulated 24 h
   * history seeding uses its own so that it never touches the live memory). `shouldYield`: see {@link fitChain}.
   * @throws FitYielded when `shouldYield` stopped a regular incremental or periodic full fit
   */
  fit(view: ChainView, namespace = 'live', shouldYield?: () => boolean): ChainFit {
    const key = ChainFitter.key(view.source, view.pair, namespace);
    let m = this.memories.get(key);
    if (!m) this.memories.set(key, (m = new FitMemory()));
    return fitChain(view, this.options, m, shouldYield);
  }

  /**
   * The memory of (source, pair) in `namespace` (default 'live'): its last fits, counts and the refit/reuse tally of
   * the last pass ({@link FitMemory.lastPass}); undefined before its first fit.
   */
  memoryOf(source: ChainView['source'], pair: ChainView['pair'], namespace = 'live'): FitMemory | undefined {
    return this.memories.get(ChainFitter.key(source, pair, namespace));
  }

  private static key(source: ChainView['source'], pair: ChainView['pair'], namespace: string): string {
    return `${namespace}:${source}:${pair.base}/${pair.quote}`;
  }
}
