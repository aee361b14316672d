/**
 * GET /api/v1/global/data/surface (additive to the spec): the calibrated surface of one
 * (source, pair, model), any model of src/domain/volatilityModels.ts: listed expiries with their forward, model parameters,
 * ATM vol and fit diagnostics (RMSE and max error in vol points, quotes used, calibration time, butterfly and
 * calendar status: fitted, repaired or kept from an earlier fit), plus the surface's no-arbitrage summary and
 * the repair/rejection counts of that (source, pair, model) (src/cache/snapshot.ts SurfaceArbitrage).
 * Also the way to find the expiries the service lists (README).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Markets } from '../asOf.js';
import { SurfaceQuery } from '../schemas.js';
import { surfaceDocument } from '../documents.js';
import { assertServable, DetailCollector, resolvePair } from '../rules.js';
import { MARKET_GET, num, numOrNull, routePlugin, type RouteDocs } from '../routeDefinition.js';

/** GET surface answer (src/api/documents.ts surfaceDocument). */
const SurfaceResult = z.object({
  source: z.string(),
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  volatilityModel: z.string(),
  observationTimestamp: num(),
  spotPrice: num(),
  sequence: num(),
  calibrationMs: num(),
  arbitrage: z
    .object({
      butterflyFree: z.boolean().describe('Every served slice passes its butterfly check'),
      calendarFreeRaw: z.boolean().describe('The raw fitted slices were calendar-free on the grid (before the envelope)'),
      calendarFree: z.boolean().describe('The served surface is calendar-free: total variance non-decreasing in T at every grid k'),
      calendarGrid: z.string().describe('The grid of the calendar check, e.g. `241 points of k in [-3, 3]`'),
      counts: z
        .object({
          fits: num().describe('Expiry fits made'),
          constrainedRefits: num().describe('Fits whose violation a constrained refit removed (butterfly; SVI also the calendar floor)'),
          calendarRepaired: num().describe('Slices served with the calendar envelope'),
          rejected: num().describe('Fits rejected (arbitrage left after the refit)'),
          keptPrevious: num().describe('Rejected fits where the last good slice of the expiry was served instead'),
          dropped: num().describe('Rejected fits where no earlier good slice existed and the expiry was left out'),
        })
        .describe('Cumulative repair and rejection counts of this (source, pair, model) since the calibrator started'),
    })
    .nullable()
    .describe('No-arbitrage status of the surface and repair/rejection counts; null when the calibrator did not report them'),
  skipped: z
    .array(z.object({ expirationTimestamp: num(), reason: z.string().describe('Why the expiry is not served') }))
    .describe('Listed expiries this model could not serve, and why'),
  expiries: z.array(
    z.object({
      expirationTimestamp: num(),
      T: num(),
      forwardPrice: num().describe("The expiry's forward (the exchange's own: Deribit underlying_price), quote currency"),
      atmVol: num(),
      parameters: z.record(z.string(), num()),
      diagnostics: z.object({
        rmseVolPts: num(),
        maxErrorVolPts: num(),
        quotesUsed: num(),
        butterflyFree: z.boolean(),
        method: z.string(),
        calibrationMs: num(),
        referenceRmseVolPts: numOrNull().optional(),
        repairCostVolPts: numOrNull().optional(),
        plainRmseVolPts: numOrNull().optional(),
      }).loose(),
    }),
  ),
});

/** Documentation of GET surface: its answer, errors, the example market's query (SVI). */
const surfaceDocs: RouteDocs = { response: SurfaceResult, errors: MARKET_GET, live: { query: (ctx) => ({ ...ctx.pairQuery, volatilityModel: 'SVI' }) } };

/** GET surface over `markets` (a named fastify-plugin, `surface`). */
export const surfaceRoutes = (markets: Markets): FastifyPluginAsyncZod =>
  routePlugin('surface', async (app) => {
    app.get(
      '/api/v1/global/data/surface',
      {
        schema: {
          summary: 'Calibrated surface: listed expiries, forwards, model parameters and fit diagnostics',
          tags: ['market data'],
          description:
            'The calibrated surface of one (source, pair, model): listed expiries with their forward, ATM vol (K = F), model parameters and fit diagnostics. Additive to the spec; also the way to find the listed expiries.',
          querystring: SurfaceQuery,
          docs: surfaceDocs,
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
  });
