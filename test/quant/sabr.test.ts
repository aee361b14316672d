import { describe, expect, it } from 'vitest';
import {
  sabrAlphaFromAtmVol,
  sabrAtmVol,
  sabrImpliedVol,
  sabrParamViolations,
  sabrZOverX,
  type SabrParams,
} from '../../src/quant/sabr.js';

/**
 * QuantLib test-suite/interpolations.cpp, test case testSabrInterpolation ("Test SABR function against
 * input volatilities"): forward 0.039, expiry 1 year, alpha 0.3, beta 0.6, nu 0.02, rho 0.01, strikes
 * 0.030 to 0.090 step 0.002, and the Hagan et al. (2002) lognormal vols QuantLib's sabrVolatility must
 * reproduce (QuantLib's own tolerance there: 1e-12).
 */
const QL_VOLS = [
  1.16725837321531, 1.15226075991385, 1.13829711098834, 1.12524190877505, 1.11299079244474, 1.10145609357162, 1.09056348513411,
  1.08024942745106, 1.07045919457758, 1.06114533019077, 1.05226642581503, 1.04378614411707, 1.03567243073732, 1.0278968727451,
  1.02043417226345, 1.01326171139321, 1.00635919013311, 0.999708323124949, 0.993292584155381, 0.987096989695393, 0.98110791455717,
  0.975312934134512, 0.969700688771689, 0.964260766651027, 0.958983602256592, 0.953860388001395, 0.948882997029509,
  0.944043915545469, 0.939336183299237, 0.934753341079515, 0.930289384251337,
];

describe('sabrImpliedVol: Hagan et al. 2002 eq. (2.17) against published values', () => {
  it('reproduces QuantLib testSabrInterpolation (31 strikes, beta 0.6) to 1e-12', () => {
    const p: SabrParams = { alpha: 0.3, beta: 0.6, nu: 0.02, rho: 0.01 };
    QL_VOLS.forEach((expected, i) => {
      const K = 0.03 + 0.002 * i;
      expect(Math.abs(sabrImpliedVol(p, 0.039, K, 1) - expected)).toBeLessThan(1e-12);
    });
  });

  /**
   * pysabr (github.com/ynouri/pysabr) pysabr/tests/hagan_2002_lognormal_sabr/test_interpolation.py:
   * shifted (3 %) lognormal SABR, beta 0.5, 10-year expiry, large nu: exercises z/x(z) far from 1.
   */
  it('reproduces pysabr test_lognormal_beta_05 (1e-7 relative)', () => {
    const s = 0.03;
    const p: SabrParams = { alpha: 0.0252982247897366, beta: 0.5, rho: -0.246333975445481, nu: 0.290846563252973 };
    const v = 100 * sabrImpliedVol(p, 2.52715567337258 / 100 + s, 3.02715567337258 / 100 + s, 10);
    expect(Math.abs(v / 10.8917434151064 - 1)).toBeLessThan(1e-7);
  });

  it('reproduces pysabr test_lognormal_beta_05_smile (17 strikes, 1e-5 vol pts)', () => {
    const strikes = [-0.4729, 0.5271, 1.0271, 1.5271, 1.7771, 2.0271, 2.2771, 2.4021, 2.5271, 2.6521, 2.7771, 3.0271, 3.2771, 3.5271, 4.0271, 4.5271, 5.5271];
    const target = [
      19.641923, 15.785344, 14.305103, 13.073869, 12.550007, 12.088721, 11.691661, 11.51766, 11.360133, 11.219058, 11.094293, 10.892464,
      10.750834, 10.663653, 10.623862, 10.714479, 11.103755,
    ];
    const p: SabrParams = { alpha: 0.0253, beta: 0.5, rho: -0.2463, nu: 0.2908 };
    const f = (2.5271 + 3) / 100;
    strikes.forEach((k, i) => {
      const v = 100 * sabrImpliedVol(p, f, (k + 3) / 100, 10);
      expect(Math.abs(v - (target[i] as number))).toBeLessThan(1e-5);
    });
  });

  /**
   * Independent reference: eq. (2.17a)-(2.17c) evaluated with mpmath at 50 significant digits (script in
   * the comment below), including the far wings where the textbook x(z) = ln((sqrt(1-2 rho z+z^2)+z-rho)/(1-rho))
   * loses digits to cancellation in double precision (z = -53 with rho = 0.9).
   *   mp.dps = 50; L = log(F/K); fk = (F*K)**(1-beta); z = nu/alpha*sqrt(fk)*L
   *   x = log((sqrt(1-2*rho*z+z*z)+z-rho)/(1-rho)); den = sqrt(fk)*(1+(1-beta)**2*L**2/24+(1-beta)**4*L**4/1920)
   *   corr = 1+((1-beta)**2*alpha**2/(24*fk)+rho*beta*nu*alpha/(4*sqrt(fk))+(2-3*rho**2)*nu**2/24)*T
   *   vol = alpha/den*(z/x)*corr
   */
  it('matches a 50-digit evaluation to 2e-15 relative, wings included', () => {
    const cases: [SabrParams, number, number, number, number][] = [
      [{ alpha: 0.3, beta: 1, rho: 0.9, nu: 2 }, 100, 100 * Math.exp(8), 0.5, 4.0811564977150309505],
      [{ alpha: 0.3, beta: 1, rho: 0.95, nu: 3 }, 100, 100 * Math.exp(5), 0.25, 3.7426686162133075098],
      [{ alpha: 0.3, beta: 1, rho: -0.95, nu: 3 }, 100, 100 * Math.exp(-5), 0.25, 3.3374473525029945581],
      [{ alpha: 0.6, beta: 1, rho: -0.3, nu: 1.5 }, 100, 100 * (1 + 1e-7), 0.25, 0.61420310196738946935],
      [{ alpha: 0.6, beta: 1, rho: -0.3, nu: 1.5 }, 100, 100 * Math.exp(0.3), 0.25, 0.6019219247500805899],
      [{ alpha: 0.6, beta: 1, rho: -0.3, nu: 1.5 }, 100, 100 * Math.exp(-0.6), 0.25, 0.85119443188971122491],
      [{ alpha: 0.25, beta: 0.5, rho: 0.4, nu: 0.8 }, 50, 50 * Math.exp(1.2), 2, 0.25809299114791574187],
      [{ alpha: 0.25, beta: 0.5, rho: 0.4, nu: 0.8 }, 50, 50 * Math.exp(-1.2), 2, 0.24512572662251862331],
    ];
    for (const [p, F, K, T, ref] of cases) expect(Math.abs(sabrImpliedVol(p, F, K, T) / ref - 1)).toBeLessThan(2e-15);
  });
});

describe('sabrImpliedVol: limits and identities', () => {
  const p: SabrParams = { alpha: 0.55, beta: 1, rho: -0.35, nu: 1.8 };

  it('at K = F equals the ATM formula eq. (2.18), and is continuous there', () => {
    for (const beta of [0, 0.5, 1]) {
      const q = { ...p, beta, alpha: beta === 1 ? 0.55 : 0.55 * Math.pow(70000, 1 - beta) };
      const atm = sabrAtmVol(q, 70000, 0.3);
      expect(Math.abs(sabrImpliedVol(q, 70000, 70000, 0.3) - atm)).toBeLessThan(1e-15 * atm + 1e-16);
      for (const eps of [1e-12, 1e-9, 1e-7, 1e-5]) {
        const up = sabrImpliedVol(q, 70000, 70000 * (1 + eps), 0.3);
        const dn = sabrImpliedVol(q, 70000, 70000 * (1 - eps), 0.3);
        // The smile is smooth: |sigma(K) - sigma(F)| <= |slope| eps + O(eps^2) with slope ~ 1 here.
        expect(Math.abs(up - atm)).toBeLessThan(2 * eps + 1e-14);
        expect(Math.abs(dn - atm)).toBeLessThan(2 * eps + 1e-14);
      }
    }
  });

  it('z/x(z) series branch joins the closed form at the switch |z| = 1e-5', () => {
    for (const rho of [-0.9, -0.3, 0, 0.5, 0.95]) {
      for (const z of [9.999e-6, 1.0001e-5, -9.999e-6, -1.0001e-5]) {
        // Third-order Taylor remainder bound: the two sides differ by O(z^3) ~ 1e-15.
        const series = 1 - 0.5 * rho * z + ((2 - 3 * rho * rho) * z * z) / 12;
        expect(Math.abs(sabrZOverX(z, rho) - series)).toBeLessThan(1e-14);
      }
    }
    expect(sabrZOverX(0, 0.3)).toBe(1);
  });

  it('with nu = 0 and beta = 1 is the flat Black vol alpha (Hagan eq. (2.17) reduces to sigma = alpha)', () => {
    for (const K of [10, 60, 100, 150, 1000]) expect(sabrImpliedVol({ alpha: 0.42, beta: 1, rho: 0.3, nu: 0 }, 100, K, 2)).toBeCloseTo(0.42, 14);
  });

  it('obloj2008 equals hagan2002 for beta = 1', () => {
    for (const K of [30, 80, 100, 120, 400]) {
      expect(sabrImpliedVol(p, 100, K, 0.5, 'obloj2008')).toBe(sabrImpliedVol(p, 100, K, 0.5, 'hagan2002'));
    }
  });

  it('obloj2008 with nu = 0, T = 0 is the exact short-expiry CEV vol (Berestycki-Busca-Florent 2004)', () => {
    // sigma_0(K) = ln(F/K) / int_K^F du / (alpha u^beta) = alpha (1-beta) ln(F/K) / (F^(1-beta) - K^(1-beta)).
    const F = 100;
    for (const beta of [0, 0.3, 0.7]) {
      const q: SabrParams = { alpha: 0.3 * Math.pow(F, 1 - beta), beta, rho: 0, nu: 0 };
      for (const K of [20, 70, 99.9, 100.1, 140, 500]) {
        const exact = (q.alpha * (1 - beta) * Math.log(F / K)) / (Math.pow(F, 1 - beta) - Math.pow(K, 1 - beta));
        expect(Math.abs(sabrImpliedVol(q, F, K, 0, 'obloj2008') / exact - 1)).toBeLessThan(1e-12);
        // Hagan's leading term is that value with u/(2 sinh(u/2)), u = (1-beta) L, replaced by its series
        // 1/(1 + u^2/24 + u^4/1920): relative error u^6/322560 + O(u^8) (the reference itself carries ~1e-13
        // of cancellation in F^(1-beta) - K^(1-beta) near the money).
        const u = (1 - beta) * Math.log(F / K);
        const err = Math.abs(sabrImpliedVol(q, F, K, 0, 'hagan2002') / exact - 1);
        expect(err).toBeLessThan(1e-5 * Math.pow(u, 6) + 1e-12);
      }
    }
  });

  it('sabrAlphaFromAtmVol inverts eq. (2.18) for beta = 1 (quadratic) and beta < 1 (cubic)', () => {
    for (const beta of [1, 0.7, 0.3, 0]) {
      for (const [rho, nu, T] of [
        [-0.5, 2, 0.1],
        [0.4, 0.8, 1.5],
        [0, 0.01, 3],
      ] as const) {
        const F = 50;
        const alpha = sabrAlphaFromAtmVol(0.45, F, T, beta, rho, nu);
        expect(alpha).toBeGreaterThan(0);
        expect(Math.abs(sabrAtmVol({ alpha, beta, rho, nu }, F, T) - 0.45)).toBeLessThan(1e-13);
      }
    }
  });

  it('sabrAlphaFromAtmVol returns NaN when no alpha reaches the ATM vol', () => {
    // beta = 1, rho nu T / 4 = -1.25: the ATM vol alpha (1 - 1.25 alpha + ...) peaks near 0.2 < 0.9.
    expect(sabrAlphaFromAtmVol(0.9, 100, 5, 1, -0.999, 1)).toBeNaN();
  });

  it('rejects invalid inputs with RangeError', () => {
    expect(() => sabrImpliedVol({ ...p, alpha: 0 }, 100, 100, 1)).toThrow(RangeError);
    expect(() => sabrImpliedVol({ ...p, rho: 1 }, 100, 100, 1)).toThrow(RangeError);
    expect(() => sabrImpliedVol({ ...p, nu: -0.1 }, 100, 100, 1)).toThrow(RangeError);
    expect(() => sabrImpliedVol({ ...p, beta: 1.2 }, 100, 100, 1)).toThrow(RangeError);
    expect(() => sabrImpliedVol(p, 0, 100, 1)).toThrow(RangeError);
    expect(() => sabrImpliedVol(p, 100, -5, 1)).toThrow(RangeError);
    expect(() => sabrImpliedVol(p, 100, 100, Number.NaN)).toThrow(RangeError);
    expect(sabrParamViolations(p)).toEqual([]);
    expect(sabrParamViolations({ alpha: -1, beta: 2, rho: -1, nu: Number.NaN })).toHaveLength(4);
  });
});
