/**
 * GET /api/v1/global/data/iVSummary (interface-spec section 8): ATM vol, 25/10-delta risk reversals and
 * butterflies, with their 24 h changes, per listed expiry (`volatilityListed`) and per constant maturity
 * 1W, 2W, 1M, 2M, 3M, 6M, 9M (`volatilityConstMat`), on the calibrated surface of (source, pair, model).
 *
 * Figures: src/quant/smileFigures.ts (forward ATM; plain forward Black call delta on the smile; RR = call -
 * put; BF = average of call and put minus ATM). Changes: src/cache/history.ts (the history point nearest to
 * observationTimestamp - 24 h within 30 min; null without one). All vols and changes are fractions. A figure
 * that cannot be computed (no strike with that delta on the smile) is null. Additive fields:
 * `observationTimestamp` (of the surface) and `diffReferenceTimestamp` (of the history point the changes are
 * measured against, or null). Conventions: docs/conventions.md "IV summary".
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { MarketCache } from '../../cache/marketCache.js';
import { ivSummaryDocument } from '../documents.js';
import { SurfaceQuery } from '../schemas.js';
import { assertServable, DetailCollector, resolvePair } from '../rules.js';

export const ivSummaryRoutes =
  (cache: MarketCache): FastifyPluginAsyncZod =>
  async (app) => {
    const history = cache.history;
    app.get(
      '/api/v1/global/data/iVSummary',
      {
        schema: {
          summary: 'Implied-volatility summary: ATM, 25/10-delta risk reversal and butterfly, listed and constant maturities, with 24 h changes',
          querystring: SurfaceQuery,
        },
      },
      async (req) => {
        const q = req.query;
        const errs = new DetailCollector();
        const r = resolvePair(errs, '', q.source, q.baseCurrency, q.quoteCurrency);
        errs.throwIfAny('query');
        const { source, pair } = r!;
        assertServable(cache, source, pair, q.volatilityModel);
        const snap = cache.getSurface(source, pair, q.volatilityModel)!;
        return ivSummaryDocument(history, snap, q.source);
      },
    );
  };
