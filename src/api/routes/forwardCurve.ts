/**
 * GET /api/v1/global/data/forwardCurve (spec section 7): annualized basis yields of the listed
 * expiries and of the constant maturities 1D..12M. value = (F / S - 1) / T, simple (decisions.md).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Markets } from '../asOf.js';
import { PairQuery } from '../schemas.js';
import { forwardCurveDocument } from '../documents.js';
import { assertServable, DetailCollector, resolvePair } from '../rules.js';

export const forwardCurveRoutes =
  (markets: Markets): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/api/v1/global/data/forwardCurve',
      { schema: { summary: 'Forward curve: annualized basis yields, listed and constant maturities', querystring: PairQuery } },
      async (req) => {
        const q = req.query;
        const errs = new DetailCollector();
        const r = resolvePair(errs, '', q.source, q.baseCurrency, q.quoteCurrency);
        errs.throwIfAny('query');
        const { source, pair } = r!;
        const cache = await markets.at(q.asOf, [{ source, pair, model: null }]);
        assertServable(cache, source, pair, null);
        const snap = cache.getForwardCurve(source, pair)!;
        return forwardCurveDocument(snap, q.source);
      },
    );
  };
