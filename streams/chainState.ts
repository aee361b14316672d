/**
 * Latest market state of one (source, pair) chain: option tickers by instrument, futures by
 * instrument, the spot index. Mutable inside its stream only; {@link ChainState.view} hands the
 * calibrator an immutable copy.
 */
import type { FutureQuote, IndexPrice, OptionQuote } from '../src/domain/events.js';
import type { Pair, Source } from '../src/domain/markets.js';
import type { ChainView } from '../src/domain/chainView.js';

// The view's shape and its predicates live in src/domain (the chain fit's input); re-exported for the pipeline.
export { isRegularIncremental, mayYield, type ChainView } from '../src/domain/chainView.js';

/** Options of a {@link ChainState}. */
export interface ChainStateOptions {
  /**
   * Urgency threshold, vol points (default 0: off). An expiry is urgent ({@link ChainState.hasUrgent}) when its smile
   * moved by at least this much at some quoted strike since the last view that refitted it: the moves of its marks
   * since then (each instrument's mark IV minus its mark IV in that view, averaged per strike over call and put),
   * smoothed across strikes by least squares ({@link smoothedMoveVolPts}), reach the threshold. The pipeline then
   * refits it at once instead of waiting for the throttle. Checked on every tick of an expiry once one of its marks
   * moved by the threshold (whatever order the ticks of a move arrive in).
   */
  readonly urgentVolPts?: number;
}

/**
 * How far an expiry's smile moved, vol points: the largest |fitted value| at the strikes of a least-squares
 * polynomial in log-moneyness fitted to the mark moves, one point per strike (quadratic from 10 strikes, linear from 4,
 * their mean below 4: at least about three points per parameter; a lower degree when the strikes do not support the
 * higher one).
 *
 * Why smoothed: a single mark moving by 0.3 vol point is mostly idiosyncratic noise (exchanges re-mark each option on
 * its own; the simulator re-draws per-option mark noise), which the surface fit itself averages away, so refitting
 * at once for it buys nothing. A move of the smile's level, skew or curvature (the parallel shift of an expiry, a wing
 * repriced) passes the smoothing whole. With independent noise of standard deviation s per mark, the fitted value at
 * a strike has standard deviation about s * sqrt(3 / n) at the centre of n strikes (linear regression, e.g. Press,
 * Teukolsky, Vetterling and Flannery, "Numerical Recipes", 3rd ed., 2007, sec. 15.4, general linear least squares;
 * the normal equations are solved by Gaussian elimination with partial pivoting here).
 *
 * @param k log-moneyness ln(K/F) of each strike (distinct)
 * @param dVolPts mark move at each strike, vol points (same length as k)
 * @returns the largest |smoothed move| at the strikes, vol points (0 for none)
 */
export function smoothedMoveVolPts(k: ArrayLike<number>, dVolPts: ArrayLike<number>): number {
  const n = k.length;
  if (n === 0) return 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    lo = Math.min(lo, k[i]!);
    hi = Math.max(hi, k[i]!);
  }
  const mid = (lo + hi) / 2;
  const half = (hi - lo) / 2;
  // x in [-1, 1] for conditioning; all strikes equal: the mean only
  const x = (i: number): number => (half > 0 ? (k[i]! - mid) / half : 0);
  for (let degree = half > 0 ? (n >= 10 ? 2 : n >= 4 ? 1 : 0) : 0; degree >= 0; degree--) {
    const m = degree + 1;
    // normal equations A c = b, A[r][c] = sum x^(r+c), b[r] = sum x^r d
    const A = Array.from({ length: m }, () => new Float64Array(m + 1));
    for (let i = 0; i < n; i++) {
      const xi = x(i);
      const p = [1, xi, xi * xi];
      for (let r = 0; r < m; r++) {
        for (let c = 0; c < m; c++) A[r]![c]! += p[r]! * p[c]!;
        A[r]![m]! += p[r]! * dVolPts[i]!;
      }
    }
    const coef = solveSmall(A, m);
    if (coef === null) continue;
    let worst = 0;
    for (let i = 0; i < n; i++) {
      const xi = x(i);
      const fitted = coef[0]! + (m > 1 ? coef[1]! * xi : 0) + (m > 2 ? coef[2]! * xi * xi : 0);
      worst = Math.max(worst, Math.abs(fitted));
    }
    return worst;
  }
  return 0;
}

/** Gaussian elimination with partial pivoting of an m x (m+1) augmented system; null when (nearly) singular. */
function solveSmall(A: Float64Array[], m: number): number[] | null {
  for (let col = 0; col < m; col++) {
    let piv = col;
    for (let r = col + 1; r < m; r++) if (Math.abs(A[r]![col]!) > Math.abs(A[piv]![col]!)) piv = r;
    if (Math.abs(A[piv]![col]!) < 1e-9 * Math.max(1, Math.abs(A[0]![0]!))) return null;
    [A[col], A[piv]] = [A[piv]!, A[col]!];
    for (let r = col + 1; r < m; r++) {
      const f = A[r]![col]! / A[col]![col]!;
      for (let c = col; c <= m; c++) A[r]![c]! -= f * A[col]![c]!;
    }
  }
  const out = new Array<number>(m).fill(0);
  for (let r = m - 1; r >= 0; r--) {
    let v = A[r]![m]!;
    for (let c = r + 1; c < m; c++) v -= A[r]![c]! * out[c]!;
    out[r] = v / A[r]![r]!;
  }
  return out;
}

export class ChainState {
  private readonly options = new Map<string, OptionQuote>();
  /** The same option quotes per expiry (Unix s), for the urgency test. */
  private readonly optionsByExpiry = new Map<number, Map<string, OptionQuote>>();
  private readonly futures = new Map<string, FutureQuote>();
  private indexPrice: number | null = null;
  private indexTs = -Infinity;
  private latestTs = -Infinity;
  /** Events applied since the last view(). */
  version = 0;
  /** Per expiry (Unix s), the version of its last change (option quote or dated future). */
  private readonly expiryChangedAt = new Map<number, number>();
  /** Version of the last change that needs a full fit (roll-off, reconnect); 0 at start (the first view is full). */
  private fullAt = 0;
  /** Version of the last spot index change. */
  private spotChangedAt = 0;
  /** Urgency threshold as a fraction of vol (0: off). */
  private readonly urgentIv: number;
  /** Per option instrument, its mark IV (fraction) in the last view that refitted its expiry. */
  private readonly viewedMarkIv = new Map<string, number>();
  /** Expiries (Unix s) with an urgent move not yet handed to a view. */
  private readonly urgent = new Set<number>();
  /** Expiries with a mark that moved by the threshold since the view that last refitted them (checked on every tick). */
  private readonly moved = new Set<number>();

  constructor(
    readonly source: Source,
    readonly pair: Pair,
    options: ChainStateOptions = {},
  ) {
    const v = options.urgentVolPts ?? 0;
    if (!(v >= 0) || !Number.isFinite(v)) throw new RangeError(`ChainState: urgentVolPts must be a finite number >= 0, got ${v}`);
    this.urgentIv = v / 100;
  }

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
        let sameExpiry = this.optionsByExpiry.get(ev.expirationTimestamp);
        if (!sameExpiry) this.optionsByExpiry.set(ev.expirationTimestamp, (sameExpiry = new Map()));
        sameExpiry.set(ev.instrument, ev);
        this.setIndex(ev.indexPrice, ev.timestamp, false);
        this.expiryChangedAt.set(ev.expirationTimestamp, this.version + 1);
        if (this.urgentIv > 0 && !this.urgent.has(ev.expirationTimestamp)) {
          const seen = this.viewedMarkIv.get(ev.instrument);
          if (seen !== undefined && Math.abs(ev.markIv - seen) >= this.urgentIv) this.moved.add(ev.expirationTimestamp);
          if (this.moved.has(ev.expirationTimestamp) && this.smileMoveVolPts(sameExpiry, ev.forward) >= this.urgentIv * 100) {
            this.urgent.add(ev.expirationTimestamp);
          }
        }
        break;
      }
      case 'future': {
        const prev = this.futures.get(ev.instrument);
        if (prev && prev.timestamp > ev.timestamp) return false;
        this.futures.set(ev.instrument, ev);
        this.setIndex(ev.indexPrice, ev.timestamp, false);
        if (ev.expirationTimestamp !== null) this.expiryChangedAt.set(ev.expirationTimestamp, this.version + 1);
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
    for (const e of [...this.optionsByExpiry.keys()]) if (e <= nowS) this.optionsByExpiry.delete(e);
    for (const [name, q] of this.futures) {
      if (q.expirationTimestamp !== null && q.expirationTimestamp <= nowS) {
        this.futures.delete(name);
        n++;
      }
    }
    if (n > 0) {
      this.version++;
      this.fullAt = this.version;
      for (const e of [...this.expiryChangedAt.keys()]) if (e <= nowS) this.expiryChangedAt.delete(e);
      for (const e of [...this.urgent]) if (e <= nowS) this.urgent.delete(e);
      for (const e of [...this.moved]) if (e <= nowS) this.moved.delete(e);
      for (const name of [...this.viewedMarkIv.keys()]) if (!this.options.has(name)) this.viewedMarkIv.delete(name);
    }
    return n;
  }

  /**
   * Views need a full cold fit until a fit of a version >= `atVersion` succeeds. Default: from the next change on
   * (after the source reconnected: quotes may have jumped while away); the pipeline's periodic safety net passes
   * the current version.
   */
  requireFull(atVersion = this.version + 1): void {
    this.fullAt = Math.max(this.fullAt, atVersion);
  }

  /**
   * A full cold fit of the current state is needed now (no market change: the version moves on by one so that the
   * pipeline's settled test waits for that fit).
   */
  requireFullNow(): void {
    this.version++;
    this.fullAt = this.version;
  }

  /** Number of option instruments held. */
  get optionCount(): number {
    return this.options.size;
  }

  /** True when the next view since `sinceVersion` is full for a reason other than the periodic safety net. */
  fullDue(sinceVersion: number): boolean {
    return sinceVersion < 1 || this.fullAt > sinceVersion;
  }

  /**
   * True when some expiry moved urgently (see {@link ChainStateOptions.urgentVolPts}) since the last view, and no
   * full fit is pending since `sinceVersion` (a full fit is never replaced by a partial one).
   */
  hasUrgent(sinceVersion: number): boolean {
    return this.urgent.size > 0 && !this.fullDue(sinceVersion);
  }

  /**
   * The urgent partial view: {@link view} with `refitOnly` = the urgent expiries, which it clears (their mark IVs
   * become the reference of the next urgency test); null when there is none or a full fit is due.
   */
  urgentView(sinceVersion: number): ChainView | null {
    if (!this.hasUrgent(sinceVersion)) return null;
    const only = [...this.urgent].sort((a, b) => a - b);
    return this.view(sinceVersion, only);
  }

  /**
   * Immutable copy for calibration.
   * @param sinceVersion the version of the last view fitted successfully (the pipeline's); the view's
   *   `changedExpiries` are those changed after it, `full` is set when a full fit is needed since then (or when
   *   `sinceVersion` is omitted or < 1: nothing fitted yet). Default: a full view.
   * @param refitOnly internal ({@link urgentView}): the expiries of an urgent partial view
   * @param periodic a full fit for the periodic safety net only (ChainView.periodic; ignored when a full fit is due
   *   for another reason)
   */
  view(sinceVersion = 0, refitOnly?: readonly number[], periodic = false): ChainView {
    const due = this.fullDue(sinceVersion);
    const full = due || periodic;
    const partial = refitOnly !== undefined && !full;
    const changed: number[] = [];
    for (const [e, v] of this.expiryChangedAt) if (full || v > sinceVersion) changed.push(e);
    changed.sort((a, b) => a - b);
    // the mark IVs handed to this view's refits are the reference of the next urgency test
    if (this.urgentIv > 0) {
      const only = partial ? new Set(refitOnly) : null;
      for (const [name, q] of this.options) if (!only || only.has(q.expirationTimestamp)) this.viewedMarkIv.set(name, q.markIv);
      if (only) {
        for (const e of only) {
          this.urgent.delete(e);
          this.moved.delete(e);
        }
      } else {
        this.urgent.clear();
        this.moved.clear();
      }
    }
    return Object.freeze({
      source: this.source,
      pair: this.pair,
      observationTimestamp: this.latestTs,
      spot: this.indexPrice,
      options: Object.freeze([...this.options.values()]),
      futures: Object.freeze([...this.futures.values()]),
      version: this.version,
      changedExpiries: Object.freeze(changed),
      full,
      spotChanged: full || this.spotChangedAt > sinceVersion,
      ...(partial ? { refitOnly: Object.freeze([...refitOnly]) } : {}),
      ...(periodic && !due ? { periodic: true } : {}),
    });
  }

  /**
   * How far the smile of one expiry moved since the views that last refitted its quotes, vol points
   * ({@link smoothedMoveVolPts} over its quotes with a reference mark; log-moneyness against `forward`).
   */
  private smileMoveVolPts(quotes: ReadonlyMap<string, OptionQuote>, forward: number): number {
    // one point per strike: the mean move of its call and put (they carry the same mark IV on most exchanges)
    const byStrike = new Map<number, { sum: number; n: number }>();
    for (const q of quotes.values()) {
      const seen = this.viewedMarkIv.get(q.instrument);
      if (seen === undefined) continue;
      const p = byStrike.get(q.strike);
      if (p) {
        p.sum += q.markIv - seen;
        p.n++;
      } else byStrike.set(q.strike, { sum: q.markIv - seen, n: 1 });
    }
    const k: number[] = [];
    const d: number[] = [];
    for (const [strike, p] of byStrike) {
      k.push(Math.log(strike / forward));
      d.push((100 * p.sum) / p.n);
    }
    return smoothedMoveVolPts(k, d);
  }

  /** The dedicated index channel wins over the index price carried on tickers. */
  private setIndex(price: number, ts: number, dedicated: boolean): void {
    if (dedicated) {
      if (ts >= this.indexTs) {
        if (price !== this.indexPrice) this.spotChangedAt = this.version + 1;
        this.indexPrice = price;
        this.indexTs = ts;
      }
    } else if (this.indexPrice === null || ts > this.indexTs) {
      if (price !== this.indexPrice) this.spotChangedAt = this.version + 1;
      this.indexPrice = price;
      this.indexTs = ts;
    }
  }
}
