/**
 * solveQp3 (src/quant/lm.ts): the 3-variable convex QP by enumeration of active sets, against the primal active-set
 * method of the same file (Nocedal-Wright Alg. 16.3, a different algorithm) and against the KKT conditions checked
 * here: on random strictly convex problems with random constraints and with the SVI inner problem's own rows.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../adapters/simulator/rng.js';
import { solveQp3, solveQpActiveSet } from '../../src/quant/lm.js';

const objective = (H: number[][], g: number[], x: readonly number[]): number => {
  let s = 0;
  for (let i = 0; i < 3; i++) {
    for (let j = 0; j < 3; j++) s += 0.5 * x[i]! * H[i]![j]! * x[j]!;
    s -= g[i]! * x[i]!;
  }
  return s;
};

/** A random symmetric positive definite 3x3 matrix: B Bᵀ + eps I. */
function randomSpd(rng: Rng): number[][] {
  const B = [0, 1, 2].map(() => [0, 1, 2].map(() => rng.normal()));
  return [0, 1, 2].map((i) => [0, 1, 2].map((j) => B[i]!.reduce((s, v, t) => s + v * B[j]![t]!, 0) + (i === j ? 0.05 : 0)));
}

describe('solveQp3', () => {
  it('equals the active-set method and satisfies the KKT conditions on 2000 random problems', () => {
    const rng = new Rng(20261126);
    let constrained = 0;
    for (let n = 0; n < 2000; n++) {
      const H = randomSpd(rng);
      const g = [0, 1, 2].map(() => 3 * rng.normal());
      const m = 2 + Math.floor(rng.uniform() * 7);
      const x0 = [0, 1, 2].map(() => rng.normal());
      const A = Array.from({ length: m }, () => [0, 1, 2].map(() => rng.normal()));
      // b so that x0 is strictly feasible (the active-set method needs a feasible start)
      const b = A.map((row) => row.reduce((s, v, t) => s + v * x0[t]!, 0) + 0.1 + rng.uniform());
      const x = solveQp3(H, g, A, b);
      expect(x, `problem ${n}`).not.toBeNull();
      const ref = solveQpActiveSet(H, g, A, b, [], [], x0, 200).x;
      const scale = 1 + Math.max(...ref.map(Math.abs));
      for (let i = 0; i < 3; i++) expect(Math.abs(x![i]! - ref[i]!) / scale, `problem ${n} x${i}`).toBeLessThan(1e-7);
      // primal feasibility
      A.forEach((row, j) => expect(row.reduce((s, v, t) => s + v * x![t]!, 0) - b[j]!).toBeLessThan(1e-9 * (1 + Math.abs(b[j]!))));
      // optimality: no feasible point on a small random cloud around x does better
      const fx = objective(H, g, x!);
      for (let t = 0; t < 20; t++) {
        const y = x!.map((v) => v + 0.01 * rng.normal());
        if (A.every((row, j) => row.reduce((s, v, i) => s + v * y[i]!, 0) <= b[j]!)) expect(objective(H, g, y)).toBeGreaterThanOrEqual(fx - 1e-12);
      }
      const unconstrained = A.every((row, j) => row.reduce((s, v, t) => s + v * x![t]!, 0) < b[j]! - 1e-9);
      if (!unconstrained) constrained++;
    }
    expect(constrained).toBeGreaterThan(500); // the constrained branches were exercised
  });

  it('solves the SVI inner problem (rows of sviCalibration innerFit) where the optimum sits on one and on two bounds', () => {
    // x = (a, p, q): q >= 0, p >= 0, 2p <= L, 2q <= L, a + 2q >= f, a + 2p >= f, a <= vMax
    const L = 0.5;
    const f = 0.01;
    const A = [[0, 0, -1], [0, -1, 0], [0, 2, 0], [0, 0, 2], [-1, 0, -2], [-1, -2, 0], [1, 0, 0]];
    const b = [0, 0, L, L, -f, -f, 1];
    const H = [[1, 0.2, 0.1], [0.2, 1, 0.3], [0.1, 0.3, 1]];
    // unconstrained minimum H⁻¹g far outside: p < 0 and q > L/2
    for (const g of [[0.2, -0.5, 0.9], [0.05, 0.6, 0.6], [-0.3, -0.2, -0.2]]) {
      const x = solveQp3(H, g, A, b)!;
      const ref = solveQpActiveSet(H, g, A, b, [], [], [0.5, 0.1, 0.1], 200).x;
      for (let i = 0; i < 3; i++) expect(x[i]).toBeCloseTo(ref[i]!, 10);
    }
  });

  it('declines an ill-conditioned H (relative determinant < 1e-8), leaving it to the active-set method', () => {
    const H = [[41.06, 12730.15, 12730.23], [12730.15, 4220502.21, 4220522.74], [12730.23, 4220522.74, 4220543.27]];
    expect(solveQp3(H, [7, 1998.8, 1998.82], [[1, 0, 0]], [1])).toBeNull();
  });
});
