/**
 * GET /api/v1/global/data/fundingRates (spec section 6) and
 * GET /api/v1/global/data/fundingInstruments (decisions.md). With `asOf` (src/api/asOf.ts): the points settled at
 * or before `asOf`, read from the history store (every funding point the service held is written there).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { resolveSource, type Source } from '../../domain/markets.js';
import type { Markets } from '../asOf.js';
import { fundingBetween, fundingInstrumentsAsOf } from '../../history/reads.js';
import { ApiError, badRequest } from '../errors.js';
import { FundingInstrumentsQuery, FundingRatesQuery } from '../schemas.js';
import { MARKET_GET, num, numOrNull, routePlugin, type JsonSchema, type LiveDocContext, type RouteDocs } from '../routeDefinition.js';

/** Most points one fundingRates answer holds (spec "Limits"). */
export const MAX_FUNDING_POINTS = 200;

/** GET fundingRates answer: at most {@link MAX_FUNDING_POINTS} points, newest first. */
const FundingRatesResult = z.array(z.object({ interest: num(), timestamp: num() })).max(MAX_FUNDING_POINTS);

/** GET fundingInstruments answer. */
const FundingInstrumentsResult = z.array(
  z.object({
    instrumentId: z.string(),
    source: z.string(),
    baseCurrency: z.string(),
    quoteCurrency: z.string(),
    intervalHours: num(),
    points: num(),
    firstTimestamp: numOrNull(),
    lastTimestamp: numOrNull(),
  }),
);

/** The funding instruments held now of every served source, sorted (an id of another source, or one not listed yet, is a 404). */
function heldInstrumentIds(ctx: LiveDocContext): string[] {
  return [...new Set(ctx.served.flatMap(({ source }) => ctx.cache.funding.instruments(source).map((i) => i.instrumentId)))].sort();
}

/** Documentation of GET fundingRates: the last day of the example market's perpetual; instrumentId among those held. */
const fundingRatesDocs: RouteDocs = {
  response: FundingRatesResult,
  errors: MARKET_GET,
  live: {
    query: ({ cache, market: m, now }) => ({
      source: m.source,
      instrumentId: cache.funding.instruments(m.source).find((i) => i.pair.base === m.pair.base)?.instrumentId ?? `${m.pair.base}-PERPETUAL`,
      startTime: now - 86400,
      endTime: now,
    }),
    parameterSchemas: (ctx): Record<string, JsonSchema> => {
      const ids = heldInstrumentIds(ctx);
      return ids.length > 0 ? { instrumentId: { enum: ids } } : {};
    },
  },
};

/** GET fundingRates and GET fundingInstruments over `markets` (a named fastify-plugin, `funding`). */
export const fundingRoutes = (markets: Markets): FastifyPluginAsyncZod =>
  routePlugin('funding', async (app) => {
    app.get(
      '/api/v1/global/data/fundingRates',
      {
        schema: {
          summary: `Funding rates of a perpetual for a period, newest first (at most ${MAX_FUNDING_POINTS}: the latest)`,
          tags: ['market data'],
          description: `Funding rates of a perpetual settled in [startTime, endTime], newest first. At most ${MAX_FUNDING_POINTS} elements: with more points in the range the ${MAX_FUNDING_POINTS} latest are returned. startTime > endTime is a 400; an unknown instrumentId a 404 naming the known ones.`,
          querystring: FundingRatesQuery,
          docs: fundingRatesDocs,
        },
      },
      async (req) => fundingRates(markets, req.query),
    );

    app.get(
      '/api/v1/global/data/fundingInstruments',
      {
        schema: {
          summary: 'Funding instruments (perpetuals) of a source with their funding interval and history span',
          tags: ['market data'],
          description: 'The funding instruments (perpetuals) of a source, with their funding interval and the span of history held.',
          querystring: FundingInstrumentsQuery,
          docs: { response: FundingInstrumentsResult, errors: [400, 401, 429, 503], live: { query: (ctx) => ({ source: ctx.market.source }) } },
        },
      },
      async (req) => fundingInstruments(markets, req.query),
    );
  });

/** GET fundingRates: the points of the period, from the history store with `asOf`, else from the live cache. */
async function fundingRates(markets: Markets, q: z.infer<typeof FundingRatesQuery>) {
  if (q.startTime > q.endTime) {
    throw badRequest('startTime must be <= endTime', [{ path: 'startTime', message: 'Must be <= endTime' }]);
  }
  const source = resolveSource(q.source)!;
  if (q.asOf !== undefined) return fundingRatesAsOf(markets, source, q, q.asOf);
  const cache = markets.live;
  // a replica still catching up, or a point overdue within the asked range (src/cache/marketCache.ts)
  const u = cache.fundingUnavailable(source, q.instrumentId, q.endTime);
  if (u) throw new ApiError(503, u.message, undefined, { 'retry-after': '5' });
  if (!cache.funding.has(source, q.instrumentId)) {
    if (!cache.isSourceConfigured(source)) {
      throw new ApiError(503, `source ${source} is not connected in this deployment`);
    }
    const known = cache.funding.instruments(source).map((i) => i.instrumentId);
    throw new ApiError(404, `unknown funding instrument ${q.instrumentId} for ${q.source} (known: ${known.join(', ') || 'none yet'})`);
  }
  return cache
    .fundingRange(source, q.instrumentId, q.startTime, q.endTime, MAX_FUNDING_POINTS)
    .map((p) => ({ interest: p.interest, timestamp: p.timestamp }));
}

/** GET fundingRates?asOf: the points settled at or before `asOf`; 404 when the store held no point of the instrument then. */
async function fundingRatesAsOf(markets: Markets, source: Source, q: z.infer<typeof FundingRatesQuery>, asOf: number) {
  const store = markets.storeFor(asOf);
  const known = await fundingInstrumentsAsOf(store, source, asOf);
  if (!known.some((k) => k.instrument_id === q.instrumentId)) {
    throw new ApiError(
      404,
      `no funding point of ${q.source} ${q.instrumentId} was held at ${new Date(asOf * 1000).toISOString()} (known then: ${known.map((k) => k.instrument_id).join(', ') || 'none'})`,
    );
  }
  return fundingBetween(store, source, q.instrumentId, q.startTime, q.endTime, MAX_FUNDING_POINTS, asOf);
}

/** GET fundingInstruments: the source's perpetuals with their funding interval and history span (from the store with `asOf`). */
async function fundingInstruments(markets: Markets, query: z.infer<typeof FundingInstrumentsQuery>) {
  const source = resolveSource(query.source)!;
  const asOf = query.asOf;
  if (asOf !== undefined) {
    const rows = await fundingInstrumentsAsOf(markets.storeFor(asOf), source, asOf);
    return rows.map((r) => ({
      instrumentId: r.instrument_id as string,
      source: query.source,
      baseCurrency: r.base as string,
      quoteCurrency: r.quote as string,
      intervalHours: r.interval_hours as number,
      points: r.points as number,
      firstTimestamp: r.first_ts as number,
      lastTimestamp: r.last_ts as number,
    }));
  }
  const cache = markets.live;
  const held = cache.held();
  if (held) throw new ApiError(503, held.message, undefined, { 'retry-after': '5' });
  if (!cache.isSourceConfigured(source)) {
    throw new ApiError(503, `source ${source} is not connected in this deployment`);
  }
  return cache.funding.instruments(source).map((i) => ({
    instrumentId: i.instrumentId,
    source: query.source,
    baseCurrency: i.pair.base,
    quoteCurrency: i.pair.quote,
    intervalHours: i.intervalHours,
    points: i.points,
    firstTimestamp: i.firstTimestamp,
    lastTimestamp: i.lastTimestamp,
  }));
}
