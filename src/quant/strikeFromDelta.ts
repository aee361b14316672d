/**
 * Strike from a target forward Black call delta, flat volatility (closed form) and on a smile (root finding).
 *
 * Convention (decisions.md "Quant conventions"; docs/conventions.md "Delta for byDelta"): the delta is the
 * plain forward Black-76 call delta N(d1), d1 = (ln(F/K) + sigma(K)^2 T/2) / (sigma(K) sqrt T), with r = 0
 * and no premium adjustment, as the exchanges print it. A target 0 < delta < 1 is a CALL delta: 0.25 is
 * the 25-delta call strike (above the forward), 0.75 is the strike of the 25-delta put (below the forward,
 * since the put delta N(d1) - 1 = -0.25 there).
 *
 * Sources: the closed form inverts N(d1) of Black (1976) for the forward delta without premium adjustment,
 * K = F exp(-N^-1(delta) sigma sqrt T + sigma^2 T/2); D. Reiswich and U. Wystup, "A Guide to FX Options
 * Quoting Conventions", The Journal of Derivatives 18(2), 2010 (forward delta, delta-to-strike conversion,
 * and why a smile needs a numerical root search since sigma depends on K). The root search is Brent
 * (1973) on log-strike. Tested in test/quant/strikeFromDelta.test.ts.
 */
import { brentRoot } from './brent.js';
import { normCdf, normInv } from './normal.js';

function checkInputs(fn: string, targetCallDelta: number, F: number, T: number): void {
  if (!(targetCallDelta > 0 && targetCallDelta < 1)) {
    throw new RangeError(`${fn}: target call delta must be in (0, 1), got ${targetCallDelta}`);
  }
  if (!(F > 0 && Number.isFinite(F))) throw new RangeError(`${fn}: forward F must be finite > 0, got ${F}`);
  if (!(T > 0 && Number.isFinite(T))) throw new RangeError(`${fn}: T must be finite > 0 years, got ${T}`);
}

/**
 * Closed form for a flat volatility: the K with N(d1(K)) = targetCallDelta,
 * K = F exp(-N^-1(delta) sigma sqrt T + sigma^2 T / 2).
 *
 * @param targetCallDelta forward Black call delta in (0, 1)
 * @param F forward, quote currency (> 0)
 * @param T years ACT/365 (> 0)
 * @param sigma volatility, fraction (> 0)
 * @returns strike K in quote currency
 * @throws RangeError for a delta outside (0, 1) or F, T, sigma not finite > 0
 */
export function strikeFromDeltaFlat(targetCallDelta: number, F: number, T: number, sigma: number): number {
  checkInputs('strikeFromDeltaFlat', targetCallDelta, F, T);
  if (!(sigma > 0 && Number.isFinite(sigma))) {
    throw new RangeError(`strikeFromDeltaFlat: sigma must be finite > 0, got ${sigma}`);
  }
  const s = sigma * Math.sqrt(T);
  return F * Math.exp(-normInv(targetCallDelta) * s + 0.5 * s * s);
}

/** Largest |ln(K/F)| searched for a bracket (K/F from e^-30 to e^30). */
const MAX_ABS_LOG_MONEYNESS = 30;

/**
 * Smile-consistent strike: the K with N(d1(K, volAt(K))) = targetCallDelta, where
 * d1 = (ln(F/K) + volAt(K)^2 T/2) / (volAt(K) sqrt T).
 *
 * Method: let k = ln(K/F) and f(k) = N(d1) - delta. Start at the flat-smile solution with the
 * at-the-money vol volAt(F), expand geometrically in the direction that f points to (f > 0: larger strikes)
 * until f changes sign, then Brent (1973) on [k_a, k_b] to full double precision. When the smile makes f
 * non-monotone, the root found is the first sign change met from the flat-vol start (the one nearest the
 * flat-vol strike in that direction).
 *
 * @param targetCallDelta forward Black call delta in (0, 1)
 * @param F forward, quote currency (> 0)
 * @param T years ACT/365 (> 0)
 * @param volAt implied volatility (fraction, > 0) of the smile at strike K (quote currency)
 * @returns strike K in quote currency
 * @throws RangeError for a delta outside (0, 1), F or T not finite > 0, a non-positive or non-finite
 *   volAt value, or when no strike with K/F in [e^-30, e^30] has that delta (e.g. a smile whose wing
 *   total variance grows like 2|k|, the Lee bound, keeps N(d1) from going below 1/2 on that side)
 */
export function strikeFromDelta(
  targetCallDelta: number,
  F: number,
  T: number,
  volAt: (K: number) => number,
): number {
  checkInputs('strikeFromDelta', targetCallDelta, F, T);
  const sqrtT = Math.sqrt(T);
  const f = (k: number): number => {
    const K = F * Math.exp(k);
    const sigma = volAt(K);
    if (!(sigma > 0 && Number.isFinite(sigma))) {
      throw new RangeError(`strikeFromDelta: volAt(${K}) returned ${sigma}; a volatility must be finite > 0`);
    }
    const s = sigma * sqrtT;
    return normCdf(-k / s + 0.5 * s) - targetCallDelta;
  };
  const sAtm = volAt(F) * sqrtT;
  if (!(sAtm > 0 && Number.isFinite(sAtm))) {
    throw new RangeError(`strikeFromDelta: volAt(F) returned ${volAt(F)}; a volatility must be finite > 0`);
  }
  const k0 = -normInv(targetCallDelta) * sAtm + 0.5 * sAtm * sAtm;
  const f0 = f(k0);
  if (f0 === 0) return F * Math.exp(k0);
  const direction = f0 > 0 ? 1 : -1; // N(d1) too large: go to larger strikes.
  let step = Math.max(0.25 * sAtm, 1e-4);
  let kPrev = k0;
  let fPrev = f0;
  for (let i = 0; i < 200; i++) {
    let k = kPrev + direction * step;
    if (Math.abs(k) > MAX_ABS_LOG_MONEYNESS) k = direction * MAX_ABS_LOG_MONEYNESS;
    const fk = f(k);
    if ((fk > 0) !== (fPrev > 0) || fk === 0) {
      const root = brentRoot(f, kPrev, k, { fa: fPrev, fb: fk }).root;
      return F * Math.exp(root);
    }
    if (Math.abs(k) >= MAX_ABS_LOG_MONEYNESS) break;
    kPrev = k;
    fPrev = fk;
    step *= 2;
  }
  throw new RangeError(
    `strikeFromDelta: no strike with K/F in [e^-${MAX_ABS_LOG_MONEYNESS}, e^${MAX_ABS_LOG_MONEYNESS}] has call delta ${targetCallDelta} on this smile (F=${F}, T=${T})`,
  );
}
