/**
 * A chain view's options as the fits take them: grouped by expiry with the expiry's forward (the exchange's own, from
 * the newest option quote), one out-of-the-money quote per strike with a usable mark IV, and the listed forward points
 * (option underlyings, futures for expiries without options). Rules in chainFit.ts's module docstring. Times Unix
 * seconds, T in years ACT/365, prices in the pair's quote currency.
 */
import type { FutureQuote, OptionQuote } from '../../domain/events.js';
import type { ForwardPoint, SmileQuote } from '../../domain/chainFit.js';

/** Seconds in an ACT/365 year. */
export const YEAR_S = 365 * 86400;
/** Expiries closer than this (1 hour) are not fitted. */
export const MIN_EXPIRY_SECONDS = 3600;
/** Mark IVs outside this range are not quotes (Deribit prints 0 or absurd values on dead strikes). */
const MIN_IV = 0.01;
const MAX_IV = 5;

/** The options of one expiry: its T, forward and OTM quotes sorted by strike. */
export interface ExpiryGroup {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  readonly quotes: SmileQuote[];
}

/** Group the chain's options by expiry with the expiry's forward, OTM quotes only. */
export function groupByExpiry(options: readonly OptionQuote[], observationTimestamp: number): ExpiryGroup[] {
  const byExpiry = new Map<number, OptionQuote[]>();
  for (const q of options) {
    let arr = byExpiry.get(q.expirationTimestamp);
    if (!arr) byExpiry.set(q.expirationTimestamp, (arr = []));
    arr.push(q);
  }
  const groups: ExpiryGroup[] = [];
  for (const [expirationTimestamp, qs] of byExpiry) {
    // Forward of the expiry: the newest quote's underlying price (ties: the larger instrument name, for determinism).
    let newest = qs[0]!;
    for (const q of qs) {
      if (q.timestamp > newest.timestamp || (q.timestamp === newest.timestamp && q.instrument > newest.instrument)) newest = q;
    }
    const forward = newest.forward;
    const T = (expirationTimestamp - observationTimestamp) / YEAR_S;
    // One quote per strike: the OTM side; the other side if the OTM one has no usable IV.
    const byStrike = new Map<number, { C?: OptionQuote; P?: OptionQuote }>();
    for (const q of qs) {
      let s = byStrike.get(q.strike);
      if (!s) byStrike.set(q.strike, (s = {}));
      s[q.optionType] = q;
    }
    const usable = (q: OptionQuote | undefined): q is OptionQuote => !!q && q.markIv > MIN_IV && q.markIv < MAX_IV;
    const quotes: SmileQuote[] = [];
    for (const strike of [...byStrike.keys()].sort((a, b) => a - b)) {
      const s = byStrike.get(strike)!;
      const otm = strike < forward ? s.P : s.C;
      const itm = strike < forward ? s.C : s.P;
      const q = usable(otm) ? otm : usable(itm) ? itm : undefined;
      if (!q) continue;
      quotes.push({
        instrument: q.instrument,
        strike,
        optionType: q.optionType,
        k: Math.log(strike / forward),
        markIv: q.markIv,
        bidIv: q.bidIv,
        askIv: q.askIv,
      });
    }
    groups.push({ expirationTimestamp, T, forward, quotes });
  }
  return groups.sort((a, b) => a.expirationTimestamp - b.expirationTimestamp);
}

/** Listed forward points: option underlyings per expiry, futures for expiries without options. */
export function forwardPoints(groups: readonly ExpiryGroup[], futures: readonly FutureQuote[], observationTimestamp: number): ForwardPoint[] {
  const points = new Map<number, ForwardPoint>();
  for (const g of groups) {
    if (g.T > 0) points.set(g.expirationTimestamp, { expirationTimestamp: g.expirationTimestamp, T: g.T, forward: g.forward, origin: 'option-underlying' });
  }
  for (const f of futures) {
    if (f.perpetual || f.expirationTimestamp === null) continue;
    const T = (f.expirationTimestamp - observationTimestamp) / YEAR_S;
    if (T <= 0 || points.has(f.expirationTimestamp)) continue;
    points.set(f.expirationTimestamp, { expirationTimestamp: f.expirationTimestamp, T, forward: f.markPrice, origin: 'future' });
  }
  return [...points.values()].sort((a, b) => a.T - b.T);
}

/** One expiry's input to the model fits (a SliceInput of src/quant/models whose quotes are the served SmileQuotes). */
export interface EligibleGroup {
  readonly expirationTimestamp: number;
  readonly T: number;
  readonly forward: number;
  readonly quotes: readonly SmileQuote[];
}
