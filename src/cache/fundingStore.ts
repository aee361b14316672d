/**
 * Funding-rate history per (source, funding instrument): sorted by settlement time, deduplicated by
 * timestamp, bounded. Nothing is lost within the bound: a point already held is kept, a new one is
 * inserted in order, an identical re-delivery (same timestamp) replaces the value in place.
 */
import type { FundingRate } from '../domain/events.js';
import type { Pair, Source } from '../domain/markets.js';

/** A stored funding point: the rate for the exchange's native interval and its settlement time (s). */
export interface FundingPoint {
  readonly interest: number;
  readonly timestamp: number;
}

/** Descriptor of one funding instrument known to the store. */
export interface FundingInstrumentInfo {
  readonly source: Source;
  readonly instrumentId: string;
  readonly pair: Pair;
  /** Native funding interval, hours (Deribit history: 1). */
  readonly intervalHours: number;
  readonly points: number;
  readonly firstTimestamp: number | null;
  readonly lastTimestamp: number | null;
}

interface Series {
  readonly pair: Pair;
  intervalHours: number;
  points: FundingPoint[];
}

/** Default bound: 120 days of hourly points per instrument. */
export const DEFAULT_MAX_FUNDING_POINTS = 120 * 24;

export class FundingStore {
  private readonly series = new Map<string, Series>();
  constructor(private readonly maxPoints = DEFAULT_MAX_FUNDING_POINTS) {}

  private static key(source: Source, instrumentId: string): string {
    return `${source}:${instrumentId}`;
  }

  /**
   * Add one point. Returns true when it is new (not held before), false when it replaced a point
   * of the same timestamp or was older than the bound keeps.
   */
  add(p: FundingRate): boolean {
    const key = FundingStore.key(p.source, p.instrumentId);
    let s = this.series.get(key);
    if (!s) {
      s = { pair: { base: p.base, quote: p.quote }, intervalHours: p.intervalHours, points: [] };
      this.series.set(key, s);
    }
    s.intervalHours = p.intervalHours;
    const pts = s.points;
    const point: FundingPoint = { interest: p.interest, timestamp: p.timestamp };
    // Fast path: appending in order.
    const last = pts[pts.length - 1];
    if (!last || last.timestamp < p.timestamp) {
      pts.push(point);
    } else {
      const i = lowerBound(pts, p.timestamp);
      if (pts[i]?.timestamp === p.timestamp) {
        pts[i] = point;
        return false;
      }
      if (i === 0 && pts.length >= this.maxPoints) return false;
      pts.splice(i, 0, point);
    }
    if (pts.length > this.maxPoints) pts.splice(0, pts.length - this.maxPoints);
    return true;
  }

  /** True when (source, instrumentId) has been seen. */
  has(source: Source, instrumentId: string): boolean {
    return this.series.has(FundingStore.key(source, instrumentId));
  }

  /**
   * Points with startS <= timestamp <= endS, newest first, at most `limit` (the latest ones).
   * Unknown instrument: an empty array (callers check {@link has} for 404).
   */
  range(source: Source, instrumentId: string, startS: number, endS: number, limit: number): FundingPoint[] {
    const s = this.series.get(FundingStore.key(source, instrumentId));
    if (!s) return [];
    const pts = s.points;
    const out: FundingPoint[] = [];
    // index of last point <= endS
    let i = lowerBound(pts, endS);
    if (i < pts.length && pts[i]!.timestamp === endS) i += 1;
    for (let j = i - 1; j >= 0 && out.length < limit; j--) {
      const p = pts[j]!;
      if (p.timestamp < startS) break;
      out.push(p);
    }
    return out;
  }

  /** Every known funding instrument of `source` (all sources when omitted). */
  instruments(source?: Source): FundingInstrumentInfo[] {
    const out: FundingInstrumentInfo[] = [];
    for (const [key, s] of this.series) {
      const sep = key.indexOf(':');
      const src = key.slice(0, sep) as Source;
      if (source && src !== source) continue;
      out.push({
        source: src,
        instrumentId: key.slice(sep + 1),
        pair: s.pair,
        intervalHours: s.intervalHours,
        points: s.points.length,
        firstTimestamp: s.points[0]?.timestamp ?? null,
        lastTimestamp: s.points[s.points.length - 1]?.timestamp ?? null,
      });
    }
    return out.sort((a, b) => a.instrumentId.localeCompare(b.instrumentId));
  }
}

/** First index i with pts[i].timestamp >= t (binary search). */
function lowerBound(pts: readonly FundingPoint[], t: number): number {
  let lo = 0;
  let hi = pts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (pts[mid]!.timestamp < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
