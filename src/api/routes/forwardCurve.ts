/**
 * GET /api/v1/global/data/forwardCurve (spec section 7): annualized basis yields of the listed
 * expiries and of the constant maturities 1D..12M. value = (F / S - 1) / T, simple (decisions.md).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Markets } from '../asOf.js';
import { PairQuery } from '../schemas.js';
import { CONST_MAT_DAYS, type ConstMat } from '../../quant/forwardCurve.js';
import { forwardCurveDocument } from '../documents.js';
import { assertServable, DetailCollector, resolvePair } from '../rules.js';
import { MARKET_GET, num, routePlugin, type RouteDocs } from '../routeDefinition.js';

/** GET forwardCurve answer (src/api/documents.ts forwardCurveDocument). */
const ForwardCurveResult = z.object({
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  source: z.string(),
  fixedYields: z.array(z.object({ expirationTimestamp: num(), value: num() })),
  constMatYields: z.array(z.object({ expirationTimestamp: num(), constMat: z.enum(Object.keys(CONST_MAT_DAYS) as [ConstMat, ...ConstMat[]]), value: num() })),
  observationTimestamp: num().describe('Additive: time of the newest market data of the curve, Unix seconds (the `asOf` that answers this curve again)'),
  sequence: num().describe('Additive: the curve\'s sequence (the calibration that built it; the surfaces of that calibration carry the same)'),
});

/** Documentation of GET forwardCurve: its answer, errors, the example market's query. */
const forwardCurveDocs: RouteDocs = { response: ForwardCurveResult, errors: MARKET_GET, live: { query: (ctx) => ctx.pairQuery } };

/** GET forwardCurve over `markets` (a named fastify-plugin, `forwardCurve`). */
export const forwardCurveRoutes = (markets: Markets): FastifyPluginAsyncZod =>
  routePlugin('forwardCurve', async (app) => {
    app.get(
      '/api/v1/global/data/forwardCurve',
      {
        schema: {
          summary: 'Forward curve: annualized basis yields, listed and constant maturities',
          tags: ['market data'],
          description:
            'Annualized basis yields value = (F / S - 1) / T (simple, ACT/365) of the listed expiries (fixedYields, not sorted by expiry) and of the constant maturities 1D, 1W, 2W, 1M, 2M, 3M, 6M, 9M, 12M read off the curve interpolated between listed expiries.',
          querystring: PairQuery,
          docs: forwardCurveDocs,
        },
      },
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
  });
