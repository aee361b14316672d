/**
 * GET /api/v1/global/data/surface (additive to the spec): the calibrated surface of one
 * (source, pair, model), any model of src/domain/volatilityModels.ts: listed expiries with their forward, model parameters,
 * ATM vol and fit diagnostics (RMSE and max error in vol points, quotes used, calibration time, butterfly and
 * calendar status: fitted, repaired or kept from an earlier fit), plus the surface's no-arbitrage summary and
 * the repair/rejection counts of that (source, pair, model) (src/cache/snapshot.ts SurfaceArbitrage).
 * Also the way to find the expiries the service lists (README).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Markets } from '../asOf.js';
import { SurfaceQuery } from '../schemas.js';
import { surfaceDocument } from '../documents.js';
import { assertServable, DetailCollector, resolvePair } from '../rules.js';

export const surfaceRoutes =
  (markets: Markets): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/api/v1/global/data/surface',
      {
        schema: {
          summary: 'Calibrated surface: listed expiries, forwards, model parameters and fit diagnostics',
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
        return surfaceDocument(snap, q.source);
      },
    );
  };
