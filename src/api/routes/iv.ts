/**
 * POST /api/v1/global/data/iV/byStrike and /byDelta (spec sections 3 and 4).
 *
 * byStrike: the surface's vol at (expiry, strike). byDelta: the strike whose plain forward Black
 * CALL delta N(d1) equals the target, solved on the smile (decisions.md), then the vol there.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Markets } from '../asOf.js';
import { strikeFromDelta } from '../../quant/strikeFromDelta.js';
import { ApiError } from '../errors.js';
import { expiryPoint } from '../../cache/expiryPoint.js';
import { AsOfQuery, ByDeltaBody, ByStrikeBody, MAX_BATCH_ITEMS } from '../schemas.js';
import {
  assertServable,
  checkExpiry,
  checkFiniteResult,
  checkMoneyness,
  checkUniqueIds,
  DetailCollector,
  resolvePair,
} from '../rules.js';
import type { Pair, Source } from '../../domain/markets.js';
import type { VolatilityModel } from '../../cache/snapshot.js';
import { MIN_T_YEARS } from '../../cache/expiryPoint.js';
import { BATCH50, MARKET_POST, num, routePlugin, type LiveDocContext, type RouteDocs } from '../routeDefinition.js';

/** byStrike result item. */
const ByStrikeResult = z.object({
  instrumentId: z.string(),
  observationTimestamp: num(),
  impliedVolatility: num().describe('Implied volatility at the target strike, fraction'),
  spotPrice: num(),
  forwardPrice: num(),
});

/** byDelta result item (echoes the item's pair, source and model). */
const ByDeltaResult = z.object({
  instrumentId: z.string(),
  baseCurrency: z.string(),
  quoteCurrency: z.string(),
  source: z.string(),
  volatilityModel: z.string().describe('The requested volatility model'),
  observationTimestamp: num(),
  impliedVolatility: num().describe('Implied volatility at the strike whose forward Black call delta equals the target, fraction'),
  spotPrice: num(),
  forwardPrice: num(),
});

/** The fields of an example item on the live example market's expiry. */
const exampleItem = (ctx: LiveDocContext) => ({ ...ctx.pair, source: ctx.market.source, volatilityModel: 'SVI', expirationTimestamp: ctx.market.expiry });

/** Documentation of POST byStrike: example at the money; a branch per served pair with its strike range. */
const byStrikeDocs: RouteDocs = {
  response: z.array(ByStrikeResult),
  errors: MARKET_POST,
  live: {
    body: (ctx) => [{ instrumentId: 'k1', ...exampleItem(ctx), strike: ctx.strike }],
    constrainItem: (_item, ctx) => [{ anyOf: ctx.pairBranches(ctx.served, { prices: ['strike'] }) }],
  },
};

/** Documentation of POST byDelta: examples at the 25-delta call and put strikes; a branch per served pair. */
const byDeltaDocs: RouteDocs = {
  response: z.array(ByDeltaResult),
  errors: MARKET_POST,
  live: {
    body: (ctx) => [
      { instrumentId: 'd25c', ...exampleItem(ctx), delta: 0.25 },
      { instrumentId: 'd25p', ...exampleItem(ctx), delta: 0.75 },
    ],
    constrainItem: (_item, ctx) => [{ anyOf: ctx.pairBranches(ctx.served, { prices: [] }) }],
  },
};

interface IvItemBase {
  instrumentId: string;
  baseCurrency: Pair['base'];
  quoteCurrency: Pair['quote'];
  source: string;
  volatilityModel: VolatilityModel;
  expirationTimestamp: number;
}

/**
 * Validate every item (400 naming all bad items), then check each pair is servable (503), live or as of `asOf`
 * (src/api/asOf.ts: 400 / 404).
 */
export async function resolveIvItems<T extends IvItemBase>(markets: Markets, asOf: number | undefined, items: readonly T[]) {
  const clock = markets.clockAt(asOf);
  const errs = new DetailCollector();
  checkUniqueIds(errs, items.map((it) => it.instrumentId as string), (i) => `[${i}].`);
  const resolved = items.map((it, i) => {
    const prefix = `[${i}].`;
    const r = resolvePair(errs, prefix, it.source, it.baseCurrency, it.quoteCurrency);
    checkExpiry(errs, prefix, it.expirationTimestamp, clock);
    return r;
  });
  errs.throwIfAny('request');
  const cache = await markets.at(
    asOf,
    resolved.map((r, i) => ({ ...(r as { source: Source; pair: Pair }), model: items[i]!.volatilityModel })),
  );
  return resolved.map((r, i) => {
    const { source, pair } = r as { source: Source; pair: Pair };
    const model = items[i]!.volatilityModel;
    assertServable(cache, source, pair, model);
    const snap = cache.getSurface(source, pair, model)!;
    return { source, pair, snap, point: expiryPoint(snap, items[i]!.expirationTimestamp) };
  });
}

/** The route schema of POST iV/byStrike: summary, tags, description, request, documentation. */
const byStrikeSchema = {
  summary: `Implied volatility at a target strike (1 to ${MAX_BATCH_ITEMS} items)`,
  tags: ['implied volatility'],
  description: `Implied volatility of the calibrated surface at (expiry, strike); between listed expiries the surface is interpolated linearly in total variance. ${BATCH50}`,
  body: ByStrikeBody,
  querystring: AsOfQuery,
  docs: byStrikeDocs,
};

/** The route schema of POST iV/byDelta: summary, tags, description, request, documentation. */
const byDeltaSchema = {
  summary: `Implied volatility at a target (forward Black call) delta (1 to ${MAX_BATCH_ITEMS} items)`,
  tags: ['implied volatility'],
  description: `Implied volatility at the strike whose plain forward Black-76 CALL delta N(d1) equals the target (solved on the smile, no premium adjustment; 0.75 is the 25-delta put strike). ${BATCH50}`,
  body: ByDeltaBody,
  querystring: AsOfQuery,
  docs: byDeltaDocs,
};

/** POST iV/byStrike and iV/byDelta over `markets` (a named fastify-plugin, `iv`). */
export const ivRoutes = (markets: Markets): FastifyPluginAsyncZod =>
  routePlugin('iv', async (app) => {
    app.post(
      '/api/v1/global/data/iV/byStrike',
      { schema: byStrikeSchema },
      async (req) => {
        const items = req.body;
        const resolved = await resolveIvItems(markets, req.query.asOf, items);
        const errs = new DetailCollector();
        items.forEach((it, i) => checkMoneyness(errs, `[${i}].strike`, it.strike, resolved[i]!.point.forward));
        errs.throwIfAny('request');
        const results = items.map((it, i) => {
          const { point } = resolved[i]!;
          const out = {
            instrumentId: it.instrumentId,
            observationTimestamp: point.observationTimestamp,
            impliedVolatility: point.vol(it.strike),
            spotPrice: point.spot,
            forwardPrice: point.forward,
          };
          checkFiniteResult(errs, `[${i}].`, out);
          return out;
        });
        errs.throwIfAny('request');
        return results;
      },
    );

    app.post(
      '/api/v1/global/data/iV/byDelta',
      { schema: byDeltaSchema },
      async (req) => {
        const items = req.body;
        const resolved = await resolveIvItems(markets, req.query.asOf, items);
        const errs = new DetailCollector();
        const results = items.map((it, i) => {
          const { point } = resolved[i]!;
          let strike: number;
          try {
            strike = strikeFromDelta(it.delta, point.forward, Math.max(point.T, MIN_T_YEARS), point.vol);
          } catch (err) {
            throw new ApiError(400, `no strike has call delta ${it.delta} on the ${it.volatilityModel} smile of that expiry: ${(err as Error).message}`, [
              { path: `[${i}].delta`, message: 'No strike has this delta on the smile' },
            ]);
          }
          const out = {
            instrumentId: it.instrumentId,
            baseCurrency: it.baseCurrency,
            quoteCurrency: it.quoteCurrency,
            source: it.source,
            volatilityModel: it.volatilityModel,
            observationTimestamp: point.observationTimestamp,
            impliedVolatility: point.vol(strike),
            spotPrice: point.spot,
            forwardPrice: point.forward,
          };
          checkFiniteResult(errs, `[${i}].`, out);
          return out;
        });
        errs.throwIfAny('request');
        return results;
      },
    );
  });
