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
 * measured against, or null). With `asOf` (src/api/asOf.ts) the surface served then, and its changes against the
 * stored point the live answer used (src/history/reads.ts summaryNearest). Conventions: docs/conventions.md
 * "IV summary".
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { DIFF_HORIZON_S, DIFF_TOLERANCE_S } from '../../cache/history.js';
import { summaryNearest } from '../../history/reads.js';
import type { Markets } from '../asOf.js';
import { ivSummaryDocument, ivSummaryDocumentAgainst } from '../documents.js';
import { SurfaceQuery } from '../schemas.js';
import { assertServable, DetailCollector, resolvePair } from '../rules.js';

export const ivSummaryRoutes =
  (markets: Markets): FastifyPluginAsyncZod =>
  async (app) => {
    const history = markets.live.history;
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
        const cache = await markets.at(q.asOf, [{ source, pair, model: q.volatilityModel }]);
        assertServable(cache, source, pair, q.volatilityModel);
        const snap = cache.getSurface(source, pair, q.volatilityModel)!;
        if (q.asOf === undefined) return ivSummaryDocument(history, snap, q.source);
        const ref = { source, pair: `${pair.base}/${pair.quote}`, model: q.volatilityModel };
        const past = await summaryNearest(markets.storeFor(q.asOf), ref, snap.observationTimestamp - DIFF_HORIZON_S, DIFF_TOLERANCE_S, history.bucketS);
        return ivSummaryDocumentAgainst(snap, past, q.source);
      },
    );
  };
