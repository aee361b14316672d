/**
 * GET /api/v1/global/data/fundingRates (spec section 6) and
 * GET /api/v1/global/data/fundingInstruments (decisions.md).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { resolveSource } from '../../domain/markets.js';
import type { MarketCache } from '../../cache/marketCache.js';
import { ApiError, badRequest } from '../errors.js';
import { FundingInstrumentsQuery, FundingRatesQuery } from '../schemas.js';

/** Most points one fundingRates answer holds (spec "Limits"). */
export const MAX_FUNDING_POINTS = 200;

export const fundingRoutes =
  (cache: MarketCache): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/api/v1/global/data/fundingRates',
      {
        schema: {
          summary: 'Funding rates of a perpetual for a period, newest first (at most 200: the latest)',
          querystring: FundingRatesQuery,
        },
      },
      async (req) => {
        const q = req.query;
        if (q.startTime > q.endTime) {
          throw badRequest('startTime must be <= endTime', [{ path: 'startTime', message: 'Must be <= endTime' }]);
        }
        const source = resolveSource(q.source)!;
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
      },
    );

    app.get(
      '/api/v1/global/data/fundingInstruments',
      {
        schema: {
          summary: 'Funding instruments (perpetuals) of a source with their funding interval and history span',
          querystring: FundingInstrumentsQuery,
        },
      },
      async (req) => {
        const source = resolveSource(req.query.source)!;
        const held = cache.held();
        if (held) throw new ApiError(503, held.message, undefined, { 'retry-after': '5' });
        if (!cache.isSourceConfigured(source)) {
          throw new ApiError(503, `source ${source} is not connected in this deployment`);
        }
        return cache.funding.instruments(source).map((i) => ({
          instrumentId: i.instrumentId,
          source: req.query.source,
          baseCurrency: i.pair.base,
          quoteCurrency: i.pair.quote,
          intervalHours: i.intervalHours,
          points: i.points,
          firstTimestamp: i.firstTimestamp,
          lastTimestamp: i.lastTimestamp,
        }));
      },
    );
  };
