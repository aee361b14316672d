/**
 * The analytic SVI smile slope used by the digital's skew term (issue 11 item 5): VolSurface.totalVarianceDk
 * (interpolated in T like w), buildModelSurface through the calendar envelope, and the euBarrier digital with it,
 * against Richardson-extrapolated central differences (independent of the code's own derivative).
 */
import { describe, expect, it } from 'vitest';
import { VolSurface } from '../../src/quant/surface.js';
import { buildModelSurface } from '../../src/quant/chain/modelSurface.js';
import { sviTotalVariance, type SviParams } from '../../src/quant/svi.js';
import { euBarrierPrice } from '../../src/quant/barrier.js';

/** Richardson extrapolation of central differences (error O(h^4)). */
function richardson(f: (x: number) => number, x: number, h: number): number {
  const d = (s: number) => (f(x + s) - f(x - s)) / (2 * s);
  return (4 * d(h / 2) - d(h)) / 3;
}

const p1: SviParams = { a: 0.002, b: 0.02, rho: -0.3, m: 0.01, sigma: 0.05 };
const p2: SviParams = { a: 0.01, b: 0.06, rho: -0.2, m: 0.02, sigma: 0.15 };

describe('analytic SVI slope', () => {
  it('VolSurface.totalVarianceDk equals the derivative of totalVariance at listed and interpolated T', () => {
    const s = new VolSurface([
      { expirationTimestamp: 1, T: 0.02, forward: 100, params: p1 },
      { expirationTimestamp: 2, T: 0.25, forward: 101, params: p2 },
    ]);
    for (const T of [0.005, 0.02, 0.1, 0.25, 0.5]) {
      for (const k of [-0.5, -0.1, 0, 0.05, 0.4]) {
        const fd = richardson((x) => s.totalVariance(T, x), k, 1e-3);
        expect(s.totalVarianceDk(T, k)!).toBeCloseTo(fd, 10);
      }
    }
  });

  it('through the calendar envelope the served slope is that of the served side', () => {
    const low: SviParams = { a: 0.001, b: 0.03, rho: 0.6, m: 0.02, sigma: 0.05 }; // below p1 in the left wing: enveloped there
    const slices = [
      { expirationTimestamp: 1, T: 0.02, forward: 100, params: { ...p1 } as unknown as Record<string, number>, fit: { calendarRepaired: false } },
      { expirationTimestamp: 2, T: 0.05, forward: 100, params: { ...low } as unknown as Record<string, number>, fit: { calendarRepaired: true } },
    ];
    const s = buildModelSurface('SVI', slices);
    let enveloped = 0;
    for (const k of [-0.8, -0.3, -0.02, 0.03, 0.3, 0.9]) {
      if (sviTotalVariance(low, k) < sviTotalVariance(p1, k)) enveloped++;
      const fd = richardson((x) => s.totalVariance(0.05, x), k, 1e-4);
      expect(s.totalVarianceDk(0.05, k)!).toBeCloseTo(fd, 8);
    }
    expect(enveloped).toBeGreaterThan(0);
  });

  it('the digital with the analytic slope equals the one with an exact numerical slope', () => {
    const s = new VolSurface([{ expirationTimestamp: 1, T: 3 / 365, forward: 100, params: p1 }]);
    const T = 3 / 365;
    const smile = (K: number) => s.impliedVol(T, K, 100);
    const exact = (K: number) => {
      const k = Math.log(K / 100);
      return s.totalVarianceDk(T, k)! / (2 * Math.sqrt(s.totalVariance(T, k) * T) * K);
    };
    for (const B of [90, 99, 100, 104, 115]) {
      const fd = richardson(smile, B, 1e-3 * B);
      expect(exact(B)).toBeCloseTo(fd, 9);
      const withSlope = euBarrierPrice({ F: 100, T, smile, smileSlope: exact, type: 'DIGITAL_CALL', B });
      const withFd = euBarrierPrice({ F: 100, T, smile, smileSlope: () => fd, type: 'DIGITAL_CALL', B });
      expect(withSlope).toBeCloseTo(withFd, 9);
    }
  });
});
