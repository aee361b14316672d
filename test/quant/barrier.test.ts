/**
 * European barrier and digital by static replication on the smile (src/quant/barrier.ts).
 * References: put-call style identities (in + out = vanilla, digital call + put = 1), the flat-smile
 * cash-or-nothing N(d2) and Haug (2007) ch. 4's cash-or-nothing example (put 2.6710), and an independent
 * price by numerical integration of the payoff against the risk-neutral density of the smile, the
 * density itself taken as the second strike difference of smile call prices (Breeden-Litzenberger 1978).
 * Every percent Greek is checked against a finite difference of the price.
 */
import { describe, expect, it } from 'vitest';
import {
  BARRIER_TYPES,
  euBarrierNominal,
  euBarrierPrice,
  replicationLegs,
  smileSlope,
  valueEuBarrier,
  type BarrierType,
  type EuBarrierInput,
  type EuBarrierOptionType,
} from '../../src/quant/barrier.js';
import { black76Price } from '../../src/quant/black76.js';
import { normCdf } from '../../src/quant/normal.js';
import { sviTotalVariance, type SviParams } from '../../src/quant/svi.js';

const F0 = 100;
const T = 0.25;
/** A skewed SVI smile (w(0) = 0.03: ATM vol 34.6 %, put skew), butterfly-free on the range used. */
const SVI: SviParams = { a: 0.01, b: 0.1, rho: -0.4, m: 0, sigma: 0.2 };
/** Smile as a function of strike, fixed in K (sticky strike): built once on today's forward. */
const smile = (K: number): number => Math.sqrt(sviTotalVariance(SVI, Math.log(K / F0)) / T);
const flat = (v: number) => (_K: number): number => v;

function close(actual: number, expected: number, tol: number): void {
  expect(Math.abs(actual - expected), `actual ${actual} expected ${expected}`).toBeLessThanOrEqual(tol);
}

/** Simpson's rule on [a, b] with n (even) intervals. */
function simpson(f: (x: number) => number, a: number, b: number, n = 600): number {
  if (b <= a) return 0;
  const h = (b - a) / n;
  let s = f(a) + f(b);
  for (let i = 1; i < n; i++) s += (i % 2 === 1 ? 4 : 2) * f(a + i * h);
  return (s * h) / 3;
}

/**
 * E[payoff(S_T)] under the density of the smile: q(K) = d2C/dK2 by a central second difference of smile
 * call prices (Breeden-Litzenberger), integrated in log-strike by Simpson between the payoff's kinks and jumps.
 */
function priceByDensity(F: number, vol: (K: number) => number, payoff: (s: number) => number, breaks: number[]): number {
  const call = (K: number) => black76Price(F, K, T, vol(K), 'C');
  const density = (K: number) => {
    const h = K * 1e-3;
    return (call(K + h) - 2 * call(K) + call(K - h)) / (h * h);
  };
  const lo = Math.log(F) - 8;
  const hi = Math.log(F) + 4;
  const xs = [lo, ...breaks.map(Math.log).filter((x) => x > lo && x < hi).sort((a, b) => a - b), hi];
  let total = 0;
  for (let i = 0; i + 1 < xs.length; i++) {
    // Endpoints pulled 1e-12 inside so that a jump of the payoff at a break is seen from the right side.
    total += simpson((x) => {
      const K = Math.exp(x);
      return payoff(K) * density(K) * K;
    }, xs[i]! + 1e-12, xs[i + 1]! - 1e-12);
  }
  return total;
}

function payoffOf(type: EuBarrierOptionType, K: number, B: number, bt?: BarrierType): (s: number) => number {
  return (s: number) => {
    if (type === 'DIGITAL_CALL') return s > B ? 1 : 0;
    if (type === 'DIGITAL_PUT') return s < B ? 1 : 0;
    const vanilla = type === 'CALL' ? Math.max(s - K, 0) : type === 'PUT' ? Math.max(K - s, 0) : s - K;
    const alive = bt === 'UP_AND_OUT' ? s < B : bt === 'DOWN_AND_OUT' ? s > B : bt === 'UP_AND_IN' ? s >= B : s <= B;
    return alive ? vanilla : 0;
  };
}

describe('European barrier: identities', () => {
  const cases: Array<{ K: number; B: number }> = [
    { K: 100, B: 120 },
    { K: 100, B: 85 },
    { K: 90, B: 90 },
    { K: 110, B: 95 },
  ];
  it('in + out = vanilla for every barrier type, CALL, PUT and FORWARD, barrier above and below the strike', () => {
    for (const { K, B } of cases) {
      for (const type of ['CALL', 'PUT', 'FORWARD'] as const) {
        const vanilla = type === 'FORWARD' ? F0 - K : black76Price(F0, K, T, smile(K), type === 'CALL' ? 'C' : 'P');
        const p = (barrierType: BarrierType) => euBarrierPrice({ F: F0, T, smile, type, K, B, barrierType });
        close(p('UP_AND_OUT') + p('UP_AND_IN'), vanilla, 1e-12 * F0);
        close(p('DOWN_AND_OUT') + p('DOWN_AND_IN'), vanilla, 1e-12 * F0);
        // Observed at expiry only: up-and-out and down-and-in pay on the same region (S_T below B).
        close(p('UP_AND_OUT'), p('DOWN_AND_IN'), 1e-12 * F0);
      }
    }
  });

  it('digital call + digital put = one unit of cash (discount factor 1), on the smile and flat', () => {
    for (const B of [60, 90, 100, 115, 180]) {
      for (const vol of [smile, flat(0.5)]) {
        const dc = euBarrierPrice({ F: F0, T, smile: vol, type: 'DIGITAL_CALL', B });
        const dp = euBarrierPrice({ F: F0, T, smile: vol, type: 'DIGITAL_PUT', B });
        close(dc + dp, 1, 1e-14);
        expect(dc).toBeGreaterThan(0);
        expect(dp).toBeGreaterThan(0);
      }
    }
  });

  it('a barrier far away gives the vanilla (out) or 0 (in)', () => {
    const K = 100;
    for (const type of ['CALL', 'PUT'] as const) {
      const vanilla = black76Price(F0, K, T, smile(K), type === 'CALL' ? 'C' : 'P');
      const far = (B: number, barrierType: BarrierType) => euBarrierPrice({ F: F0, T, smile, type, K, B, barrierType });
      // The SVI wings grow (vol 131 % at K/F = 1/20), so "far" means k = ln(1000) here.
      close(far(F0 * 1000, 'UP_AND_OUT'), vanilla, 1e-7);
      close(far(F0 * 1000, 'UP_AND_IN'), 0, 1e-7);
      close(far(F0 / 1000, 'DOWN_AND_OUT'), vanilla, 1e-7);
      close(far(F0 / 1000, 'DOWN_AND_IN'), 0, 1e-7);
      // Flat smile: a barrier 5 standard deviations away is already worthless (in) / the vanilla (out).
      const v45 = black76Price(F0, K, T, 0.45, type === 'CALL' ? 'C' : 'P');
      const flatFar = (B: number, barrierType: BarrierType) => euBarrierPrice({ F: F0, T, smile: flat(0.45), type, K, B, barrierType });
      close(flatFar(F0 * Math.exp(7 * 0.45 * Math.sqrt(T)), 'UP_AND_OUT'), v45, 1e-8);
      close(flatFar(F0 * Math.exp(-7 * 0.45 * Math.sqrt(T)), 'DOWN_AND_IN'), 0, 1e-8);
    }
  });

  it('a strike or barrierType given for a digital is ignored; missing where required throws', () => {
    const base = euBarrierPrice({ F: F0, T, smile, type: 'DIGITAL_CALL', B: 105 });
    expect(euBarrierPrice({ F: F0, T, smile, type: 'DIGITAL_CALL', B: 105, K: 50, barrierType: 'UP_AND_IN' })).toBe(base);
    expect(() => euBarrierPrice({ F: F0, T, smile, type: 'CALL', B: 105, barrierType: 'UP_AND_IN' })).toThrow(RangeError);
    expect(() => euBarrierPrice({ F: F0, T, smile, type: 'PUT', B: 105, K: 100 })).toThrow(RangeError);
    expect(() => replicationLegs('FORWARD', 105, 100)).toThrow(RangeError);
  });
});

describe('European barrier: flat smile equals the Black-Scholes closed forms', () => {
  it('digital = N(d2) (Rubinstein-Reiner 1991) and Haug (2007) cash-or-nothing put example 2.6710', () => {
    // Haug: S = 100, X = 80, T = 0.75, r = 0.06, b = 0 (so F = S = 100), sigma = 0.35, cash 10:
    // put = 10 e^{-rT} N(-d2) = 2.6710. Our prices are undiscounted (r = 0): multiply by 10 e^{-0.045}.
    const dp = euBarrierPrice({ F: 100, T: 0.75, smile: flat(0.35), type: 'DIGITAL_PUT', B: 80 });
    close(10 * Math.exp(-0.06 * 0.75) * dp, 2.671, 5e-5);
    for (const B of [70, 100, 130]) {
      const s = 0.5 * Math.sqrt(T);
      const d2 = Math.log(F0 / B) / s - s / 2;
      close(euBarrierPrice({ F: F0, T, smile: flat(0.5), type: 'DIGITAL_CALL', B }), normCdf(d2), 1e-15);
    }
  });

  it('barrier prices equal the integral of the payoff against the lognormal density', () => {
    const vol = flat(0.45);
    for (const type of ['CALL', 'PUT', 'FORWARD'] as const) {
      for (const barrierType of BARRIER_TYPES) {
        for (const [K, B] of [[100, 118], [100, 88], [95, 105]] as const) {
          const p = euBarrierPrice({ F: F0, T, smile: vol, type, K, B, barrierType });
          const ref = priceByDensity(F0, vol, payoffOf(type, K, B, barrierType), [K, B]);
          close(p, ref, 2e-6 * F0);
        }
      }
    }
  });
});

describe('European barrier on a skewed smile (Breeden-Litzenberger)', () => {
  it('the digital carries the skew term: -dC/dK along the smile, not the flat N(d2)', () => {
    for (const B of [85, 100, 112]) {
      const dc = euBarrierPrice({ F: F0, T, smile, type: 'DIGITAL_CALL', B });
      const ref = priceByDensity(F0, smile, (s) => (s > B ? 1 : 0), [B]);
      close(dc, ref, 2e-6);
      // -dC/dK by a plain strike difference of smile call prices.
      const h = 1e-3;
      const dCdK = (black76Price(F0, B + h, T, smile(B + h), 'C') - black76Price(F0, B - h, T, smile(B - h), 'C')) / (2 * h);
      close(dc, -dCdK, 1e-7);
      // The skew term -vega dsigma/dK: where the smile falls with strike (B < 109 on this SVI) the digital
      // call is worth more than the flat-vol N(d2), where it rises, less.
      const s = smile(B) * Math.sqrt(T);
      const flatDigital = normCdf(Math.log(F0 / B) / s - s / 2);
      const slope = smileSlope(smile, B);
      expect(Math.abs(dc - flatDigital)).toBeGreaterThan(0.002);
      expect(Math.sign(dc - flatDigital)).toBe(-Math.sign(slope));
    }
  });

  it('every type and barrier type equals the integral of its payoff against the smile density', () => {
    for (const type of ['CALL', 'PUT', 'FORWARD'] as const) {
      for (const barrierType of BARRIER_TYPES) {
        for (const [K, B] of [[100, 118], [100, 88], [92, 104]] as const) {
          const p = euBarrierPrice({ F: F0, T, smile, type, K, B, barrierType });
          const ref = priceByDensity(F0, smile, payoffOf(type, K, B, barrierType), [K, B]);
          close(p, ref, 2e-6 * F0);
        }
      }
    }
    const dp = euBarrierPrice({ F: F0, T, smile, type: 'DIGITAL_PUT', B: 93 });
    close(dp, priceByDensity(F0, smile, (s) => (s < 93 ? 1 : 0), [93]), 2e-6);
  });
});

describe('European barrier: percent figures', () => {
  const inputs: EuBarrierInput[] = [
    { F: F0, T, smile, type: 'CALL', K: 100, B: 120, barrierType: 'UP_AND_OUT' },
    { F: F0, T, smile, type: 'CALL', K: 95, B: 88, barrierType: 'DOWN_AND_IN' },
    { F: F0, T, smile, type: 'PUT', K: 105, B: 90, barrierType: 'DOWN_AND_OUT' },
    { F: F0, T, smile, type: 'PUT', K: 100, B: 110, barrierType: 'UP_AND_IN' },
    { F: F0, T, smile, type: 'FORWARD', K: 98, B: 115, barrierType: 'UP_AND_OUT' },
    { F: F0, T, smile, type: 'DIGITAL_CALL', B: 108 },
    { F: F0, T, smile, type: 'DIGITAL_PUT', B: 93 },
  ];

  it('percentPrice = 100 V / nominal: the coin price x 100 for a vanilla-type, 100 x probability for a digital', () => {
    const call = valueEuBarrier({ F: F0, T, smile, type: 'CALL', K: 100, B: 1e6, barrierType: 'UP_AND_OUT' });
    close(call.percentPrice, (100 * black76Price(F0, 100, T, smile(100), 'C')) / F0, 1e-9);
    close(call.impliedVolatility, smile(100), 0);
    const dc = valueEuBarrier({ F: F0, T, smile, type: 'DIGITAL_CALL', B: 108 });
    close(dc.percentPrice, 100 * euBarrierPrice({ F: F0, T, smile, type: 'DIGITAL_CALL', B: 108 }), 1e-12);
    expect(dc.impliedVolatility).toBe(smile(108));
    expect(euBarrierNominal('DIGITAL_PUT', F0)).toBe(1);
    expect(euBarrierNominal('PUT', F0)).toBe(F0);
  });

  it('every percent Greek equals a finite difference of the percent price (nominal fixed, sticky strike)', () => {
    for (const input of inputs) {
      const N = euBarrierNominal(input.type, input.F);
      const P = (F: number, dv = 0, t = input.T) => (100 * euBarrierPrice({ ...input, F, T: t }, dv)) / N;
      const r = valueEuBarrier(input);
      const F = input.F;
      const scale = Math.max(1, Math.abs(r.percentPrice));
      close(r.percentPrice, P(F), 1e-12 * scale);

      // Central differences, Richardson-extrapolated ((4 D(h/2) - D(h)) / 3, error O(h^4)).
      const rich = (d: (h: number) => number, h: number) => (4 * d(h / 2) - d(h)) / 3;
      const rel = (g: number) => 1e-7 * Math.max(Math.abs(g), 1e-2);
      const delta = (h: number) => (F * (P(F * (1 + h)) - P(F * (1 - h)))) / (2 * F * h);
      close(r.percentDelta, rich(delta, 1e-3), rel(r.percentDelta));
      const gamma = (h: number) => (0.01 * F * F * (P(F * (1 + h)) - 2 * P(F) + P(F * (1 - h)))) / (F * h) ** 2;
      close(r.percentGamma, rich(gamma, 2e-3), rel(r.percentGamma));
      const vega = (e: number) => (0.01 * (P(F, e) - P(F, -e))) / (2 * e);
      close(r.percentVega, rich(vega, 1e-3), rel(r.percentVega));
      const volga = (e: number) => (1e-4 * (P(F, e) - 2 * P(F) + P(F, -e))) / (e * e);
      close(r.percentVolga, rich(volga, 2e-3), rel(r.percentVolga));
      const vanna = (h: number) => (0.01 * F * (P(F * (1 + h), h) - P(F * (1 + h), -h) - P(F * (1 - h), h) + P(F * (1 - h), -h))) / (4 * F * h * h);
      close(r.percentVanna, rich(vanna, 2e-3), rel(r.percentVanna));
      // Theta: a one-day re-pricing; against the time derivative -dP/dT / 365 (central difference) to first order.
      close(r.percentTheta, P(F, 0, T - 1 / 365) - P(F), 1e-12 * scale);
      const dt = 1e-5;
      const thetaRate = -(P(F, 0, T + dt) - P(F, 0, T - dt)) / (2 * dt) / 365;
      close(r.percentTheta, thetaRate, 0.02 * Math.abs(thetaRate) + 1e-6);
    }
  });

  it('at expiry (T = 0) the price is the payoff at the forward and the Greeks vanish away from the kinks', () => {
    const r = valueEuBarrier({ F: F0, T: 0, smile, type: 'CALL', K: 90, B: 120, barrierType: 'UP_AND_OUT' });
    close(r.percentPrice, 10, 1e-12);
    close(r.percentDelta, 100, 1e-12);
    expect(r.percentGamma).toBe(0);
    expect(r.percentVega).toBe(0);
    expect(r.percentTheta).toBe(0);
    expect(valueEuBarrier({ F: F0, T: 0, smile, type: 'DIGITAL_PUT', B: 120 }).percentPrice).toBe(100);
  });
});
