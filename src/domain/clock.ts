/**
 * Clocks, in Unix SECONDS (fractional).
 *
 * In `simulated` and `live` the service runs on the wall clock. In `replay` the clock is the
 * recorded messages' own time (issue 2: observationTimestamp and every "must be >= current time"
 * rule use it), advanced by the replay as messages pass.
 */
export interface Clock {
  /** Current time, Unix seconds (fractional). */
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() / 1000 };

/** A clock advanced by the market data itself (replay). Never goes backwards. */
export class MarketClock implements Clock {
  private t: number;
  constructor(startS = 0) {
    this.t = startS;
  }
  /** Advance to `tS` seconds if later than the current time. */
  advance(tS: number): void {
    if (Number.isFinite(tS) && tS > this.t) this.t = tS;
  }
  now(): number {
    return this.t;
  }
}
