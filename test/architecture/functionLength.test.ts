/**
 * Small functions (issue 25 item 5): no function of the production code (src/, streams/, adapters/; tests and
 * benchmarks aside) has a body over 80 lines, as scripts/function-lengths.mjs measures it (`node
 * scripts/function-lengths.mjs` lists them, longest first). No function is allowed over the limit: the allow-lists
 * of the split are gone (the simulators' servers, the vanna-volga calibration and the SVI polish were the last).
 */
import { describe, expect, it } from 'vitest';
import { functionLengths, type FunctionLength } from '../../scripts/function-lengths.mjs';

const MAX_LINES = 80;

/** The functions over the limit, each as `file:line name: n lines`. */
function over(found: readonly FunctionLength[]): string[] {
  return found.map((f) => `${f.file}:${f.line} ${f.name}: ${f.length} lines (limit ${MAX_LINES})`);
}

describe('function length (issue 25 item 5)', () => {
  const long = functionLengths().filter((f) => f.length > MAX_LINES);
  const inAdapters = long.filter((f) => f.file.startsWith('adapters/'));
  const elsewhere = long.filter((f) => !f.file.startsWith('adapters/'));

  it(`src/ and streams/: no function over ${MAX_LINES} lines`, () => {
    expect(over(elsewhere)).toEqual([]);
  });

  it(`adapters/: no function over ${MAX_LINES} lines`, () => {
    expect(over(inAdapters)).toEqual([]);
  });

  it('measures what it should: a function of 81 body lines is over the limit, one of 80 is not', async () => {
    const { functionsOf } = await import('../../scripts/function-lengths.mjs');
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const x${i} = ${i};`).join('\n');
    const text = `function a() {\n${body(81)}\n}\nconst b = () => {\n${body(80)}\n};\nclass C { constructor() {\n${body(3)}\n} }\n`;
    const found = functionsOf('/tmp/example.ts', text).map((f) => [f.name, f.length]);
    expect(found).toEqual([
      ['a', 81],
      ['b', 80],
      ['C.constructor', 3],
    ]);
  });
});
