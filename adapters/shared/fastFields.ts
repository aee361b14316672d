/**
 * Fast paths of the normalizers' zod schemas for the hot messages (OKX opt-summary items, Bybit option tickers):
 * the same strict rules, checked by hand, so that a valid message costs no zod parse. Anything the fast path does
 * not accept returns `undefined`, and the caller runs the zod schema, which then produces the same result or the
 * exact error detail (so behaviour never depends on which path ran; test/adapters/fastFields.test.ts checks the
 * two agree on edge cases).
 *
 * Numeric strings follow OKX's and Bybit's convention (adapters/okx/wire.ts `okxNum`, adapters/bybit/wire.ts
 * `bybitNum`): `""` -> null (missing); a plain decimal (optional exponent) -> a finite number; anything else
 * (JSON numbers, whitespace, `NaN`, `Infinity`, hex, an overflow to Infinity) is invalid.
 */

/** A plain decimal as OKX and Bybit print them (their wire schemas parse with it too: adapters/shared/wireKit.ts). */
export const DECIMAL_RE = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

/**
 * One exchange numeric string: null for `""`, a finite number for a plain decimal, `undefined` when invalid
 * (including absent: the caller decides whether absent means null).
 */
export function decimalString(v: unknown): number | null | undefined {
  if (typeof v !== 'string') return undefined;
  if (v === '') return null;
  if (!DECIMAL_RE.test(v)) return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

/** The fields a fast path reads: numeric strings (required: present; optional: absent -> null) and strings. */
export interface FastFieldSpec {
  /** Numeric strings that must be present (`""` -> null). */
  readonly required: readonly string[];
  /** Numeric strings that may be absent (absent or `""` -> null). */
  readonly optional: readonly string[];
  /** Strings that must be present. */
  readonly strings?: readonly string[];
  /** Strings that may be absent. */
  readonly optionalStrings?: readonly string[];
}

/**
 * The spec'd fields of `obj` parsed (numbers or null; strings as is), or `undefined` when any of them would fail
 * its schema (then run the zod schema). Fields outside the spec are not copied (the zod schemas are loose; the
 * normalizers read only spec'd fields).
 */
export function fastFields<T>(obj: Record<string, unknown>, spec: FastFieldSpec): T | undefined {
  const out: Record<string, unknown> = {};
  for (const k of spec.required) {
    const v = decimalString(obj[k]);
    if (v === undefined) return undefined;
    out[k] = v;
  }
  for (const k of spec.optional) {
    const raw = obj[k];
    if (raw === undefined) {
      out[k] = null;
      continue;
    }
    const v = decimalString(raw);
    if (v === undefined) return undefined;
    out[k] = v;
  }
  if (spec.strings) {
    for (const k of spec.strings) {
      const v = obj[k];
      if (typeof v !== 'string') return undefined;
      out[k] = v;
    }
  }
  if (spec.optionalStrings) {
    for (const k of spec.optionalStrings) {
      const v = obj[k];
      if (v === undefined) continue;
      if (typeof v !== 'string') return undefined;
      out[k] = v;
    }
  }
  return out as T;
}

/**
 * A bounded memo of a pure function of a string (parsed instrument names and their constants): at most `max`
 * entries; when full it is cleared (instrument sets are small and stable, so clearing is rare and cheap).
 */
export class StringMemo<V> {
  private readonly map = new Map<string, V>();
  constructor(
    private readonly fn: (key: string) => V,
    private readonly max = 50_000,
  ) {}

  get(key: string): V {
    let v = this.map.get(key);
    if (v === undefined && !this.map.has(key)) {
      v = this.fn(key);
      if (this.map.size >= this.max) this.map.clear();
      this.map.set(key, v);
    }
    return v as V;
  }

  /** Forget everything (e.g. after the listing changed). */
  clear(): void {
    this.map.clear();
  }
}
