/**
 * POST /api/v1/global/data/iV/byStrike and /byDelta (spec sections 3 and 4).
 *
 * byStrike: the surface's vol at (expiry, strike). byDelta: the strike whose plain forward Black
 * CALL delta N(d1) equals the target, solved on the smile (decisions.md), then the vol there.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Markets } from '../asOf.js';
import { strikeFromDelta } from '../../quant/strikeFromDelta.js';
import { ApiError } from '../errors.js';
import { expiryPoint } from '../../cache/expiryPoint.js';
import { AsOfQuery, ByDeltaBody, ByStrikeBody } from '../schemas.js';
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

export const ivRoutes =
  (markets: Markets): FastifyPluginAsyncZod =>
  async (app) => {
    app.post(
      '/api/v1/global/data/iV/byStrike',
      { schema: { summary: 'Implied volatility at a target strike (1 to 50 items)', body: ByStrikeBody, querystring: AsOfQuery } },
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
      { schema: { summary: 'Implied volatility at a target (forward Black call) delta (1 to 50 items)', body: ByDeltaBody, querystring: AsOfQuery } },
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
  };
