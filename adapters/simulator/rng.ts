/**
 * Seeded pseudo-random numbers for the simulator (deterministic given a seed).
 *
 * - {@link mulberry32}: 32-bit state generator, uniform on [0, 1). Source: Tommy Ettinger's
 *   public-domain mulberry32 (2017), as widely reproduced (e.g. bryc/code "PRNGs.md").
 * - {@link Rng.normal}: standard normal by the Box-Muller transform. Source: G. E. P. Box and
 *   M. E. Muller, "A Note on the Generation of Random Normal Deviates", Ann. Math. Statist. 29
 *   (1958) p.610, eq. (1).
 * - {@link hashString}: FNV-1a 32-bit hash, to derive stable per-instrument constants and
 *   independent seeds from names. Source: Fowler, Noll, Vo, "FNV hash" (IETF draft
 *   draft-eastlake-fnv, section 2).
 */

/** A uniform generator on [0, 1). */
export type Uniform = () => number;

/**
 * mulberry32 generator seeded with a 32-bit integer.
 * @param seed any finite number; only its low 32 bits are used.
 * @returns a function giving uniform numbers on [0, 1) (never exactly 1).
 */
export function mulberry32(seed: number): Uniform {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * FNV-1a 32-bit hash of a string.
 * @returns an unsigned 32-bit integer.
 */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A uniform on [0, 1) that depends only on the string (stable per-instrument constants). */
export function hash01(s: string): number {
  return mulberry32(hashString(s))();
}

/**
 * A seeded random stream: uniforms (mulberry32) and standard normals (Box-Muller, both
 * variates of each pair are used).
 */
export class Rng {
  private readonly u: Uniform;
  private spare: number | null = null;

  /** @param seed integer seed (low 32 bits used). */
  constructor(seed: number) {
    this.u = mulberry32(seed);
  }

  /** Uniform on [0, 1). */
  uniform(): number {
    return this.u();
  }

  /** Standard normal N(0, 1) (Box-Muller). */
  normal(): number {
    if (this.spare !== null) {
      const s = this.spare;
      this.spare = null;
      return s;
    }
    let u1 = this.u();
    while (u1 <= 1e-300) u1 = this.u();
    const u2 = this.u();
    const r = Math.sqrt(-2 * Math.log(u1));
    this.spare = r * Math.sin(2 * Math.PI * u2);
    return r * Math.cos(2 * Math.PI * u2);
  }

  /** A new independent stream derived from this seed and a label (e.g. an underlying name). */
  static derive(seed: number, label: string): Rng {
    return new Rng((hashString(label) ^ Math.imul(seed >>> 0, 0x9e3779b1)) >>> 0);
  }
}
