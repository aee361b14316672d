#!/usr/bin/env node
/**
 * The production build: every TypeScript module of the service (src/, streams/, adapters/, and the benchmarks' child
 * processes bench/serviceChild.ts, bench/restChild.ts with its test/helpers/realChainCache.ts) compiled one to one into JavaScript under dist/ (same folder layout, imports unchanged: the sources import
 * `./x.js` already), with the files the service reads beside its modules (streams/workerBoot.mjs, the dashboard's
 * static files). `npm start` runs the build, so that the service runs without tsx: no TypeScript loader thread per
 * isolate, no transform cache, no `keepNames` wrappers (the build's RSS is 50 MB lower on the simulated default,
 * docs/operations.md). Transpile only (esbuild); `npm run typecheck` checks the types.
 *
 * Usage: node scripts/build.mjs [outDir]   (default dist; relative to the repository root, and inside it, so that
 * the compiled modules resolve node_modules from the repository)
 */
import { build } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outDir = resolve(root, process.argv[2] ?? 'dist');
if (relative(root, outDir).startsWith('..')) throw new Error(`build: ${outDir} is outside the repository`);

/** Every .ts file under `dir` (no declaration files), relative to the root. */
function tsFiles(dir) {
  const out = [];
  for (const name of readdirSync(join(root, dir))) {
    const p = join(dir, name);
    if (statSync(join(root, p)).isDirectory()) out.push(...tsFiles(p));
    else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/**
 * Write `contents` to `path` only when it differs from what is there, through a temporary file renamed into place: a
 * service already running from this folder (a second `npm start` of the same checkout, e.g. a calibrator beside an API
 * replica) never sees a missing or half-written module when it starts a worker or its simulators' process.
 * @returns true when the file was written
 */
function writeIfChanged(path, contents) {
  if (existsSync(path) && readFileSync(path).equals(contents)) return false;
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, contents);
  renameSync(tmp, path);
  return true;
}

/** Every file under `dir` (absolute), as paths relative to it. */
function filesUnder(dir) {
  return readdirSync(dir, { recursive: true }).filter((p) => statSync(join(dir, p)).isFile());
}

// (and the benchmarks' child processes, which run the service's modules as the build does)
const entryPoints = [...tsFiles('src'), ...tsFiles('streams'), ...tsFiles('adapters'), 'bench/serviceChild.ts', 'bench/restChild.ts', 'test/helpers/realChainCache.ts'];
const result = await build({
  absWorkingDir: root,
  entryPoints,
  outdir: outDir,
  outbase: '.',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  bundle: false,
  sourcemap: 'linked',
  logLevel: 'warning',
  write: false,
});
let written = 0;
for (const f of result.outputFiles) if (writeIfChanged(f.path, Buffer.from(f.contents))) written++;
const assets = [['streams/workerBoot.mjs', 'streams/workerBoot.mjs'], ...filesUnder(join(root, 'src/dashboard/public')).map((p) => [join('src/dashboard/public', p), join('src/dashboard/public', p)])];
for (const [from, to] of assets) if (writeIfChanged(join(outDir, to), readFileSync(join(root, from)))) written++;
console.log(`build: ${entryPoints.length} modules -> ${relative(root, outDir) || '.'} (${written} files written, the rest unchanged)`);
