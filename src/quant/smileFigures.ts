/**
 * ATM, risk-reversal and butterfly figures of one smile (GET iVSummary, interface-spec section 8).
 *
 * Conventions (decisions.md "Quant conventions"; docs/conventions.md "IV summary"):
 * - ATM = forward ATM: atmVol = sigma(K = F);
 * - the 25- and 10-delta strikes are the strikes whose PLAIN forward Black-76 call delta N(d1), computed with
 *   the smile's own vol at that strike (r = 0, no premium adjustment, as the exchanges print delta), equals
 *   0.25 / 0.10 (calls, above F) and 0.75 / 0.90 (the 25- / 10-delta puts: put delta N(d1) - 1 = -0.25 / -0.10),
 *   solved by strikeFromDelta (Brent on log-strike);
 * - risk reversal delta25Skew = sigma(K25C) - sigma(K25P), positive when calls are bid; delta10Skew likewise;
 * - butterfly delta25Bfly = (sigma(K25C) + sigma(K25P)) / 2 - atmVol (the smile butterfly, not twice it);
 *   delta10Bfly likewise.
 * Sources: D. Reiswich, U. Wystup, "A Guide to FX Options Quoting Conventions", The Journal of Derivatives
 * 18(2), 2010 (forward delta, risk reversal and the smile strangle/butterfly); J. Gatheral, "The Volatility
 * Surface", Wiley 2006, ch. 3 (skew and curvature read off the smile). Tested in test/quant/smileFigures.test.ts.
 */
import { strikeFromDelta } from './strikeFromDelta.js';

/** The iVSummary figures of one smile; a figure is null where it cannot be computed (see {@link smileFigures}). */
export interface SmileFigures {
  /** sigma(F), fraction. */
  readonly atmVol: number | null;
  /** sigma(K25C) - sigma(K25P), fraction. */
  readonly delta25Skew: number | null;
  /** sigma(K10C) - sigma(K10P), fraction. */
  readonly delta10Skew: number | null;
  /** (sigma(K25C) + sigma(K25P)) / 2 - atmVol, fraction. */
  readonly delta25Bfly: number | null;
  /** (sigma(K10C) + sigma(K10P)) / 2 - atmVol, fraction. */
  readonly delta10Bfly: number | null;
}

/** The delta-pillar strikes of one smile (null where no strike has that delta). */
export interface DeltaStrikes {
  readonly K25C: number | null;
  readonly K25P: number | null;
  readonly K10C: number | null;
  readonly K10P: number | null;
}

function finite(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}

/**
 * The 25- and 10-delta call and put strikes of a smile: plain forward Black call delta 0.25, 0.75, 0.10, 0.90
 * with the smile's own vol at the strike (strikeFromDelta). A strike is null when the root search fails
 * (e.g. a wing whose total variance grows like 2|k| keeps N(d1) from reaching the target).
 * @param volAt implied vol (fraction) at strike K; F forward (> 0); T years (> 0)
 */
export function deltaStrikes(volAt: (K: number) => number, F: number, T: number): DeltaStrikes {
  return { K25C: deltaStrike(volAt, F, T, 0.25), K25P: deltaStrike(volAt, F, T, 0.75), K10C: deltaStrike(volAt, F, T, 0.1), K10P: deltaStrike(volAt, F, T, 0.9) };
}

/**
 * One delta-pillar strike of a smile ({@link deltaStrikes}'s rule): the strike whose plain forward Black call delta,
 * with the smile's own vol there, is `callDelta` (0.9 is the 10-delta put); null when the root search fails.
 * @param volAt implied vol (fraction) at strike K; F forward (> 0); T years (> 0); callDelta in (0, 1)
 */
export function deltaStrike(volAt: (K: number) => number, F: number, T: number, callDelta: number): number | null {
  try {
    return finite(strikeFromDelta(callDelta, F, T, volAt));
  } catch {
    return null;
  }
}

/**
 * ATM vol, 25/10-delta risk reversals and butterflies of one smile (module docstring for the conventions).
 * Never throws for F, T > 0: a figure that cannot be computed (no strike with that delta, a non-finite vol)
 * is null.
 * @param volAt implied vol (fraction) at strike K (quote currency)
 * @param F the forward of that maturity (> 0), T years ACT/365 (> 0)
 * @throws RangeError when F or T are not finite and > 0
 */
export function smileFigures(volAt: (K: number) => number, F: number, T: number): SmileFigures {
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`smileFigures: F must be finite > 0, got ${F}`);
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`smileFigures: T must be finite > 0, got ${T}`);
  const vol = (K: number | null): number | null => {
    if (K === null) return null;
    try {
      const v = volAt(K);
      return v > 0 && Number.isFinite(v) ? v : null;
    } catch {
      return null;
    }
  };
  const atm = vol(F);
  if (atm === null) return { atmVol: null, delta25Skew: null, delta10Skew: null, delta25Bfly: null, delta10Bfly: null };
  const ks = deltaStrikes(volAt, F, T);
  const pair = (Kc: number | null, Kp: number | null): { rr: number | null; bf: number | null } => {
    const c = vol(Kc);
    const p = vol(Kp);
    if (c === null || p === null) return { rr: null, bf: null };
    return { rr: c - p, bf: (c + p) / 2 - atm };
  };
  const d25 = pair(ks.K25C, ks.K25P);
  const d10 = pair(ks.K10C, ks.K10P);
  return { atmVol: atm, delta25Skew: d25.rr, delta10Skew: d10.rr, delta25Bfly: d25.bf, delta10Bfly: d10.bf };
}
