/**
 * POST /api/v1/global/optionValuation/vanilla (spec section 2): value and Greeks of CALL, PUT and
 * FORWARD in base currency, on the calibrated surface of `source` at the item's expiry, priced by
 * src/quant/vanilla.ts under the item's priceMethod (OTC = DERIBIT). Conventions: docs/conventions.md.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Markets } from '../asOf.js';
import { valueVanilla } from '../../quant/vanilla.js';
import type { Pair, Source } from '../../domain/markets.js';
import { AsOfQuery, MAX_BATCH_ITEMS, VanillaBody } from '../schemas.js';
import { expiryPoint } from '../../cache/expiryPoint.js';
import {
  assertServable,
  checkExpiry,
  checkFiniteResult,
  checkMoneyness,
  checkUniqueIds,
  DetailCollector,
  resolveInverse,
  resolvePair,
  resolvePriceMethod,
} from '../rules.js';
import { BATCH50, MARKET_POST, num, routePlugin, type LiveDocContext, type RouteDocs } from '../routeDefinition.js';

/** vanillaOptionType when absent (spec section 2): a forward, whose strike is optional. */
const DEFAULT_TYPE = 'FORWARD' as const;
/** The vanillaOptionTypes that need a strike (the route's check and the document's oneOf). */
const STRIKE_TYPES = ['CALL', 'PUT'] as const;
/** Whether a vanillaOptionType needs a strike. */
const needsStrike = (type: string): boolean => (STRIKE_TYPES as readonly string[]).includes(type);

/** Vanilla result item (spec section 2): figures in base currency per the amount. */
const VanillaResult = z.object({
  instrumentId: z.string(),
  observationTimestamp: num(),
  impliedVolatility: num().describe('Implied volatility on the option strike (the forward for a FORWARD without strike), fraction'),
  spotPrice: num(),
  forwardPrice: num(),
  valueBase: num(),
  deltaBase: num(),
  gammaBase: num(),
  vegaBase: num(),
  thetaBase: num(),
  volgaBase: num(),
  vannaBase: num(),
  deltaDecayBase: num(),
  timeValueBase: num(),
  intrinsicValueBase: num(),
  carryBase: num(),
  rhoBase: num(),
  totalThetaBase: num(),
});

/** Example batch: an at-the-money CALL, a PUT 10 % below the forward, a FORWARD, on the live example market. */
function vanillaExample(ctx: LiveDocContext): unknown {
  const m = ctx.market;
  const call = { instrumentId: 'c1', ...ctx.pair, amount: 1, vanillaOptionType: 'CALL', source: m.source, priceMethod: m.source, expirationTimestamp: m.expiry, strike: ctx.strike, volatilityModel: 'SVI' };
  return [call, { ...call, instrumentId: 'p1', vanillaOptionType: 'PUT', strike: ctx.nice(m.forward * 0.9) }, { ...call, instrumentId: 'f1', vanillaOptionType: 'FORWARD' }];
}

/** Documentation of POST vanilla: its answer, errors, live example and the per-pair and per-type rules. */
const vanillaDocs: RouteDocs = {
  response: z.array(VanillaResult),
  errors: MARKET_POST,
  live: {
    body: vanillaExample,
    constrainItem: (_item, ctx) => [
      { anyOf: ctx.pairBranches(ctx.served, { inverse: true, prices: ['strike'] }) },
      {
        oneOf: [
          { description: `${STRIKE_TYPES.join(' and ')} need a strike`, required: ['vanillaOptionType', 'strike'], properties: { vanillaOptionType: { enum: [...STRIKE_TYPES], description: STRIKE_TYPES.join(' or ') } } },
          { description: `${DEFAULT_TYPE} (also when vanillaOptionType is absent): strike optional`, properties: { vanillaOptionType: { enum: [DEFAULT_TYPE], description: `${DEFAULT_TYPE} (or absent)` } } },
        ],
      },
    ],
  },
};

/** POST vanilla over `markets` (a named fastify-plugin, `vanilla`). */
export const vanillaRoutes = (markets: Markets): FastifyPluginAsyncZod =>
  routePlugin('vanilla', async (app) => {
    app.post(
      '/api/v1/global/optionValuation/vanilla',
      {
        schema: {
          summary: `Vanilla option / forward value and Greeks in base currency (1 to ${MAX_BATCH_ITEMS} items)`,
          tags: ['valuation'],
          description: `Vanilla option and forward value and Greeks on the calibrated surface (Black-76 on the expiry's forward, r = 0). Figures are in base currency per the amount (inverse: coin; linear: quote figure / spot). Greek units: vega and vanna per 0.01 vol, volga per 0.01², theta and the other 1-day figures as V(T - 1 day) - V(T), rho per 1 % basis-rate move. ${BATCH50}`,
          body: VanillaBody,
          querystring: AsOfQuery,
          docs: vanillaDocs,
        },
      },
      async (req) => {
        const items = req.body;
        const asOf = req.query.asOf;
        const clock = markets.clockAt(asOf);
        const errs = new DetailCollector();
        checkUniqueIds(errs, items.map((it) => it.instrumentId), (i) => `[${i}].`);
        const resolved = items.map((it, i) => {
          const prefix = `[${i}].`;
          const type = it.vanillaOptionType ?? DEFAULT_TYPE;
          const r = resolvePair(errs, prefix, it.source, it.baseCurrency, it.quoteCurrency);
          checkExpiry(errs, prefix, it.expirationTimestamp, clock);
          if (needsStrike(type) && it.strike === undefined) {
            errs.add(`${prefix}strike`, `Required for ${type}`);
          }
          const inverse = r ? resolveInverse(errs, prefix, r.source, r.pair, it.inverse) : false;
          return { r, type, inverse };
        });
        errs.throwIfAny('request');

        // the market of every item (503 when not servable), then the rules that need its forward
        const cache = await markets.at(
          asOf,
          items.map((it, i) => ({ ...(resolved[i]!.r as { source: Source; pair: Pair }), model: it.volatilityModel })),
        );
        const points = items.map((it, i) => {
          const { source, pair } = resolved[i]!.r as { source: Source; pair: Pair };
          assertServable(cache, source, pair, it.volatilityModel);
          return expiryPoint(cache.getSurface(source, pair, it.volatilityModel)!, it.expirationTimestamp);
        });
        items.forEach((it, i) => {
          if (it.strike !== undefined) checkMoneyness(errs, `[${i}].strike`, it.strike, points[i]!.forward);
        });
        errs.throwIfAny('request');

        const results = items.map((it, i) => {
          const { type, inverse } = resolved[i]!;
          const p = points[i]!;
          const volStrike = it.strike ?? p.forward;
          const sigma = p.vol(volStrike);
          const v = valueVanilla({
            F: p.forward,
            S: p.spot,
            ...(it.strike !== undefined ? { K: it.strike } : {}),
            T: p.T,
            sigma,
            type,
            inverse,
            priceMethod: resolvePriceMethod(it.priceMethod),
            amount: it.amount,
          });
          const out = {
            instrumentId: it.instrumentId,
            observationTimestamp: p.observationTimestamp,
            impliedVolatility: sigma,
            spotPrice: p.spot,
            forwardPrice: p.forward,
            ...v,
          };
          checkFiniteResult(errs, `[${i}].`, out);
          return out;
        });
        errs.throwIfAny('request');
        return results;
      },
    );
  });
