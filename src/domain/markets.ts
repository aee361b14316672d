/**
 * Exchanges, currencies and the supported (source, pair) table.
 *
 * Source: docs/spec/interface-spec.md "Supported exchange and asset pairs" and
 * docs/spec/decisions.md "Exchanges". Wire values are DERIBIT, OKX, BYBIT; the spec words
 * XCHG_A, XCHG_B, XCHG_C are accepted as aliases at the API edge (see {@link resolveSource}).
 */

/** Exchange wire value used everywhere inside the service. */
export const SOURCES = ['DERIBIT', 'OKX', 'BYBIT'] as const;
export type Source = (typeof SOURCES)[number];

/** Spec aliases of the wire values (interface-spec.md uses XCHG_A/B/C). */
export const SOURCE_ALIASES: Readonly<Record<string, Source>> = {
  DERIBIT: 'DERIBIT',
  XCHG_A: 'DERIBIT',
  OKX: 'OKX',
  XCHG_B: 'OKX',
  BYBIT: 'BYBIT',
  XCHG_C: 'BYBIT',
};

/** The spec's names of `source`, itself first: `DERIBIT` -> `['DERIBIT', 'XCHG_A']` (the keys of {@link SOURCE_ALIASES}). */
export function sourceAliases(source: Source): string[] {
  return Object.keys(SOURCE_ALIASES).filter((a) => SOURCE_ALIASES[a] === source);
}

/** Price methods (exchange valuation conventions); OTC means DERIBIT (decisions.md). */
export const PRICE_METHOD_ALIASES: Readonly<Record<string, Source>> = {
  ...SOURCE_ALIASES,
  OTC: 'DERIBIT',
};

export const BASE_CURRENCIES = ['BTC', 'ETH', 'SOL', 'XRP'] as const;
export type BaseCurrency = (typeof BASE_CURRENCIES)[number];
export const QUOTE_CURRENCIES = ['USD', 'USDC'] as const;
export type QuoteCurrency = (typeof QUOTE_CURRENCIES)[number];

/** A currency pair, e.g. BTC/USD. */
export interface Pair {
  readonly base: BaseCurrency;
  readonly quote: QuoteCurrency;
}

/** `BTC/USD` style label of a pair. */
export function pairLabel(p: Pair): string {
  return `${p.base}/${p.quote}`;
}

/** Key of a (source, pair): `DERIBIT:BTC/USD` (decisions.md Kafka key format without the model). */
export function pairKey(source: Source, p: Pair): string {
  return `${source}:${p.base}/${p.quote}`;
}

/** The spec's pair table (vanilla, byDelta, byStrike, scenarios, forwardCurve, iVSummary). */
export const SUPPORTED_PAIRS: Readonly<Record<Source, readonly Pair[]>> = {
  DERIBIT: [
    { base: 'BTC', quote: 'USD' },
    { base: 'ETH', quote: 'USD' },
    { base: 'SOL', quote: 'USDC' },
    { base: 'XRP', quote: 'USDC' },
  ],
  OKX: [
    { base: 'BTC', quote: 'USD' },
    { base: 'ETH', quote: 'USD' },
  ],
  BYBIT: [
    { base: 'BTC', quote: 'USDC' },
    { base: 'ETH', quote: 'USDC' },
    { base: 'SOL', quote: 'USDC' },
  ],
};

/** True when the spec's table lists (source, pair). */
export function isSupportedPair(source: Source, p: Pair): boolean {
  return SUPPORTED_PAIRS[source].some((q) => q.base === p.base && q.quote === p.quote);
}

/**
 * Whether CALL/PUT options of (source, pair) are inverse (premium in coin), per the spec's
 * "inverse flag" rules: true for DERIBIT and OKX BTC/USD, ETH/USD; false otherwise.
 */
export function optionsAreInverse(source: Source, p: Pair): boolean {
  return (source === 'DERIBIT' || source === 'OKX') && p.quote === 'USD';
}

/** Resolve a wire value or spec alias to a Source; undefined when unknown. */
export function resolveSource(s: string): Source | undefined {
  return SOURCE_ALIASES[s];
}

/** A (source, pair), e.g. DERIBIT BTC/USD. */
export interface SourcePair {
  readonly source: Source;
  readonly pair: Pair;
}

/** Every supported (source, pair) in a fixed order (sources in {@link SOURCES} order, pairs in table order). */
export const ALL_SOURCE_PAIRS: readonly SourcePair[] = SOURCES.flatMap((source) => SUPPORTED_PAIRS[source].map((pair) => ({ source, pair })));

/**
 * Parse a `SOURCE:BASE/QUOTE` list such as `DERIBIT:BTC/USD, OKX:BTC/USD` (the PAIRS setting; sources may be wire
 * values or XCHG_A/B/C aliases, case-insensitive). Duplicates are kept once, in first-seen order.
 * @returns the pairs, or `{ error }` naming the first bad entry and what is allowed
 */
export function parseSourcePairs(value: string): { readonly pairs: readonly SourcePair[] } | { readonly error: string } {
  const out: SourcePair[] = [];
  const entries = value.split(',').map((x) => x.trim()).filter((x) => x.length > 0);
  if (entries.length === 0) return { error: 'must name at least one SOURCE:BASE/QUOTE pair' };
  for (const entry of entries) {
    const m = /^([A-Za-z_]+):([A-Za-z]+)\/([A-Za-z]+)$/.exec(entry);
    if (!m) return { error: `${JSON.stringify(entry)} is not SOURCE:BASE/QUOTE (e.g. DERIBIT:BTC/USD)` };
    const source = resolveSource(m[1]!.toUpperCase());
    if (!source) return { error: `${JSON.stringify(entry)}: unknown source ${m[1]} (expected DERIBIT, OKX, BYBIT)` };
    const listed = SUPPORTED_PAIRS[source];
    const pair = listed.find((p) => p.base === m[2]!.toUpperCase() && p.quote === m[3]!.toUpperCase());
    if (!pair) return { error: `${JSON.stringify(entry)}: ${source} has no pair ${m[2]}/${m[3]} (it lists ${listed.map(pairLabel).join(', ')})` };
    if (!out.some((p) => p.source === source && p.pair === pair)) out.push({ source, pair });
  }
  return { pairs: out };
}
