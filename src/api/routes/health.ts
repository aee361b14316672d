/**
 * GET /health (the process is alive) and GET /ready (200 once every configured (source, pair)
 * has a calibrated SVI surface that can be served; 503 before, listing what is missing). While the cache is held
 * (`MarketCache.setHold`: an API replica still reading its Kafka topics up to the end offsets it saw at start, a
 * sharded calibrator that does not know its pairs yet) /ready is 503 with the hold's status and message.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { MarketCache } from '../../cache/marketCache.js';

export const healthRoutes =
  (cache: MarketCache): FastifyPluginAsyncZod =>
  async (app) => {
    app.get('/health', { schema: { summary: 'Liveness' } }, async () => ({ status: 'ok' }));

    app.get('/ready', { schema: { summary: 'Readiness: every configured pair has a calibrated surface' } }, async (_req, reply) => {
      const expected = cache.expected();
      const missing = cache.missing('SVI').map((p) => `${p.source}:${p.pair.base}/${p.pair.quote}`);
      const pairs = expected.map((p) => {
        const s = cache.getSurface(p.source, p.pair, 'SVI');
        const u = cache.unavailable(p.source, p.pair, 'SVI');
        return {
          source: p.source,
          pair: `${p.pair.base}/${p.pair.quote}`,
          calibrated: s !== undefined,
          observationTimestamp: s?.observationTimestamp ?? null,
          expiries: s?.slices.length ?? 0,
          status: u ? u.reason : 'ok',
        };
      });
      const held = cache.held();
      const ready = !held && expected.length > 0 && missing.length === 0;
      reply.status(ready ? 200 : 503);
      return { status: held ? held.status : ready ? 'ready' : 'warming-up', ...(held ? { message: held.message } : {}), missing, pairs };
    });
  };
