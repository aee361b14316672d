/**
 * gridLocalMinima (src/quant/lm.ts): the multi-start selection of the SVI and SABR calibrations, on hand-made grids
 * whose local minima are known by construction.
 */
import { describe, expect, it } from 'vitest';
import { gridLocalMinima } from '../../src/quant/lm.js';

const grid = (fs: number[][]) => fs.flatMap((row, i) => row.map((f, j) => ({ x: [i, j], f })));

describe('gridLocalMinima', () => {
  it('returns each basin once, best first: not the neighbours of the best point', () => {
    // two basins: (0,0) with f = 1 and (2,3) with f = 2; (0,1) and (1,0) are better than (2,3) but not minima
    const pts = grid([
      [1, 1.1, 5, 4],
      [1.2, 3, 4, 3],
      [6, 5, 4, 2],
    ]);
    expect(gridLocalMinima(pts, 4, 3)).toEqual([[0, 0], [2, 3]]);
    expect(gridLocalMinima(pts, 4, 1)).toEqual([[0, 0]]);
  });

  it('counts a point once when two grid points coincide (a clipped coordinate), and skips +Infinity plateaus', () => {
    const pts = [
      { x: [0, 50], f: 1 },
      { x: [0, 50], f: 1 },
      { x: [1, 2], f: Number.POSITIVE_INFINITY },
      { x: [1, 3], f: Number.POSITIVE_INFINITY },
    ];
    expect(gridLocalMinima(pts, 2, 3)).toEqual([[0, 50]]);
  });

  it('gives no starts for an empty grid and rejects a grid that does not fill its rows', () => {
    expect(gridLocalMinima([], 8, 3)).toEqual([]);
    expect(() => gridLocalMinima(grid([[1, 2, 3]]), 2, 3)).toThrow(RangeError);
  });
});
