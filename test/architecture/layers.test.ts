/**
 * The house has one direction of flow (issue 14 section 5; docs/architecture.md): every relative import of the
 * production code is read from the source files, grouped by folder, and checked against the layer order
 *
 *   src/domain -> src/quant -> src/cache -> streams, src/kafka, src/dashboard -> src/metrics, src/history -> src/api
 *   -> start-up (src/config.ts, src/service.ts, src/main.ts, src/marketSources.ts, src/logger.ts)
 *
 * (a folder imports only folders of lower layers; folders of one layer do not import each other), plus the
 * adapters' rules: exchange adapters import only src/domain, src/quant and adapters/shared; the replay may use the
 * exchange adapters; the simulators too, and the pipeline pieces (streams, cache) for their simulated history;
 * nothing but start-up imports adapters, and no production path (src/, streams/) imports adapters/simulator. A folder-level cycle
 * fails the test too, with the import lines that make it.
 *
 * The chain fit is quant (issue 25 item 1): src/quant imports nothing but src/domain and src/quant; streams/ keeps the
 * pipeline, chain state, scheduling and workers, and reaches the fit only through src/quant/chain's entry points
 * (no other quant module, none of the fit's math); and the model names are listed once, in src/domain/volatilityModels.ts,
 * with their modules in the registry (src/quant/models/index.ts): a list of two or more model names anywhere else in the
 * production code (an array, a union, an object keyed by them) fails.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function walk(dir: string, out: string[] = []): string[] {
  for (const f of readdirSync(dir)) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) {
      if (f !== 'public' && f !== 'node_modules') walk(p, out);
    } else if (/\.(ts|mts|mjs)$/.test(f) && !f.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The folder a file belongs to for layering: `src/<dir>`, `src` start-up files, `streams`, `adapters/<dir>`. */
function folderOf(abs: string): string {
  const r = relative(ROOT, abs).split('/');
  if (r[0] === 'src') return r.length > 2 ? `src/${r[1]}` : 'start-up';
  if (r[0] === 'adapters') return r.length > 2 ? `adapters/${r[1]}` : 'adapters/types';
  return r[0]!;
}

interface Edge {
  readonly from: string;
  readonly to: string;
  readonly where: string;
}

function imports(): Edge[] {
  const files = ['src', 'streams', 'adapters'].flatMap((d) => walk(join(ROOT, d)));
  const out: Edge[] = [];
  const re = /(?:import|export)\s[^'";]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)|new URL\(\s*['"](\.{1,2}\/[^'"]+\.(?:m?[jt]s))['"]/g;
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(re)) {
      const spec = (m[1] ?? m[2] ?? m[3])!;
      const target = resolve(dirname(f), spec);
      const from = folderOf(f);
      const to = folderOf(target);
      if (from !== to) out.push({ from, to, where: `${relative(ROOT, f)} imports ${spec}` });
    }
  }
  return out;
}

/** Layer of each production folder; an import must go to a strictly lower layer. */
const LAYER: Record<string, number> = {
  'src/domain': 0,
  'src/quant': 1,
  'src/cache': 2,
  streams: 3,
  'src/kafka': 3,
  'src/dashboard': 3,
  'src/metrics': 4,
  // the history store reads the Kafka document shapes (src/kafka/schemas.ts, rebuild.ts): above kafka, below api
  'src/history': 4,
  'src/api': 5,
  'start-up': 6,
};
const EXCHANGE_ADAPTER_MAY_IMPORT = new Set(['src/domain', 'src/quant', 'adapters/shared']);

function violation(e: Edge): string | null {
  const { from, to } = e;
  if (from.startsWith('adapters/')) {
    if (from === 'adapters/replay') {
      return to.startsWith('adapters/') || to === 'src/domain' || to === 'src/quant' ? null : 'the replay uses only adapters, domain and quant';
    }
    if (from === 'adapters/simulator') {
      // the simulated 24 h history replays the twin market through the real chain state and fits (a development
      // harness, loaded only by start-up in simulated mode)
      return to.startsWith('adapters/') || ['src/domain', 'src/quant', 'src/cache', 'streams'].includes(to) ? null : 'simulators use only adapters, domain, quant, cache and streams';
    }
    return EXCHANGE_ADAPTER_MAY_IMPORT.has(to) ? null : 'an exchange adapter imports only domain, quant and adapters/shared|types';
  }
  if (to === 'adapters/simulator' && from !== 'start-up') return 'simulator code loads only from start-up (never in production paths)';
  if (to.startsWith('adapters/')) return from === 'start-up' ? null : 'only start-up wires the adapters';
  const a = LAYER[from];
  const b = LAYER[to];
  if (a === undefined || b === undefined) return `unknown folder (${from} or ${to}): give it a layer`;
  return b < a ? null : `${from} (layer ${a}) may not import ${to} (layer ${b})`;
}

/** Folder-level cycles (Tarjan's strongly connected components of size > 1). */
function cycles(edges: readonly Edge[]): string[][] {
  const adj = new Map<string, Set<string>>();
  for (const e of edges) {
    if (!adj.has(e.from)) adj.set(e.from, new Set());
    if (!adj.has(e.to)) adj.set(e.to, new Set());
    adj.get(e.from)!.add(e.to);
  }
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of adj.get(v)!) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of adj.keys()) if (!idx.has(v)) visit(v);
  return out;
}

/** The source text of every production file (src, streams, adapters), by path relative to the root. */
function productionSources(): Map<string, string> {
  const out = new Map<string, string>();
  for (const f of ['src', 'streams', 'adapters'].flatMap((d) => walk(join(ROOT, d)))) out.set(relative(ROOT, f), readFileSync(f, 'utf8'));
  return out;
}

/** The quant modules streams/ may import: the chain fit's entry points (the worker's fitter, its options, its yield signal). */
const STREAMS_MAY_IMPORT_FROM_QUANT = new Set(['src/quant/chain/chainFitter.ts', 'src/quant/chain/chainFit.ts', 'src/quant/chain/fitMemory.ts']);
/** Names of the chain fit's math: none of them may appear in streams/ (it hands views to the fitter and takes fits back). */
const FIT_MATH = /\b(fitModel|fitExpiry|sparseTarget|servedQuality|within10Delta|marketAtm|groupByExpiry|forwardPoints|sliceTotalVariance|typedTotalVariance|buildModelSurface|buildTypedSurface|readSlice|carryForward|rawCalendarCheck|MODEL_REGISTRY|modelOf|SmileModel|normCdf|deltaStrike|impliedVol\w*)\b/g;

/** Where `text` lists two or more different model names: quoted names or object keys, within one statement (no `;` between) of 200 characters. */
function modelNameLists(text: string, names: readonly string[]): string[] {
  const alt = names.join('|');
  const re = new RegExp(`(['"\`])(${alt})\\1|(?:^|[{,])\\s*(${alt})\\s*:`, 'gm');
  const hits = [...text.matchAll(re)].map((m) => ({ name: (m[2] ?? m[3])!, at: m.index! }));
  const out: string[] = [];
  for (let i = 0; i + 1 < hits.length; i++) {
    const a = hits[i]!;
    const b = hits[i + 1]!;
    if (a.name !== b.name && b.at - a.at <= 200 && !text.slice(a.at, b.at).includes(';')) {
      out.push(`line ${text.slice(0, a.at).split('\n').length}: ${a.name} ... ${b.name}`);
    }
  }
  return out;
}

/** The one list of model names and the registry of their modules: the only places that list them. */
const MODEL_LIST_FILES = new Set(['src/domain/volatilityModels.ts', 'src/quant/models/index.ts']);

describe('one direction of flow between folders', () => {
  const edges = imports();

  it('reads the imports of the production code', () => {
    expect(edges.length).toBeGreaterThan(50);
  });

  it('no import goes up a layer or sideways', () => {
    const bad = edges.map((e) => ({ e, why: violation(e) })).filter((x) => x.why !== null);
    expect(bad.map((x) => `${x.e.where}: ${x.why}`)).toEqual([]);
  });

  it('no cycle between folders', () => {
    const c = cycles(edges);
    const detail = c.map((members) => `${members.join(' <-> ')}: ${edges.filter((e) => members.includes(e.from) && members.includes(e.to)).map((e) => e.where).join('; ')}`);
    expect(detail).toEqual([]);
  });

  it('the check itself rejects an upward import and finds a cycle', () => {
    expect(violation({ from: 'src/quant', to: 'src/api', where: 'x' })).not.toBeNull();
    expect(violation({ from: 'src/kafka', to: 'src/dashboard', where: 'x' })).not.toBeNull();
    expect(violation({ from: 'streams', to: 'adapters/simulator', where: 'x' })).not.toBeNull();
    expect(violation({ from: 'src/api', to: 'src/cache', where: 'x' })).toBeNull();
    expect(cycles([{ from: 'a', to: 'b', where: '' }, { from: 'b', to: 'c', where: '' }, { from: 'c', to: 'a', where: '' }])).toEqual([['a', 'b', 'c']]);
  });
});

describe('the chain fit is quant; the models are listed once (issue 25 item 1)', () => {
  const edges = imports();
  const sources = productionSources();

  it('src/quant imports only src/domain and src/quant', () => {
    const bad = edges.filter((e) => e.from === 'src/quant' && e.to !== 'src/domain');
    expect(bad.map((e) => e.where)).toEqual([]);
  });

  it('streams/ reaches the fit only through src/quant/chain entry points and defines none of its math', () => {
    const bad: string[] = [];
    for (const [file, text] of sources) {
      if (!file.startsWith('streams/')) continue;
      for (const m of text.matchAll(/(?:import|export)\s[^'";]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g)) {
        const target = relative(ROOT, resolve(dirname(join(ROOT, file)), m[1]!)).replace(/\.js$/, '.ts');
        if (target.startsWith('src/quant/') && !STREAMS_MAY_IMPORT_FROM_QUANT.has(target)) bad.push(`${file} imports ${m[1]}`);
      }
      for (const m of text.matchAll(FIT_MATH)) bad.push(`${file} uses ${m[1]}`);
    }
    expect(bad).toEqual([]);
  });

  it('model names are listed only in src/domain/volatilityModels.ts (and keyed by the registry)', async () => {
    const { VOLATILITY_MODELS } = await import('../../src/domain/volatilityModels.js');
    const bad: string[] = [];
    for (const [file, text] of sources) {
      if (MODEL_LIST_FILES.has(file)) continue;
      for (const where of modelNameLists(text, VOLATILITY_MODELS)) bad.push(`${file} ${where}`);
    }
    expect(bad).toEqual([]);
    // the registry keys every listed model, nothing else
    const { MODEL_REGISTRY } = await import('../../src/quant/models/index.js');
    expect(Object.keys(MODEL_REGISTRY).sort()).toEqual([...VOLATILITY_MODELS].sort());
  });

  it('the checks themselves catch a second list, a per-model table and fitting math in streams', () => {
    const names = ['SVI', 'SABR', 'VANNA_VOLGA'];
    expect(modelNameLists("export const M = ['SVI', 'SABR', 'VANNA_VOLGA'] as const;", names)).toHaveLength(2);
    expect(modelNameLists("type N = 'SVI' | 'SABR';", names)).toHaveLength(1);
    expect(modelNameLists('const R = {\n  SVI: 1e-3,\n  SABR: 5e-4,\n  VANNA_VOLGA: 1e-5,\n};', names)).toHaveLength(2);
    expect(modelNameLists("get('SVI'); other('SABR');", names)).toEqual([]);
    expect(modelNameLists("describe: 'raw SVI: a, b; SABR: alpha, nu'", names)).toEqual([]);
    expect('const w = sliceTotalVariance(model, s);'.match(FIT_MATH)).not.toBeNull();
  });
});
