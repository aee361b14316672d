/**
 * Vanna-Volga as a served model: the Castagna-Mercurio 2007 second-order smile through the 25-delta put, ATM and
 * 25-delta call pillars, with the service's wing rule beyond the 10-delta strikes K10P, K10C (C1 continuation in total
 * variance plus a fitted convex curvature per side, src/quant/vannaVolga.ts `vannaVolgaSmile`). Fitted by
 * calibrateVannaVolga. Stored: K25P, Katm, K25C, vol25P, volAtm, vol25C, K10P, K10C, wingCurvL, wingCurvR (the
 * curvatures optional in older documents: linear wings).
 */
import { vannaVolgaParamViolations, vannaVolgaSmile, type VannaVolgaParams } from '../vannaVolga.js';
import { need, type SmileModel } from './types.js';

/** Served Vanna-Volga parameters (second order; wing strikes and curvatures included). */
export interface VannaVolgaServedParams {
  readonly K25P: number;
  readonly Katm: number;
  readonly K25C: number;
  readonly vol25P: number;
  readonly volAtm: number;
  readonly vol25C: number;
  readonly K10P: number;
  readonly K10C: number;
  readonly wingCurvL: number;
  readonly wingCurvR: number;
}

const toVv = (p: VannaVolgaServedParams): VannaVolgaParams => ({ ...p, order: 'second' });

export const vannaVolgaModel: SmileModel<VannaVolgaServedParams> = {
  name: 'VANNA_VOLGA',
  parameterNames: ['K25P', 'Katm', 'K25C', 'vol25P', 'volAtm', 'vol25C', 'K10P', 'K10C', 'wingCurvL', 'wingCurvR'],
  optionalParameterNames: ['wingCurvL', 'wingCurvR'],
  fromRecord(r) {
    const n = (name: string): number => need('VANNA_VOLGA', r, name);
    const p: VannaVolgaServedParams = {
      K25P: n('K25P'),
      Katm: n('Katm'),
      K25C: n('K25C'),
      vol25P: n('vol25P'),
      volAtm: n('volAtm'),
      vol25C: n('vol25C'),
      K10P: n('K10P'),
      K10C: n('K10C'),
      wingCurvL: r.wingCurvL === undefined ? 0 : n('wingCurvL'),
      wingCurvR: r.wingCurvR === undefined ? 0 : n('wingCurvR'),
    };
    const bad = vannaVolgaParamViolations(toVv(p));
    if (bad.length > 0) throw new RangeError(`invalid Vanna-Volga parameters: ${bad.join('; ')}`);
    return p;
  },
  toRecord: (p) => ({ ...p }),
  totalVariance(p, T, F) {
    const smile = vannaVolgaSmile(toVv(p), F, T);
    return (k) => {
      const v = smile(F * Math.exp(k));
      return v * v * T;
    };
  },
  // The pillars keep their log-moneyness: strikes scale with the forward, vols unchanged.
  carryForward(p, _oldT, _newT, oldF, newF) {
    if (!(oldF > 0 && newF > 0)) return { ...p };
    const c = newF / oldF;
    return { ...p, K25P: p.K25P * c, Katm: p.Katm * c, K25C: p.K25C * c, K10P: p.K10P * c, K10C: p.K10C * c };
  },
  arbitrageCheck:
    'risk-neutral density >= 0 (Breeden-Litzenberger) on 401 strikes over 4 ATM standard deviations and the quoted range, and over 6 and the quoted range (served smile with its wings)',
  wingRule: 'beyond K10P/K10C: C1 total-variance wings with slope clamped to [0, 1.8] plus a fitted curvature c (sqrt((k - k_b)^2 + d^2) - d), |slope| + c <= 1.8',
};
