/**
 * Raw SVI as a served model (Gatheral 2004; Gatheral-Jacquier 2014 eq. (3.1)):
 * w(k) = a + b (rho (k - m) + sqrt((k - m)^2 + sigma^2)), analytic dw/dk = b (rho + (k - m)/sqrt((k - m)^2 + sigma^2)).
 * Fitted by src/quant/sviCalibration.ts. No separate wing rule: raw SVI is linear in k in both wings, with slopes
 * b (1 -+ rho) kept within Lee's bound 2 by the calibration.
 */
import { sviFirstDerivative, sviTotalVariance, type SviParams } from '../svi.js';
import { calibrateSvi } from '../sviCalibration.js';
import { finiteOrNull, halfSpreadObjectiveWeights, toCalibrationQuotes } from './fitKit.js';
import { need, usableStart, type FitContext, type SliceFit, type SliceInput, type SmileModel } from './types.js';

/** Fewest quotes of calibrateSvi's full 5-parameter mode (its `minQuotesFull` default); fewer borrow a shape prior. */
export const SVI_MIN_QUOTES_FULL = 7;

/**
 * SVI fit of one expiry: the spread-weighted least-squares raw-SVI fit to the OTM mark IVs (issue 26: calibrateSvi
 * with `halfSpread` weights, min sum ((iv - mark) / h)^2, h = max(half-spread in IV, 0.25 vp), no-bid quotes the
 * widest h of the expiry and at least 2 vp, quoteWeights.ts quoteHalfSpreads; no robust loss), which is what
 * test/calibration/referenceGap.test.ts and spreadObjective.test.ts measure against an independent Zeliade (2009)
 * fit of the same objective. No calendar floor: calendar arbitrage against the shorter expiry is repaired
 * afterwards by the served envelope max(w_i, W_{i-1}) (src/quant/chain/chainFit.ts fitModel), which changes the slice only
 * where it binds, instead of refitting the whole slice under a penalty (that cost 1 to 3 vol points on the long
 * expiries of real chains). Butterfly arbitrage is still repaired inside calibrateSvi (penalty rounds, only when
 * g < 0). Sparse modes (fewer than {@link SVI_MIN_QUOTES_FULL} quotes) borrow `st.lastFull`'s shape; `st.ceiling`
 * is the pipeline's calendar ceiling; `st.previous` a warm start.
 * @throws RangeError from calibrateSvi (T not finite > 0; no valid quote)
 */
export function fitSviSlice(g: SliceInput, st: FitContext<SviParams>): SliceFit<SviParams> {
  const prior = usableStart(sviModel, st.lastFull, st.lastFullT ?? g.T, g.forward);
  const previous = usableStart(sviModel, st.previous, g.T, g.forward);
  const r = calibrateSvi(toCalibrationQuotes(g), g.T, {
    weighting: 'halfSpread',
    robust: false,
    ...(prior ? { prior } : {}),
    ...(st.ceiling ? { calendarCeiling: st.ceiling } : {}),
    ...(previous ? { previous, warm: true } : {}),
  });
  // The plain (equal-weight) fit, for diagnostics only: a local refit from the served one (issue 26). On cold fits
  // only (start, reconnect, the 60 s safety net): a warm refit keeps the figure of the expiry's last cold fit
  // (chainFit.ts), so that the diagnostics do not double the cost of the refits that follow the market (issue 22).
  const plain = r.mode === 'svi-5p' && !previous ? calibrateSvi(toCalibrationQuotes(g), g.T, { weighting: 'uniform', robust: false, previous: r.params, warm: true }) : null;
  return {
    params: { a: r.params.a, b: r.params.b, rho: r.params.rho, m: r.params.m, sigma: r.params.sigma },
    rmseVolPts: r.rmseVolPts,
    maxErrorVolPts: r.maxErrorVolPts,
    quotesUsed: r.quotesUsed,
    butterflyFree: r.butterflyFree,
    repaired: /penalty/.test(r.method) && r.butterflyFree,
    method: r.method,
    minDensity: finiteOrNull(r.minG),
    atmErrorVolPts: finiteOrNull(r.atm.errorVolPts),
    warnings: r.warnings,
    full: r.mode === 'svi-5p',
    unconstrainedRmseVolPts: r.unconstrainedRmseVolPts,
    ...(plain ? { plainRmseVolPts: plain.unconstrainedRmseVolPts } : {}),
  };
}

export const sviModel: SmileModel<SviParams> = {
  name: 'SVI',
  parameterNames: ['a', 'b', 'rho', 'm', 'sigma'],
  objectiveWeights: halfSpreadObjectiveWeights,
  optionalParameterNames: [],
  fromRecord(r) {
    const p: SviParams = { a: need('SVI', r, 'a'), b: need('SVI', r, 'b'), rho: need('SVI', r, 'rho'), m: need('SVI', r, 'm'), sigma: need('SVI', r, 'sigma') };
    return p;
  },
  toRecord: (p) => ({ a: p.a, b: p.b, rho: p.rho, m: p.m, sigma: p.sigma }),
  totalVariance: (p) => (k) => sviTotalVariance(p, k),
  totalVarianceDk: (p) => (k) => sviFirstDerivative(p, k),
  // w(k) scales with T at fixed implied vol: a and b scale by newT/oldT (raw SVI maps to raw SVI).
  carryForward: (p, oldT, newT) => (oldT > 0 && newT > 0 ? { ...p, a: (p.a * newT) / oldT, b: (p.b * newT) / oldT } : { ...p }),
  arbitrageCheck: 'Gatheral-Jacquier g(k) >= 0 and Lee bound on the SVI check grid',
  // Fitted in IV space: a refit of unchanged marks stays within 0.01 vp while T moves by 0.1 % (7 s on a 2-hour
  // expiry, 14 min on a 10-day one). Kept at 0.1 % under the tracking tolerance of issue 22 (0.05 vp): 0.2 % strayed
  // 0.074 vp at k = 1 (beyond the quotes) on a 3.5-day expiry of the real 2026 chain after 600 s.
  reuseMaxTChange: 1e-3,
  wingRule: 'raw SVI asymptotes: linear in k with slopes b (1 -+ rho), within Lee\'s bound 2',
  fit: (g, ctx) => fitSviSlice(g, ctx),
  borrowsShape: (g) => g.quotes.length < SVI_MIN_QUOTES_FULL,
};
