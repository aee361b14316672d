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

/**
 * A simulated wall clock: starts at `startS` (Unix seconds) and advances at the real rate.
 *
 * Used by the simulated market (config `SIM_START_TIME`) so that which expiries are listed, how close the
 * first one is and which funding hours pass do not depend on the hour a test suite runs: the whole service
 * (cache staleness, feeds' receive time, metrics ages) and the simulators read this one clock.
 */
export class SimulatedClock implements Clock {
  private readonly startS: number;
  private readonly wallStartMs: number;
  /**
   * @param startS simulated time at construction, Unix seconds (finite)
   * @param wallMs the real clock it advances with, Unix ms (default Date.now; injectable in tests)
   * @throws RangeError when `startS` is not finite
   */
  constructor(startS: number, private readonly wallMs: () => number = Date.now) {
    if (!Number.isFinite(startS)) throw new RangeError(`SimulatedClock: start must be finite Unix seconds, got ${startS}`);
    this.startS = startS;
    this.wallStartMs = wallMs();
  }
  now(): number {
    return this.startS + (this.wallMs() - this.wallStartMs) / 1000;
  }
  /** Current simulated time in Unix ms (the simulators' unit). */
  nowMs(): number {
    return this.now() * 1000;
  }
}

/**
 * Parse a start time given as Unix seconds (`1795766340`) or an ISO 8601 date-time with a zone
 * (`2026-11-27T07:58:00Z`). Returns Unix seconds, or null when the text is neither.
 */
export function parseStartTime(text: string): number | null {
  const t = text.trim();
  if (/^-?\d+(\.\d+)?$/.test(t)) {
    const s = Number(t);
    return Number.isFinite(s) ? s : null;
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(t)) return null;
  const ms = Date.parse(t);
  return Number.isFinite(ms) ? ms / 1000 : null;
}
