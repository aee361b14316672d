/**
 * Raw SVI as a served model (Gatheral 2004; Gatheral-Jacquier 2014 eq. (3.1)):
 * w(k) = a + b (rho (k - m) + sqrt((k - m)^2 + sigma^2)), analytic dw/dk = b (rho + (k - m)/sqrt((k - m)^2 + sigma^2)).
 * Fitted by src/quant/sviCalibration.ts. No separate wing rule: raw SVI is linear in k in both wings, with slopes
 * b (1 -+ rho) kept within Lee's bound 2 by the calibration.
 */
import { sviFirstDerivative, sviTotalVariance, type SviParams } from '../svi.js';
import { need, type SmileModel } from './types.js';

export const sviModel: SmileModel<SviParams> = {
  name: 'SVI',
  parameterNames: ['a', 'b', 'rho', 'm', 'sigma'],
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
  wingRule: 'raw SVI asymptotes: linear in k with slopes b (1 -+ rho), within Lee\'s bound 2',
};
