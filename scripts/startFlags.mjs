#!/usr/bin/env node
/**
 * The node flags of `npm start`: the words between `node` and `dist/src/main.js` in package.json's "start" script
 * (`... && exec node <flags> dist/src/main.js`). One source for everything that runs the build as the service runs:
 * the benchmarks (bench/lib.ts forkBuilt), the Schemathesis run (scripts/schemathesis.sh) and the build's test.
 * Run directly, prints them on one line, separated by spaces.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * @returns the flags, in order (empty when the start script passes none)
 * @throws Error when the start script does not run `node [flags] dist/src/main.js`
 */
export function startNodeFlags() {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const start = pkg.scripts?.start ?? '';
  const m = /\bnode((?: --\S+)*) dist\/src\/main\.js\b/.exec(start);
  if (!m) throw new Error(`package.json "start" does not run "node [flags] dist/src/main.js": ${start}`);
  return m[1].trim().split(/\s+/).filter((w) => w !== '');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(startNodeFlags().join(' '));
