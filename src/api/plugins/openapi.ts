/**
 * OpenAPI 3.0.3 document generated from the zod schemas the routes validate with (@fastify/swagger +
 * fastify-type-provider-zod's jsonSchemaTransform), served at GET /openapi.json, with browsable docs at /docs
 * (@fastify/swagger-ui).
 *
 * The transform adds, for the document only (route validation and serialization are untouched):
 * - the 200 response schema of each route, from the `docs` of the route's own schema (src/api/routeDefinition.ts
 *   RouteDocs; its summary, tags and description are read by @fastify/swagger from the same schema);
 * - the error responses the route can give, each with the one error body `ErrorBody` (a $ref) and the
 *   decisions.md meaning of the status;
 * - a description for every request/response property that has none of its own (FIELD_DESCRIPTIONS), and
 *   the batch size of array bodies.
 * Must be registered BEFORE the routes (swagger collects routes with an onRoute hook).
 * Source: @fastify/swagger README ("transform", "transformObject"), fastify-type-provider-zod README
 * ("How to use together with @fastify/swagger"), OpenAPI 3.0.3 specification.
 */
import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ERROR_STATUS_TEXT, ErrorBody, FIELD_DESCRIPTIONS, TAGS } from './openapiDocs.js';
import { liveOpenApi, operationKey, type LiveRoutes } from './openapiLive.js';
import type { RouteDocs } from '../routeDefinition.js';
import type { MarketCache } from '../../cache/marketCache.js';
import { EXPIRY_HORIZON_YEARS, MAX_NOTIONAL, MAX_PRICE, MAX_UNIX_TIME_S, MONEYNESS_FACTOR } from '../limits.js';

type JsonSchema = Record<string, unknown>;

/** Where the document and the docs UI are served. */
export const OPENAPI_JSON_PATH = '/openapi.json';
export const DOCS_PATH = '/docs';

/**
 * Fill `description` of every property (recursively) that has none, from FIELD_DESCRIPTIONS; give array
 * bodies their batch size. Mutates and returns `schema`. A property that is a bare $ref is left alone
 * (OpenAPI 3.0 ignores siblings of $ref).
 */
export function fillDescriptions(schema: unknown, name?: string): unknown {
  if (!schema || typeof schema !== 'object') return schema;
  const s = schema as JsonSchema;
  if (Array.isArray(s)) {
    for (const x of s) fillDescriptions(x);
    return s;
  }
  if (typeof s.$ref === 'string') return s;
  if (name && typeof s.description !== 'string' && FIELD_DESCRIPTIONS[name]) s.description = FIELD_DESCRIPTIONS[name];
  if (s.type === 'array' && typeof s.description !== 'string' && typeof s.maxItems === 'number') {
    s.description = `${typeof s.minItems === 'number' ? s.minItems : 0} to ${s.maxItems} items`;
  }
  const props = s.properties as Record<string, unknown> | undefined;
  if (props && typeof props === 'object') for (const [k, v] of Object.entries(props)) fillDescriptions(v, k);
  if (s.items) fillDescriptions(s.items, undefined);
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) if (Array.isArray(s[key])) for (const x of s[key] as unknown[]) fillDescriptions(x, name);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') fillDescriptions(s.additionalProperties);
  return s;
}

/** Default errors of a route whose schema has no `docs`. */
function defaultErrors(url: string, method: string, schema: JsonSchema): number[] {
  const out: number[] = [];
  if (schema.querystring || schema.body || schema.params) out.push(400);
  // 401 only when API keys are configured (ERROR_STATUS_TEXT[401])
  if (url.startsWith('/api/')) out.push(401, 404, 503);
  if (method === 'POST') out.push(413, 415);
  return out;
}

type TransformInput = Parameters<typeof jsonSchemaTransform>[0];

/**
 * The swagger `transform`: the responses of the route's own `docs` (its schema), then jsonSchemaTransform, then
 * descriptions. `docs` itself is not part of the document.
 */
export function documentedTransform(doc: TransformInput): ReturnType<typeof jsonSchemaTransform> {
  const { docs: info, ...schema } = (doc.schema ?? {}) as JsonSchema & { docs?: RouteDocs };
  if (schema.hide) return jsonSchemaTransform({ ...doc, schema } as TransformInput);
  const method = String(Array.isArray(doc.route?.method) ? doc.route.method[0] : doc.route?.method ?? 'GET').toUpperCase();
  const response: Record<string, unknown> = { ...((schema.response as Record<string, unknown> | undefined) ?? {}) };
  if (!response['200']) {
    const contentType = info?.responseContentType ?? 'application/json';
    const body = info?.response ?? (contentType === 'application/json' ? undefined : z.string());
    const more = Object.fromEntries((info?.alsoContentTypes ?? []).map((t) => [t, { schema: z.string() }]));
    if (body) response['200'] = { description: 'Success', content: { [contentType]: { schema: body }, ...more } };
  }
  for (const code of [...(info?.errors ?? defaultErrors(doc.url, method, schema)), 500]) {
    if (!response[String(code)]) {
      response[String(code)] = { description: ERROR_STATUS_TEXT[code] ?? 'Error', content: { 'application/json': { schema: ErrorBody } } };
    }
  }
  const withDocs: JsonSchema = { ...schema, response };
  const out = jsonSchemaTransform({ ...doc, schema: withDocs } as TransformInput);
  const t = out.schema as JsonSchema;
  for (const part of ['querystring', 'body', 'params', 'headers'] as const) if (t[part]) fillDescriptions(t[part]);
  const res = t.response as Record<string, { content?: Record<string, { schema?: unknown }> } | JsonSchema> | undefined;
  if (res) {
    for (const r of Object.values(res)) {
      const content = (r as { content?: Record<string, { schema?: unknown }> }).content;
      if (content) for (const c of Object.values(content)) fillDescriptions(c.schema);
      else fillDescriptions(r);
    }
  }
  return out;
}

/** 1e9 -> `1e9`: a limit as the document writes it. */
const sci = (x: number): string => x.toExponential().replace('e+', 'e');

/** Name of the API-key security scheme in `components.securitySchemes` (served only when keys are configured). */
export const API_KEY_SCHEME = 'ApiKeyAuth';

/**
 * The document with the API-key scheme (OpenAPI 3.0.3 section 4.7.33, `type: apiKey, in: header`): declared in
 * `components.securitySchemes` and required by every operation under /api, so that the /docs page shows an
 * "Authorize" box and its "Try it out" sends `X-API-Key` (swagger-ui attaches the header of the security scheme an
 * operation requires). Other paths (the health probes, /openapi.json, the dashboard's routes) are left as they are.
 * Mutates and returns `doc`.
 */
export function withApiKeySecurity(doc: Record<string, unknown>): Record<string, unknown> {
  const components = ((doc.components as Record<string, unknown> | undefined) ?? {}) as Record<string, unknown>;
  components.securitySchemes = {
    ...((components.securitySchemes as Record<string, unknown> | undefined) ?? {}),
    [API_KEY_SCHEME]: {
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
      description: 'One of the keys configured with API_KEYS or API_KEYS_FILE. Every /api route answers 401 without it.',
    },
  };
  doc.components = components;
  const paths = (doc.paths as Record<string, Record<string, Record<string, unknown>>> | undefined) ?? {};
  for (const [path, ops] of Object.entries(paths)) {
    if (!path.startsWith('/api/')) continue;
    for (const op of Object.values(ops)) {
      if (op && typeof op === 'object' && 'responses' in op) op.security = [{ [API_KEY_SCHEME]: [] }];
    }
  }
  return doc;
}

/**
 * Register @fastify/swagger (with the documentation transform), /openapi.json and the /docs UI on `app`.
 * With `cache`, every copy of the document served (/openapi.json, and the one the /docs page loads) carries
 * the live expiry window (src/api/plugins/openapiLive.ts) and the per-pair ranges and working examples each route
 * declares in its schema's `docs.live` (collected here as the routes are registered). With
 * `apiKeyRequired` (API keys configured) it also declares the `X-API-Key` scheme ({@link withApiKeySecurity}).
 */
export async function registerOpenApi(app: FastifyInstance, cache?: MarketCache, version = '0.1.0', apiKeyRequired = false): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Vol-surface service: option analytics and market data',
        description:
          'Valuation, implied volatility, risk scenarios, funding rates, forward curve and volatility summary from volatility surfaces ' +
          'calibrated live to Deribit (XCHG_A), OKX (XCHG_B) and Bybit (XCHG_C). Conventions: every timestamp is Unix time in seconds (UTC); ' +
          'IVs are fractions (0.55 = 55 %); T in years ACT/365; Black-76 on the expiry forward with r = 0; prices and strikes in the quote currency. ' +
          'Batch endpoints take a JSON array and answer one result per item carrying its instrumentId. Every error answers the ErrorBody shape. ' +
          '503 means no calibrated data yet or stale data, never a silent stale answer. ' +
          `Input limits (docs/operations.md "Input limits"): expirationTimestamp from the service clock to ${EXPIRY_HORIZON_YEARS} years after it (the live window ` +
          `is stated in this document when it is served); strikes and barriers within ${MONEYNESS_FACTOR}x of the expiry's forward (the per-pair range is ` +
          `stated in each pair's branch) and at most ${sci(MAX_PRICE)}; amount and size at most ${sci(MAX_NOTIONAL)} in absolute value; ` +
          `timestamps at most ${MAX_UNIX_TIME_S} (${new Date(MAX_UNIX_TIME_S * 1000).toISOString().slice(0, 10)}). ` +
          'A method a path does not declare answers 405 with an Allow header.',
        version,
      },
      tags: TAGS,
    },
    transform: documentedTransform,
    transformObject: jsonSchemaTransformObject,
  });
  // the live parts each route declares (its schema's docs.live), by the operation they belong to
  const liveRoutes: LiveRoutes = new Map();
  app.addHook('onRoute', (r) => {
    const liveDocs = r.schema?.docs?.live;
    if (!liveDocs) return;
    for (const m of Array.isArray(r.method) ? r.method : [r.method]) liveRoutes.set(operationKey(String(m), r.url), liveDocs);
  });
  const live = (doc: Record<string, unknown>) => {
    const out = cache ? liveOpenApi(doc, cache, liveRoutes) : doc;
    return apiKeyRequired ? withApiKeySecurity(out) : out;
  };
  await app.register(swaggerUi, {
    routePrefix: DOCS_PATH,
    // the page loads (and links) /openapi.json, the live document (swagger-ui: `urls` wins over `url`)
    // persistAuthorization: a key entered in "Authorize" survives a reload of the page (kept in the browser only)
    uiConfig: { urls: [{ url: OPENAPI_JSON_PATH, name: OPENAPI_JSON_PATH }], persistAuthorization: true } as Record<string, unknown>,
    transformSpecification: (spec) => live(spec as Record<string, unknown>),
  });
  app.get(OPENAPI_JSON_PATH, { schema: { hide: true } }, async () => live(structuredClone(app.swagger()) as unknown as Record<string, unknown>));
}
