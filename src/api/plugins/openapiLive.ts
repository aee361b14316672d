/**
 * The live part of the OpenAPI document: what depends on the service clock and the market held, filled in
 * each time GET /openapi.json (or the /docs page's copy) is served, on a copy of the generated document
 * (src/api/plugins/openapi.ts):
 *
 * - the expiry window of every `expirationTimestamp` of a request body: minimum = the service clock + 1 hour
 *   (so that a request valid against a freshly fetched document stays valid for an hour; the service itself
 *   accepts any time >= now), maximum = clock + 10 years (src/api/limits.ts);
 * - per (source, pair) the service serves (anyOf, one branch per pair and each source alias): the pair, the
 *   `inverse` flag it needs, and the strike/barrier range that the moneyness rule accepts at EVERY expiry of
 *   the window (the forward curve's range over the window, with a factor 2 of room for the market to move);
 * - which fields each option / instrument type needs (oneOf on the type);
 * - working `example`s: request bodies on a listed expiry about a month away with an at-the-money strike of
 *   the live forward (so that "Try it out" in /docs succeeds against the running service), query parameter
 *   examples, and an example of the error body with the real status code of each error response.
 *
 * Source: OpenAPI 3.0.3 specification (Schema Object: allOf/anyOf/oneOf, minimum/maximum, example; Media
 * Type Object: example; Parameter Object: example).
 */
import type { MarketCache } from '../../cache/marketCache.js';
import { SUPPORTED_PAIRS, SOURCE_ALIASES, SOURCES, optionsAreInverse, type Pair, type Source } from '../../domain/markets.js';
import { SECONDS_PER_YEAR } from '../../domain/time.js';
import { EXPIRY_HORIZON_S, MAX_PRICE, MONEYNESS_FACTOR } from '../limits.js';
import { errorBody } from '../errors.js';
import { EU_BARRIER_PAIRS } from '../routes/euBarrier.js';

type Json = Record<string, any>;

/** Margin of the document's expiry minimum over the service clock, seconds. */
export const DOC_EXPIRY_MARGIN_S = 3600;
/** Room left in the documented strike range for the forward to move after the document is served. */
const FORWARD_ROOM = 2;

/** Aliases of a source (DERIBIT, XCHG_A). */
function aliases(source: Source): string[] {
  return Object.entries(SOURCE_ALIASES)
    .filter(([, s]) => s === source)
    .map(([a]) => a);
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
function pairBranches(cache: MarketCache, pairs: ReadonlyArray<{ source: Source; pair: Pair }>, fields: { inverse?: boolean; prices: readonly string[] }): Json[] {
  return pairs.map(({ source, pair }) => {
    const props: Json = {
      source: { enum: aliases(source), description: `${source} or its alias` },
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

/** The example market: a served pair, an expiry about a month away, its forward. */
interface ExampleMarket {
  readonly source: Source;
  readonly pair: Pair;
  readonly expiry: number;
  readonly forward: number;
  readonly now: number;
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

/** Request body and query examples of every route, keyed `METHOD url`. */
function examples(cache: MarketCache): { bodies: Record<string, unknown>; queries: Record<string, Record<string, string | number>> } {
  const pairs = servedPairs(cache);
  const main = pairs.find((p) => p.source === 'DERIBIT' && p.pair.base === 'BTC') ?? pairs[0]!;
  const m = exampleMarket(cache, main.source, main.pair);
  const b = exampleMarket(cache, 'DERIBIT', EU_BARRIER_PAIRS[0]!);
  const pair = { baseCurrency: m.pair.base, quoteCurrency: m.pair.quote };
  const K = nice(m.forward);
  const vanilla = { instrumentId: 'c1', ...pair, amount: 1, vanillaOptionType: 'CALL', source: m.source, priceMethod: m.source, expirationTimestamp: m.expiry, strike: K, volatilityModel: 'SVI' };
  const scen = { instrumentId: 'r1', size: 2, ...pair, source: m.source, priceMethod: m.source, instrumentType: 'CALL', volatilityModel: 'SVI', expirationTimestamp: m.expiry, strike: K };
  const { priceMethod: _pm, ...advanced } = scen;
  const fut = { instrumentId: 'f1', size: -1, ...pair, source: m.source, instrumentType: 'FORWARD', expirationTimestamp: m.expiry };
  const { priceMethod: _fm, ...advancedFut } = { ...fut, priceMethod: m.source };
  const q = { source: m.source, ...pair };
  const now = Math.floor(m.now);
  return {
    bodies: {
      'POST /api/v1/global/optionValuation/vanilla': [vanilla, { ...vanilla, instrumentId: 'p1', vanillaOptionType: 'PUT', strike: nice(m.forward * 0.9) }, { ...vanilla, instrumentId: 'f1', vanillaOptionType: 'FORWARD' }],
      'POST /api/v1/global/data/iV/byStrike': [{ instrumentId: 'k1', ...pair, source: m.source, volatilityModel: 'SVI', expirationTimestamp: m.expiry, strike: K }],
      'POST /api/v1/global/data/iV/byDelta': [
        { instrumentId: 'd25c', ...pair, source: m.source, volatilityModel: 'SVI', expirationTimestamp: m.expiry, delta: 0.25 },
        { instrumentId: 'd25p', ...pair, source: m.source, volatilityModel: 'SVI', expirationTimestamp: m.expiry, delta: 0.75 },
      ],
      'POST /api/v1/global/optionValuation/euBarrier': [
        {
          instrumentId: 'b1',
          baseCurrency: b.pair.base,
          quoteCurrency: b.pair.quote,
          source: 'DERIBIT',
          volatilityModel: 'SVI',
          europeanBarrierOptionType: 'CALL',
          expirationTimestamp: b.expiry,
          strike: nice(b.forward),
          barrierType: 'UP_AND_OUT',
          barrier: nice(b.forward * 1.2),
        },
        { instrumentId: 'b2', baseCurrency: b.pair.base, quoteCurrency: b.pair.quote, source: 'DERIBIT', volatilityModel: 'SVI', europeanBarrierOptionType: 'DIGITAL_CALL', expirationTimestamp: b.expiry, barrier: nice(b.forward * 1.1) },
      ],
      'POST /api/v1/global/scenarios/riskScenarios': {
        riskScenarioInstruments: [scen, { ...fut, priceMethod: m.source }],
        riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.2, volRangeUp: 0.05, volRangeDown: 0.05 },
      },
      'POST /api/v1/global/scenarios/volRangeRiskScenarios': {
        riskScenarioInstruments: [scen, { ...fut, priceMethod: m.source }],
        riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.2, volShifts: [-0.2, 0, 0.2, 0.5] },
      },
      'POST /api/v1/global/scenarios/advancedRiskScenarios': {
        riskScenarioInstruments: [advanced, advancedFut],
        riskScenarioParameters: { priceRangeSteps: 4, priceRange: 0.16, volRangeUp: 0.5, volRangeDown: 0.25, minVolForShockUp: 0.5, shortTermVegaPower: 0.3, longTermVegaPower: 0.13 },
      },
    },
    queries: {
      'GET /api/v1/global/data/surface': { ...q, volatilityModel: 'SVI' },
      'GET /api/v1/global/data/iVSummary': { ...q, volatilityModel: 'SVI' },
      'GET /api/v1/global/data/iVSummary/history': { ...q, volatilityModel: 'SVI', interval: '1h', constMat: '1M' },
      'GET /api/v1/global/data/surface/history': { ...q, volatilityModel: 'SVI', interval: '1h' },
      'GET /api/v1/global/data/forwardCurve': q,
      'GET /api/v1/global/data/fundingInstruments': { source: m.source },
      'GET /api/v1/global/data/fundingRates': {
        source: m.source,
        instrumentId: cache.funding.instruments(m.source).find((i) => i.pair.base === m.pair.base)?.instrumentId ?? `${m.pair.base}-PERPETUAL`,
        startTime: now - 86400,
        endTime: now,
      },
      'GET /dashboard/api/state': { ...q, model: 'SVI' },
      'GET /api/v1/stream': { channels: `surface.${m.source}.${m.pair.base}-${m.pair.quote}.SVI,iv_summary.${m.source}.${m.pair.base}-${m.pair.quote}.SVI,status` },
    },
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

/**
 * Fill the live parts (see the module docstring) into `doc`, a copy of the generated OpenAPI document, at
 * the clock and market of `cache`. Mutates and returns `doc`.
 */
export function liveOpenApi(doc: Json, cache: MarketCache): Json {
  const now = cache.clock.now();
  const window = { minimum: Math.ceil(now) + DOC_EXPIRY_MARGIN_S, maximum: Math.floor(now) + EXPIRY_HORIZON_S };
  const served = servedPairs(cache);
  const ex = examples(cache);
  for (const [url, ops] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    for (const [method, op] of Object.entries(ops as Record<string, Json>)) {
      const key = `${method.toUpperCase()} ${url}`;
      for (const [code, res] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
        const status = Number(code);
        const media = res.content?.['application/json'];
        if (status >= 400 && media) {
          const e = ERROR_EXAMPLES[status] ?? { message: 'error' };
          media.example = errorBody(status, e.message, e.details);
        }
      }
      for (const p of (op.parameters ?? []) as Json[]) {
        const v = ex.queries[key]?.[p.name];
        if (v !== undefined) p.example = v;
        if (key === 'GET /api/v1/global/data/fundingRates' && p.name === 'instrumentId') {
          // the funding instruments held now (an id of another source, or one not listed yet, is a 404)
          const ids = [...new Set(served.flatMap(({ source }) => cache.funding.instruments(source).map((i) => i.instrumentId)))].sort();
          if (ids.length > 0) p.schema = { ...p.schema, enum: ids };
        }
      }
      const media = op.requestBody?.content?.['application/json'] as Json | undefined;
      if (!media?.schema) continue;
      walk(media.schema, (o) => {
        const ts = o.properties?.expirationTimestamp;
        if (ts && !ts.$ref) {
          ts.minimum = window.minimum;
          ts.maximum = window.maximum;
          ts.description = `${ts.description ?? ''} Accepted window: from the service clock to 10 years after it (the expiry horizon limit). This document states [clock + 1 hour, clock + 10 years] at the time it was served: ${window.minimum} to ${window.maximum}.`.trim();
        }
      });
      constrainItems(key, itemSchema(media.schema), cache, served);
      if (ex.bodies[key] !== undefined) media.example = ex.bodies[key];
    }
  }
  return doc;
}

/** Per-route pair branches and per-type requirements (see the module docstring). */
function constrainItems(key: string, item: Json | undefined, cache: MarketCache, served: ReadonlyArray<{ source: Source; pair: Pair }>): void {
  if (!item || !item.properties) return;
  const allOf: Json[] = [];
  switch (key) {
    case 'POST /api/v1/global/optionValuation/vanilla':
      allOf.push({ anyOf: pairBranches(cache, served, { inverse: true, prices: ['strike'] }) });
      allOf.push({
        oneOf: [
          { description: 'CALL and PUT need a strike', required: ['vanillaOptionType', 'strike'], properties: { vanillaOptionType: { enum: ['CALL', 'PUT'], description: 'CALL or PUT' } } },
          { description: 'FORWARD (also when vanillaOptionType is absent): strike optional', properties: { vanillaOptionType: { enum: ['FORWARD'], description: 'FORWARD (or absent)' } } },
        ],
      });
      break;
    case 'POST /api/v1/global/data/iV/byStrike':
      allOf.push({ anyOf: pairBranches(cache, served, { prices: ['strike'] }) });
      break;
    case 'POST /api/v1/global/data/iV/byDelta':
      allOf.push({ anyOf: pairBranches(cache, served, { prices: [] }) });
      break;
    case 'POST /api/v1/global/optionValuation/euBarrier': {
      const deribit = served.filter((p) => p.source === 'DERIBIT' && EU_BARRIER_PAIRS.some((q) => q.base === p.pair.base && q.quote === p.pair.quote));
      item.properties.volatilityModel = { ...item.properties.volatilityModel, enum: ['SVI'] };
      allOf.push({ anyOf: pairBranches(cache, deribit.length > 0 ? deribit : EU_BARRIER_PAIRS.map((pair) => ({ source: 'DERIBIT' as const, pair })), { prices: ['strike', 'barrier'] }) });
      allOf.push({
        oneOf: [
          { description: 'CALL, PUT and FORWARD need strike and barrierType', required: ['strike', 'barrierType'], properties: { europeanBarrierOptionType: { enum: ['CALL', 'PUT', 'FORWARD'], description: 'CALL, PUT or FORWARD' } } },
          { description: 'Digitals: barrier is the strike of the digital; strike and barrierType are ignored', properties: { europeanBarrierOptionType: { enum: ['DIGITAL_CALL', 'DIGITAL_PUT'], description: 'DIGITAL_CALL or DIGITAL_PUT' } } },
        ],
      });
      break;
    }
    case 'POST /api/v1/global/scenarios/riskScenarios':
    case 'POST /api/v1/global/scenarios/volRangeRiskScenarios':
    case 'POST /api/v1/global/scenarios/advancedRiskScenarios':
      if (key.endsWith('advancedRiskScenarios') && item.properties.priceMethod) {
        // zod's z.undefined() has no JSON Schema: state that the field must be absent
        item.properties.priceMethod = { not: {}, description: "Not a field of advancedRiskScenarios: must be absent (each instrument is valued with its source's own method)." };
      }
      allOf.push({ anyOf: pairBranches(cache, served, { inverse: true, prices: ['strike'] }) });
      allOf.push({
        oneOf: [
          { description: 'CALL and PUT need volatilityModel, expirationTimestamp and strike', required: ['volatilityModel', 'expirationTimestamp', 'strike'], properties: { instrumentType: { enum: ['CALL', 'PUT'], description: 'CALL or PUT' } } },
          { description: 'FORWARD and PERPETUAL need expirationTimestamp (strike optional: the trade price)', required: ['expirationTimestamp'], properties: { instrumentType: { enum: ['FORWARD', 'PERPETUAL'], description: 'FORWARD or PERPETUAL' } } },
          { description: 'SPOT needs none of them', properties: { instrumentType: { enum: ['SPOT'], description: 'SPOT' } } },
        ],
      });
      break;
    default:
      return;
  }
  item.allOf = [...((item.allOf as Json[] | undefined) ?? []), ...allOf];
}
