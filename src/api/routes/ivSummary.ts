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
import { z } from 'zod';
import { DIFF_HORIZON_S, DIFF_TOLERANCE_S, IV_SUMMARY_CONST_MATS } from '../../cache/history.js';
import { summaryNearest } from '../../history/reads.js';
import type { Markets } from '../asOf.js';
import { ivSummaryDocument, ivSummaryDocumentAgainst } from '../documents.js';
import { SurfaceQuery } from '../schemas.js';
import { assertServable, DetailCollector, resolvePair } from '../rules.js';
import { MARKET_GET, num, numOrNull, routePlugin, type RouteDocs } from '../routeDefinition.js';

/** iVSummary entry: vols and changes are fractions; a figure that cannot be computed (no strike with that delta on the smile, no history point 24 h back) is null. */
const IvSummaryEntry = z.object({
  expirationTimestamp: num(),
  constMat: z.enum(IV_SUMMARY_CONST_MATS).optional(),
  atmVol: num(),
  diffAtmVol: numOrNull(),
  delta10Skew: numOrNull(),
  diffDelta10Skew: numOrNull(),
  delta25Skew: numOrNull(),
  diffDelta25Skew: numOrNull(),
  delta10Bfly: numOrNull(),
  diffDelta10Bfly: numOrNull(),
  delta25Bfly: numOrNull(),
  diffDelta25Bfly: numOrNull(),
});
/** GET iVSummary answer (src/api/documents.ts ivSummaryDocument). */
const IvSummaryResult = z.object({
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  source: z.string(),
  volatilityModel: z.string(),
  observationTimestamp: num().describe('Observation time of the surface summarized, Unix seconds'),
  diffReferenceTimestamp: numOrNull().describe('Observation time of the history point (about 24 h earlier) the changes are measured against; null when there is none, and then every diff is null'),
  volatilityListed: z.array(IvSummaryEntry),
  volatilityConstMat: z.array(IvSummaryEntry),
});

/** Documentation of GET iVSummary: its answer, errors, the example market's query (SVI). */
const ivSummaryDocs: RouteDocs = { response: IvSummaryResult, errors: MARKET_GET, live: { query: (ctx) => ({ ...ctx.pairQuery, volatilityModel: 'SVI' }) } };

/** GET iVSummary over `markets` (a named fastify-plugin, `ivSummary`). */
export const ivSummaryRoutes = (markets: Markets): FastifyPluginAsyncZod =>
  routePlugin('ivSummary', async (app) => {
    const history = markets.live.history;
    app.get(
      '/api/v1/global/data/iVSummary',
      {
        schema: {
          summary: 'Implied-volatility summary: ATM, 25/10-delta risk reversal and butterfly, listed and constant maturities, with 24 h changes',
          tags: ['implied volatility'],
          description:
            'ATM vol, 25-delta and 10-delta risk reversals (vol(call) - vol(put) at that forward delta) and butterflies ((vol(call) + vol(put)) / 2 - ATM vol) of the listed expiries (not sorted by expiry) and of the constant maturities 1W..9M, with their 24 h absolute changes.',
          querystring: SurfaceQuery,
          docs: ivSummaryDocs,
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
  });
