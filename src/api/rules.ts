/**
 * Request rules that need the market table, the calibrated models or the clock, applied to every
 * item of a batch before anything is computed: a batch with any invalid item is rejected whole,
 * with `details` naming every bad item (decisions.md "Errors").
 */
import type { Clock } from '../domain/clock.js';
import {
  SUPPORTED_PAIRS,
  isSupportedPair,
  optionsAreInverse,
  PRICE_METHOD_ALIASES,
  resolveSource,
  type BaseCurrency,
  type Pair,
  type QuoteCurrency,
  type Source,
} from '../domain/markets.js';
import type { VolatilityModel } from '../cache/snapshot.js';
import type { MarketCache } from '../cache/marketCache.js';
import { ApiError, badRequest, type ErrorDetail } from './errors.js';
import { EXPIRY_HORIZON_S, EXPIRY_HORIZON_YEARS, MONEYNESS_FACTOR } from './limits.js';

/** Collects item errors of one request. */
export class DetailCollector {
  readonly details: ErrorDetail[] = [];
  add(path: string, message: string): void {
    this.details.push({ path, message });
  }
  /** @throws ApiError 400 when anything was collected */
  throwIfAny(what: string): void {
    if (this.details.length > 0) {
      throw badRequest(`invalid ${what}: ${this.details.length} problem${this.details.length > 1 ? 's' : ''}`, this.details);
    }
  }
}

/**
 * Resolve source alias + pair and check it against the spec's pair table.
 * @returns undefined (and a detail recorded) when unsupported
 */
export function resolvePair(
  errs: DetailCollector,
  prefix: string,
  sourceValue: string,
  base: BaseCurrency,
  quote: QuoteCurrency,
): { source: Source; pair: Pair } | undefined {
  const source = resolveSource(sourceValue);
  if (!source) {
    errs.add(`${prefix}source`, `Unknown source ${sourceValue}`);
    return undefined;
  }
  const pair: Pair = { base, quote };
  if (!isSupportedPair(source, pair)) {
    const listed = SUPPORTED_PAIRS[source].map((p) => `${p.base}/${p.quote}`).join(', ');
    errs.add(`${prefix}baseCurrency`, `${sourceValue} does not list ${base}/${quote} (supported: ${listed})`);
    return undefined;
  }
  return { source, pair };
}

/**
 * expirationTimestamp must lie in the expiry window: >= the service clock (the replay clock in replay) and
 * at most EXPIRY_HORIZON_S (10 years, src/api/limits.ts) after it. The message names the limit.
 */
export function checkExpiry(errs: DetailCollector, prefix: string, expirationTimestamp: number, clock: Clock): void {
  const now = clock.now();
  const iso = (t: number) => new Date(t * 1000).toISOString();
  if (expirationTimestamp < now) {
    errs.add(`${prefix}expirationTimestamp`, `Must be >= current time (${Math.floor(now)} = ${iso(now)})`);
  } else if (expirationTimestamp > now + EXPIRY_HORIZON_S) {
    const max = Math.floor(now + EXPIRY_HORIZON_S);
    errs.add(
      `${prefix}expirationTimestamp`,
      `Must be at most ${EXPIRY_HORIZON_YEARS} years (${EXPIRY_HORIZON_S} s, the expiry horizon limit) after the current time: <= ${max} = ${iso(max)}`,
    );
  }
}

/**
 * A strike or barrier `K` must lie within [F / MONEYNESS_FACTOR, F * MONEYNESS_FACTOR] of the forward `F` of
 * its expiry (src/api/limits.ts: |ln(K/F)| <= ln 100). The message names the limit and the bounds.
 */
export function checkMoneyness(errs: DetailCollector, path: string, K: number, F: number): void {
  const lo = F / MONEYNESS_FACTOR;
  const hi = F * MONEYNESS_FACTOR;
  if (!(K >= lo && K <= hi)) {
    const fmt = (x: number) => Number(x.toPrecision(6));
    errs.add(path, `Must be within ${MONEYNESS_FACTOR}x of the expiry's forward ${fmt(F)} (the moneyness limit): from ${fmt(lo)} to ${fmt(hi)}`);
  }
}

/**
 * Every number of a computed result must be finite (the bounds above are meant to make this so). A
 * non-finite figure is never sent as null: the item is reported as a 400 naming the first such field.
 * @returns true when every number (recursively) of `result` is finite
 */
export function checkFiniteResult(errs: DetailCollector, prefix: string, result: unknown): boolean {
  // one allocation-free scan (a 100-instrument scenario answer holds ~100k numbers); the path of the offending
  // field is built only when there is one
  if (allFinite(result)) return true;
  const bad = firstNonFinite(result, '') ?? 'value';
  errs.add(`${prefix}${bad}`, 'No finite value at these inputs (outside the range the models are valid in)');
  return false;
}

/** True when every number (recursively) of `v` is finite; no allocation. */
function allFinite(v: unknown): boolean {
  if (typeof v === 'number') return Number.isFinite(v);
  if (v === null || typeof v !== 'object') return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!allFinite(v[i])) return false;
    return true;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) if (Object.prototype.hasOwnProperty.call(o, k) && !allFinite(o[k])) return false;
  return true;
}

/** Path (`a.b[2].c`) of the first non-finite number of `v`, or undefined. */
function firstNonFinite(v: unknown, path: string): string | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? undefined : path || 'value';
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const b = firstNonFinite(v[i], `${path}[${i}]`);
      if (b !== undefined) return b;
    }
    return undefined;
  }
  if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      const b = firstNonFinite(x, path ? `${path}.${k}` : k);
      if (b !== undefined) return b;
    }
  }
  return undefined;
}

/**
 * The inverse flag per the spec's rules. For CALL/PUT it must match the pair's convention; for
 * FORWARD/PERPETUAL it must match whether the exchange's futures of that pair are inverse (the
 * same convention here: coin-settled USD pairs are inverse, USDC pairs linear).
 * @returns the effective flag
 */
export function resolveInverse(
  errs: DetailCollector,
  prefix: string,
  source: Source,
  pair: Pair,
  given: boolean | undefined,
): boolean {
  const expected = optionsAreInverse(source, pair);
  if (given !== undefined && given !== expected) {
    errs.add(
      `${prefix}inverse`,
      `Must be ${expected} for ${source} ${pair.base}/${pair.quote} (${expected ? 'coin-settled, inverse' : 'linear'})`,
    );
  }
  return expected;
}

/** Resolve a priceMethod value (OTC = DERIBIT). */
export function resolvePriceMethod(value: string): Source {
  const s = PRICE_METHOD_ALIASES[value];
  if (!s) throw badRequest(`Unknown priceMethod ${value}`);
  return s;
}

/**
 * Throw 503 when (source, pair) cannot be served now: not connected, warming up, or stale.
 * The message says which and since when (decisions.md).
 */
export function assertServable(cache: MarketCache, source: Source, pair: Pair, model: VolatilityModel | null): void {
  const u = cache.unavailable(source, pair, model);
  if (u) throw new ApiError(503, u.message, undefined, { 'retry-after': u.reason === 'not-connected' ? '60' : '5' });
}

/** Record a detail for every instrumentId used more than once (the spec: "unique ID"). */
export function checkUniqueIds(errs: DetailCollector, ids: readonly string[], prefix: (i: number) => string): void {
  const seen = new Map<string, number>();
  ids.forEach((id, i) => {
    const first = seen.get(id);
    if (first === undefined) seen.set(id, i);
    else errs.add(`${prefix(i)}instrumentId`, `Must be unique: ${JSON.stringify(id)} is also item ${first}`);
  });
}
