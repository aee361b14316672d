/**
 * Latest market state of one (source, pair) chain: option tickers by instrument, futures by
 * instrument, the spot index. Mutable inside its stream only; {@link ChainState.view} hands the
 * calibrator an immutable copy.
 */
import type { FutureQuote, IndexPrice, OptionQuote } from '../src/domain/events.js';
import type { Pair, Source } from '../src/domain/markets.js';

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
}

export class ChainState {
  private readonly options = new Map<string, OptionQuote>();
  private readonly futures = new Map<string, FutureQuote>();
  private indexPrice: number | null = null;
  private indexTs = -Infinity;
  private latestTs = -Infinity;
  /** Events applied since the last view(). */
  version = 0;

  constructor(
    readonly source: Source,
    readonly pair: Pair,
  ) {}

  /**
   * Apply one event. Out-of-order ticks (older exchange timestamp than the one held for that
   * instrument) are ignored, so a late message never overwrites a newer value.
   * @returns true when the state changed
   */
  apply(ev: OptionQuote | FutureQuote | IndexPrice): boolean {
    switch (ev.kind) {
      case 'option': {
        const prev = this.options.get(ev.instrument);
        if (prev && prev.timestamp > ev.timestamp) return false;
        this.options.set(ev.instrument, ev);
        this.setIndex(ev.indexPrice, ev.timestamp, false);
        break;
      }
      case 'future': {
        const prev = this.futures.get(ev.instrument);
        if (prev && prev.timestamp > ev.timestamp) return false;
        this.futures.set(ev.instrument, ev);
        this.setIndex(ev.indexPrice, ev.timestamp, false);
        break;
      }
      case 'index':
        this.setIndex(ev.price, ev.timestamp, true);
        break;
    }
    if (ev.timestamp > this.latestTs) this.latestTs = ev.timestamp;
    this.version++;
    return true;
  }

  /** Drop instruments that expired at or before `nowS`. Returns how many were removed. */
  rollOff(nowS: number): number {
    let n = 0;
    for (const [name, q] of this.options) {
      if (q.expirationTimestamp <= nowS) {
        this.options.delete(name);
        n++;
      }
    }
    for (const [name, q] of this.futures) {
      if (q.expirationTimestamp !== null && q.expirationTimestamp <= nowS) {
        this.futures.delete(name);
        n++;
      }
    }
    if (n > 0) this.version++;
    return n;
  }

  /** Number of option instruments held. */
  get optionCount(): number {
    return this.options.size;
  }

  /** Immutable copy for calibration. */
  view(): ChainView {
    return Object.freeze({
      source: this.source,
      pair: this.pair,
      observationTimestamp: this.latestTs,
      spot: this.indexPrice,
      options: Object.freeze([...this.options.values()]),
      futures: Object.freeze([...this.futures.values()]),
      version: this.version,
    });
  }

  /** The dedicated index channel wins over the index price carried on tickers. */
  private setIndex(price: number, ts: number, dedicated: boolean): void {
    if (dedicated) {
      if (ts >= this.indexTs) {
        this.indexPrice = price;
        this.indexTs = ts;
      }
    } else if (this.indexPrice === null || ts > this.indexTs) {
      this.indexPrice = price;
      this.indexTs = ts;
    }
  }
}
