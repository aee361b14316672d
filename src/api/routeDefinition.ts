/**
 * A route is one definition (issue 25 item 4): its path, method, zod request schema, summary, tags, description,
 * documented responses, live examples and live constraints are all declared in the route's own module, in the
 * fastify route `schema` it registers (`summary`, `tags`, `description` as @fastify/swagger reads them; `docs`
 * below for the rest). The OpenAPI document is generated from what the routes register
 * (src/api/plugins/openapi.ts reads `schema.docs` in its swagger transform; src/api/plugins/openapiLive.ts calls
 * `docs.live` when the document is served). Nothing keys a route by a `'METHOD /path'` string by hand.
 *
 * Every route module is a named fastify-plugin ({@link routePlugin}), encapsulated like a plain plugin.
 * Source: fastify "Routes" (route options, schema), @fastify/swagger README ("transform"), fastify-plugin README
 * (name, fastify, encapsulate).
 */
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { MarketCache } from '../cache/marketCache.js';
import type { Pair, Source } from '../domain/markets.js';
import { MAX_BATCH_ITEMS } from './schemas.js';
import { MAX_SCENARIO_INSTRUMENTS } from './scenarioSchemas.js';

/** A JSON Schema (OpenAPI 3.0 Schema Object) of the generated document, as plain JSON. */
export type JsonSchema = Record<string, any>;

/** The example market of the live document: a served pair, an expiry about a month away, its forward. */
export interface ExampleMarket {
  readonly source: Source;
  readonly pair: Pair;
  /** Listed expiry nearest to 30 days out (or the Friday 08:00 UTC 4 weeks out), Unix seconds. */
  readonly expiry: number;
  /** Forward of that expiry, quote currency (a round default when no surface is held). */
  readonly forward: number;
  /** The service clock, Unix seconds. */
  readonly now: number;
}

/** Fields of {@link LiveDocContext.pairBranches}: whether a branch states `inverse`, and which price fields get the range. */
export interface PairBranchFields {
  readonly inverse?: boolean;
  readonly prices: readonly string[];
}

/**
 * What the live document knows when it is served (src/api/plugins/openapiLive.ts builds it at the service clock and
 * the market held), handed to each route's {@link RouteLiveDocs}.
 */
export interface LiveDocContext {
  readonly cache: MarketCache;
  /** The (source, pair)s served: the configured ones, or the spec's whole table when none is configured. */
  readonly served: ReadonlyArray<{ readonly source: Source; readonly pair: Pair }>;
  /** The main example market (DERIBIT BTC/USD when served, else the first served pair). */
  readonly market: ExampleMarket;
  /** `{ baseCurrency, quoteCurrency }` of the main example market. */
  readonly pair: { readonly baseCurrency: string; readonly quoteCurrency: string };
  /** `{ source, baseCurrency, quoteCurrency }` of the main example market: the query of a market-data GET. */
  readonly pairQuery: { readonly source: Source; readonly baseCurrency: string; readonly quoteCurrency: string };
  /** An at-the-money strike of the main example market: its forward, rounded to two significant digits. */
  readonly strike: number;
  /** The service clock, whole Unix seconds. */
  readonly now: number;
  /** The example market on (source, pair). */
  exampleMarket(source: Source, pair: Pair): ExampleMarket;
  /**
   * One anyOf branch per (source, pair) of `pairs`: the pair, the `inverse` flag it needs (with `fields.inverse`), and
   * the price range the moneyness rule accepts at every expiry of the window for each of `fields.prices`.
   */
  pairBranches(pairs: ReadonlyArray<{ readonly source: Source; readonly pair: Pair }>, fields: PairBranchFields): JsonSchema[];
  /** A round number near x (two significant digits): 81 234 -> 81 000. */
  nice(x: number): number;
}

/** The live parts of one route's documentation, computed each time the document is served. */
export interface RouteLiveDocs {
  /** Example of the JSON request body (a request that succeeds against the running service). */
  body?(ctx: LiveDocContext): unknown;
  /** Examples of query parameters, by name. */
  query?(ctx: LiveDocContext): Readonly<Record<string, string | number>>;
  /** Schema members merged into the schema of the named query parameters (e.g. the enum of the ids held now). */
  parameterSchemas?(ctx: LiveDocContext): Readonly<Record<string, JsonSchema>>;
  /**
   * Rules on one item of the body (a batch item, or a scenario instrument) that depend on the market: the schemas
   * returned are appended to the item's `allOf`; it may also edit `item` (a field the document states otherwise).
   */
  constrainItem?(item: JsonSchema, ctx: LiveDocContext): JsonSchema[];
}

/** Documentation-only parts of a route's schema (never given to fastify's serializer: answers are serialized as without it). */
export interface RouteDocs {
  /** The 200 response body (zod; documentation only). */
  readonly response?: z.ZodType;
  /** Content type of the 200 response when not JSON (then documented as a string body unless `response` is given). */
  readonly responseContentType?: string;
  /** Further content types the 200 response may have (a `format` query parameter chooses), each a string body. */
  readonly alsoContentTypes?: readonly string[];
  /** Error statuses the route can answer (besides 500, which every route may). */
  readonly errors: readonly number[];
  /** Examples and rules filled in when the document is served. */
  readonly live?: RouteLiveDocs;
}

declare module 'fastify' {
  interface FastifySchema {
    /** The route's documentation (src/api/routeDefinition.ts RouteDocs); read by the OpenAPI generator only. */
    docs?: RouteDocs;
  }
}

/** Errors of a market-data GET: 401 only when API keys are configured; 429 under the rate limit (RATE_LIMIT_MAX, on by default). */
export const MARKET_GET: readonly number[] = [400, 401, 404, 429, 503];
/** Errors of a market-data POST: those of {@link MARKET_GET}, with 413 (body too large) and 415 (not JSON). */
export const MARKET_POST: readonly number[] = [...MARKET_GET, 413, 415].sort((a, b) => a - b);
/** Description sentence of the batch endpoints (1 to {@link MAX_BATCH_ITEMS} items). */
export const BATCH50 = `The body is a JSON array of 1 to ${MAX_BATCH_ITEMS} items; the answer is one result per item, in order, each carrying its instrumentId.`;
/** Description sentence of the scenario endpoints (1 to {@link MAX_SCENARIO_INSTRUMENTS} instruments). */
export const BATCH100 =
  `riskScenarioInstruments holds 1 to ${MAX_SCENARIO_INSTRUMENTS} instruments; one result per instrument. Scenario k of -priceRangeSteps..priceRangeSteps shifts spot and forward by k*priceRange/priceRangeSteps (fraction); scenario 0 is the current market.`;

/** A number field of a documented response (its description comes from FIELD_DESCRIPTIONS unless given). */
export const num = (): z.ZodNumber => z.number();
/** A nullable number field of a documented response. */
export const numOrNull = (): z.ZodNullable<z.ZodNumber> => z.number().nullable();

/** `A, B and C` (with `conj` `or`: `A, B or C`): a list in words, as the descriptions write it. */
export function inWords(xs: readonly string[], conj: 'and' | 'or'): string {
  return xs.length > 1 ? `${xs.slice(0, -1).join(', ')} ${conj} ${xs.at(-1)}` : xs.join('');
}

/**
 * `plugin` as a named fastify-plugin (`name` in fastify's plugin metadata and errors; fastify 5.x checked), still
 * encapsulated (`encapsulate: true`): the hooks and plugins a route module registers (compression, preClose)
 * stay within it, as with a plain plugin.
 */
export function routePlugin(name: string, plugin: FastifyPluginAsyncZod): FastifyPluginAsyncZod {
  return fp(plugin as FastifyPluginAsync, { name, fastify: '5.x', encapsulate: true }) as unknown as FastifyPluginAsyncZod;
}
