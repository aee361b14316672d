/**
 * The live part of the OpenAPI document: what depends on the service clock and the market held, filled in
 * each time GET /openapi.json (or the /docs page's copy) is served, on a copy of the generated document
 * (src/api/plugins/openapi.ts):
 *
 * - the expiry window of every `expirationTimestamp` of a request body: minimum = the service clock + 1 hour
 *   (so that a request valid against a freshly fetched document stays valid for an hour; the service itself
 *   accepts any time >= now), maximum = clock + 10 years (src/api/limits.ts);
 * - an example of the error body with the real status code of each error response;
 * - what each route declares in its schema's `docs.live` (src/api/routeDefinition.ts RouteLiveDocs), given the
 *   {@link LiveDocContext} built here: per (source, pair) the route serves, an anyOf branch with the pair, the
 *   `inverse` flag it needs, and the strike/barrier range that the moneyness rule accepts at EVERY expiry of the
 *   window (the forward curve's range over the window, with a factor 2 of room for the market to move); which
 *   fields each option / instrument type needs; working `example`s of request bodies (on a listed expiry about a
 *   month away with an at-the-money strike of the live forward, so that "Try it out" in /docs succeeds against the
 *   running service) and of query parameters.
 *
 * Source: OpenAPI 3.0.3 specification (Schema Object: allOf/anyOf/oneOf, minimum/maximum, example; Media
 * Type Object: example; Parameter Object: example).
 */
import type { MarketCache } from '../../cache/marketCache.js';
import { SUPPORTED_PAIRS, SOURCES, optionsAreInverse, sourceAliases, type Pair, type Source } from '../../domain/markets.js';
import { SECONDS_PER_YEAR } from '../../domain/time.js';
import { EXPIRY_HORIZON_S, EXPIRY_HORIZON_YEARS, MAX_PRICE, MONEYNESS_FACTOR } from '../limits.js';
import { errorBody } from '../errors.js';
import type { ExampleMarket, JsonSchema, LiveDocContext, PairBranchFields, RouteLiveDocs } from '../routeDefinition.js';

type Json = JsonSchema;

/** The live parts the routes declared, by operation: `<method lower case> <url>` as in the document's paths. */
export type LiveRoutes = Map<string, RouteLiveDocs>;

/** Margin of the document's expiry minimum over the service clock, seconds. */
export const DOC_EXPIRY_MARGIN_S = 3600;
/** Room left in the documented strike range for the forward to move after the document is served. */
const FORWARD_ROOM = 2;

/**
 * The key of one operation of the document: lower-case method and the OpenAPI path (fastify's `:param` written
 * `{param}`, as @fastify/swagger writes it), e.g. `post /api/v1/global/data/iV/byStrike`.
 */
export function operationKey(method: string, url: string): string {
  return `${method.toLowerCase()} ${url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;
}

/** Forward range of (source, pair) over [now, now + horizon], from its forward curve; undefined without one. */
function forwardRange(cache: MarketCache, source: Source, pair: Pair): { lo: number; hi: number } | undefined {
  const fc = cache.getForwardCurve(source, pair) ?? cache.getSurface(source, pair, 'SVI');
  if (!fc) return undefined;
  const curve = 'curve' in fc ? fc.curve : fc.forwardCurve;
  const Tmax = (cache.clock.now() + EXPIRY_HORIZON_S - fc.observationTimestamp) / SECONDS_PER_YEAR;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i <= 200; i++) {
    const F = curve.forward(Math.max(0, (Tmax * i) / 200));
    if (Number.isFinite(F) && F > 0) {
      lo = Math.min(lo, F);
      hi = Math.max(hi, F);
    }
  }
  return lo <= hi ? { lo, hi } : undefined;
}

/** Strike/barrier range valid at every expiry of the window for (source, pair). */
function priceRange(cache: MarketCache, source: Source, pair: Pair): { minimum: number; maximum: number } | undefined {
  const r = forwardRange(cache, source, pair);
  if (!r) return undefined;
  const minimum = Number(((r.hi * FORWARD_ROOM) / MONEYNESS_FACTOR).toPrecision(3));
  const maximum = Math.min(MAX_PRICE, Number(((r.lo * MONEYNESS_FACTOR) / FORWARD_ROOM).toPrecision(3)));
  return minimum < maximum ? { minimum, maximum } : undefined;
}

/** The (source, pair)s served: the configured ones, or the spec's whole table when none is configured. */
function servedPairs(cache: MarketCache): Array<{ source: Source; pair: Pair }> {
  const expected = cache.expected();
  if (expected.length > 0) return [...expected];
  return SOURCES.flatMap((source) => SUPPORTED_PAIRS[source].map((pair) => ({ source, pair })));
}

/** One anyOf branch per served (source, pair): the pair, the inverse flag, the strike (and barrier) range. */
function pairBranches(cache: MarketCache, pairs: ReadonlyArray<{ readonly source: Source; readonly pair: Pair }>, fields: PairBranchFields): Json[] {
  return pairs.map(({ source, pair }) => {
    const props: Json = {
      source: { enum: sourceAliases(source), description: `${source} or its alias` },
      baseCurrency: { enum: [pair.base], description: `${pair.base}: a pair ${source} lists` },
      quoteCurrency: { enum: [pair.quote], description: `${pair.quote}: a pair ${source} lists` },
    };
    const inverse = optionsAreInverse(source, pair);
    if (fields.inverse) props.inverse = { enum: [inverse], description: `${inverse} for ${source} ${pair.base}/${pair.quote} (${inverse ? 'coin-settled' : 'linear'})` };
    const range = priceRange(cache, source, pair);
    if (range) for (const f of fields.prices) props[f] = { ...range, description: `Within ${MONEYNESS_FACTOR}x of the forward at every expiry of the window` };
    return {
      description: `${source} ${pair.base}/${pair.quote}${range ? `: ${fields.prices.join(' and ')} from ${range.minimum} to ${range.maximum} (within ${MONEYNESS_FACTOR}x of the forward at every expiry of the window)` : ''}`,
      properties: props,
    };
  });
}

/** A round number near x (two significant digits): 81 234 -> 81 000. */
function nice(x: number): number {
  const step = 10 ** (Math.floor(Math.log10(Math.abs(x))) - 1);
  return Number((Math.round(x / step) * step).toPrecision(2));
}

/** The Friday 08:00 UTC at least `minDays` days after `nowS` (Deribit's weekly expiry time). */
function fridayExpiry(nowS: number, minDays: number): number {
  const d = new Date((nowS + minDays * 86400) * 1000);
  d.setUTCHours(8, 0, 0, 0);
  while (d.getUTCDay() !== 5 || d.getTime() / 1000 < nowS + minDays * 86400) d.setTime(d.getTime() + 86400_000);
  return d.getTime() / 1000;
}

/** The example market on (source, pair): the listed SVI expiry nearest to 30 days out (at least a day away). */
function exampleMarket(cache: MarketCache, source: Source, pair: Pair): ExampleMarket {
  const now = cache.clock.now();
  const snap = cache.getSurface(source, pair, 'SVI');
  const listed = (snap?.slices ?? []).map((s) => s.expirationTimestamp).filter((e) => e >= now + 86400 && e <= now + EXPIRY_HORIZON_S);
  const expiry = listed.length > 0 ? listed.reduce((a, b) => (Math.abs(b - now - 30 * 86400) < Math.abs(a - now - 30 * 86400) ? b : a)) : fridayExpiry(now, 28);
  let forward = snap ? snap.forwardCurve.forward(Math.max(0, expiry - snap.observationTimestamp) / SECONDS_PER_YEAR) : NaN;
  if (!(forward > 0)) forward = pair.base === 'BTC' ? 80_000 : pair.base === 'ETH' ? 3_000 : pair.base === 'SOL' ? 150 : 2;
  return { source, pair, expiry, forward, now };
}

/** What the routes' live documentation is given (src/api/routeDefinition.ts LiveDocContext), at the clock and market of `cache`. */
function liveContext(cache: MarketCache): LiveDocContext {
  const served = servedPairs(cache);
  const main = served.find((p) => p.source === 'DERIBIT' && p.pair.base === 'BTC') ?? served[0]!;
  const market = exampleMarket(cache, main.source, main.pair);
  return {
    cache,
    served,
    market,
    pair: { baseCurrency: market.pair.base, quoteCurrency: market.pair.quote },
    pairQuery: { source: market.source, baseCurrency: market.pair.base, quoteCurrency: market.pair.quote },
    strike: nice(market.forward),
    now: Math.floor(market.now),
    exampleMarket: (source, pair) => exampleMarket(cache, source, pair),
    pairBranches: (pairs, fields) => pairBranches(cache, pairs, fields),
    nice,
  };
}

/** Example error messages per status (the messages the service really sends are of this kind). */
const ERROR_EXAMPLES: Readonly<Record<number, { message: string; details?: Array<{ path: string; message: string }> }>> = {
  400: { message: 'invalid request: 1 problem', details: [{ path: '[0].expirationTimestamp', message: 'Must be >= current time (1767254400 = 2026-01-01T08:00:00.000Z)' }] },
  401: { message: 'missing or invalid API key (header X-API-Key)' },
  404: { message: 'unknown funding instrument BTC-PERP for DERIBIT (known: BTC-PERPETUAL, ETH-PERPETUAL)' },
  413: { message: 'Request body is too large' },
  415: { message: 'Content-Type must be application/json' },
  429: { message: 'Rate limit exceeded, retry in 12 seconds' },
  500: { message: 'internal error' },
  503: { message: 'DERIBIT BTC/USD SVI is stale: last market data at 2026-01-01T08:00:00.000Z (45 s ago, limit 30 s)' },
};

/** Walk every schema of `s` (properties, items, combinators), calling `f` on each object schema. */
function walk(s: unknown, f: (o: Json) => void): void {
  if (!s || typeof s !== 'object') return;
  if (Array.isArray(s)) return s.forEach((x) => walk(x, f));
  const o = s as Json;
  f(o);
  if (o.properties) for (const v of Object.values(o.properties)) walk(v, f);
  if (o.items) walk(o.items, f);
  for (const k of ['allOf', 'anyOf', 'oneOf']) if (Array.isArray(o[k])) walk(o[k], f);
}

/** The item schema of a batch body (array) or of a scenario body (riskScenarioInstruments). */
function itemSchema(body: Json | undefined): Json | undefined {
  if (!body) return undefined;
  if (body.type === 'array') return body.items as Json;
  return body.properties?.riskScenarioInstruments?.items as Json | undefined;
}

/** The example body of each error response of `op`, with its real status code. */
function errorExamples(op: Json): void {
  for (const [code, res] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
    const status = Number(code);
    const media = res.content?.['application/json'];
    if (status >= 400 && media) {
      const e = ERROR_EXAMPLES[status] ?? { message: 'error' };
      media.example = errorBody(status, e.message, e.details);
    }
  }
}

/** The query parameters of `op` with the route's live examples and schema members. */
function liveParameters(op: Json, docs: RouteLiveDocs | undefined, ctx: LiveDocContext): void {
  const examples = docs?.query?.(ctx) ?? {};
  const schemas = docs?.parameterSchemas?.(ctx) ?? {};
  for (const p of (op.parameters ?? []) as Json[]) {
    const v = examples[p.name];
    if (v !== undefined) p.example = v;
    if (schemas[p.name]) p.schema = { ...p.schema, ...schemas[p.name] };
  }
}

/**
 * Fill the live parts (see the module docstring) into `doc`, a copy of the generated OpenAPI document, at the clock
 * and market of `cache`, with what each route declared (`routes`: src/api/plugins/openapi.ts collects them as the
 * routes are registered). Mutates and returns `doc`.
 */
export function liveOpenApi(doc: Json, cache: MarketCache, routes: ReadonlyMap<string, RouteLiveDocs>): Json {
  const now = cache.clock.now();
  const window = { minimum: Math.ceil(now) + DOC_EXPIRY_MARGIN_S, maximum: Math.floor(now) + EXPIRY_HORIZON_S };
  const ctx = liveContext(cache);
  for (const [url, ops] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    for (const [method, op] of Object.entries(ops as Record<string, Json>)) {
      const docs = routes.get(operationKey(method, url));
      errorExamples(op);
      liveParameters(op, docs, ctx);
      const media = op.requestBody?.content?.['application/json'] as Json | undefined;
      if (!media?.schema) continue;
      walk(media.schema, (o) => {
        const ts = o.properties?.expirationTimestamp;
        if (ts && !ts.$ref) {
          ts.minimum = window.minimum;
          ts.maximum = window.maximum;
          ts.description = `${ts.description ?? ''} Accepted window: from the service clock to ${EXPIRY_HORIZON_YEARS} years after it (the expiry horizon limit). This document states [clock + ${DOC_EXPIRY_MARGIN_S / 3600} hour, clock + ${EXPIRY_HORIZON_YEARS} years] at the time it was served: ${window.minimum} to ${window.maximum}.`.trim();
        }
      });
      const item = itemSchema(media.schema);
      if (item?.properties && docs?.constrainItem) item.allOf = [...((item.allOf as Json[] | undefined) ?? []), ...docs.constrainItem(item, ctx)];
      const example = docs?.body?.(ctx);
      if (example !== undefined) media.example = example;
    }
  }
  return doc;
}
