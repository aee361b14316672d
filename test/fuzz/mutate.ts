/**
 * Deterministic mutation of JSON values and texts for the fuzz tests: a seeded PRNG
 * (mulberry32, Tommy Ettinger 2017, public domain) and mutation operators in the spirit of
 * AFL/libFuzzer's structure-aware mutators: delete, retype, extreme numbers, numbers as strings,
 * renamed keys, nested junk, long strings; and byte-level text damage (truncation, flips,
 * insertions, deletions, duplications, control characters).
 */

/** Seeded uniform PRNG (mulberry32): same seed, same sequence. */
export class FuzzRng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

const clone = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

type Path = Array<string | number>;

/** Every path in `v` (containers and leaves), root excluded. */
function paths(v: unknown, prefix: Path = [], out: Path[] = [], limit = 4000): Path[] {
  if (out.length >= limit) return out;
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      out.push([...prefix, i]);
      paths(x, [...prefix, i], out, limit);
    });
  } else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.push([...prefix, k]);
      paths(x, [...prefix, k], out, limit);
    }
  }
  return out;
}

function parentOf(root: unknown, path: Path): { parent: any; key: string | number } | null {
  let cur: any = root;
  for (let i = 0; i < path.length - 1; i++) {
    if (cur === null || typeof cur !== 'object') return null;
    cur = cur[path[i]!];
  }
  if (cur === null || typeof cur !== 'object') return null;
  return { parent: cur, key: path[path.length - 1]! };
}

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 ? { a: v } : [v];
  return v;
}

/** A replacement value: extremes, wrong types, junk. */
function junk(rng: FuzzRng, old: unknown): unknown {
  const n = typeof old === 'number' ? old : typeof old === 'string' && old.trim() !== '' && Number.isFinite(Number(old)) ? Number(old) : 1;
  const choices: Array<() => unknown> = [
    () => null,
    () => true,
    () => false,
    () => 0,
    () => -1,
    () => -n,
    () => n * 1000,
    () => n / 1000,
    () => n + 1e-9,
    () => 1e308,
    () => -1e308,
    () => 5e-324,
    () => 2 ** 53 + 1,
    () => 0.5,
    () => '',
    () => 'abc',
    () => '0',
    () => '-1',
    () => 'NaN',
    () => 'Infinity',
    () => '1e999',
    () => String(n),
    () => `${n}x`,
    () => [],
    () => {},
    () => [old, old],
    () => ({ value: old }),
    () => nested(40),
    () => 'x'.repeat(10_000),
    () => '\u0000\u202e\ud83d\ude00',
    () => (typeof old === 'string' ? old.toUpperCase() : old),
    () => (typeof old === 'string' ? old.slice(0, Math.max(0, old.length - 1 - rng.int(4))) : String(old)),
    () => (typeof old === 'string' ? `${old}.x` : old),
    () => (typeof old === 'string' ? old.replace(/[0-9]/, String(rng.int(10))) : old),
    () => (typeof old === 'number' ? Math.round(n) : n),
  ];
  return rng.pick(choices)();
}

/** One structural mutation of a (cloned) JSON value; returns the new root. */
function mutateOnce(root: unknown, rng: FuzzRng): unknown {
  const all = paths(root);
  if (all.length === 0 || rng.chance(0.02)) return junk(rng, root);
  const path = rng.pick(all);
  const at = parentOf(root, path);
  if (!at) return root;
  const { parent, key } = at;
  const op = rng.int(10);
  if (op <= 1) {
    // delete
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key];
  } else if (op === 2 && !Array.isArray(parent)) {
    // rename the key
    const v = parent[key];
    delete parent[key];
    parent[rng.pick([`${String(key)}_`, String(key).toUpperCase(), '', '__proto__', 'constructor'])] = v;
  } else if (op === 3 && Array.isArray(parent)) {
    // duplicate or reorder
    if (rng.chance(0.5)) parent.splice(key as number, 0, clone(parent[key as number]));
    else parent.reverse();
  } else if (op === 4) {
    // add an unknown sibling
    if (Array.isArray(parent)) parent.push(junk(rng, parent[0]));
    else parent[`extra${rng.int(100)}`] = junk(rng, null);
  } else {
    parent[key] = junk(rng, parent[key]);
  }
  return root;
}

/** 1 to `max` structural mutations of a deep copy of `v`. */
export function mutateJson(v: unknown, rng: FuzzRng, max = 3): unknown {
  let root = clone(v);
  const n = 1 + rng.int(max);
  for (let i = 0; i < n; i++) root = mutateOnce(root, rng);
  return root;
}

const SPECIAL = ['{', '}', '[', ']', '"', ',', ':', '\\', '\u0000', '\n', '\ufeff', 'é', '\ud800', 'null', '-', '.', 'e', '9'];

/** One to three byte-level damages of a text (mostly no longer valid JSON). */
export function mutateText(s: string, rng: FuzzRng): string {
  let t = s;
  const n = 1 + rng.int(3);
  for (let i = 0; i < n; i++) {
    const at = rng.int(Math.max(1, t.length));
    switch (rng.int(7)) {
      case 0:
        t = t.slice(0, at); // truncate
        break;
      case 1:
        t = t.slice(0, at) + String.fromCharCode((t.charCodeAt(at) ^ (1 << rng.int(7))) & 0xffff) + t.slice(at + 1); // bit flip
        break;
      case 2:
        t = t.slice(0, at) + rng.pick(SPECIAL) + t.slice(at); // insert
        break;
      case 3:
        t = t.slice(0, at) + t.slice(at + 1 + rng.int(20)); // delete a range
        break;
      case 4: {
        const len = 1 + rng.int(40);
        t = t.slice(0, at) + t.slice(at, at + len) + t.slice(at); // duplicate a range
        break;
      }
      case 5:
        t = rng.pick(['', ' ', 'null', '[]', '{}', '"str"', '42', 'true', t + t, `[${t}]`]);
        break;
      default:
        t = t.replace(/\d/g, (d) => (rng.chance(0.1) ? String((Number(d) + 1) % 10) : d)); // shift digits
    }
  }
  return t;
}
