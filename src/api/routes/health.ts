/**
 * GET /health (the process is alive) and GET /ready (200 once every configured (source, pair)
 * has a calibrated SVI surface that can be served; 503 before, listing what is missing). While the cache is held
 * (`MarketCache.setHold`: an API replica still reading its Kafka topics up to the end offsets it saw at start, a
 * sharded calibrator that does not know its pairs yet) /ready is 503 with the hold's status and message.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { MarketCache } from '../../cache/marketCache.js';
import { num, numOrNull, routePlugin } from '../routeDefinition.js';

/** GET /health answer. */
const HealthResult = z.object({ status: z.literal('ok') });

/** GET /ready answer (200 and 503 alike). */
const ReadyResult = z.object({
  status: z.enum(['ready', 'warming-up', 'catching-up', 'assigning-pairs', 'standby']).describe('catching-up: an API replica still reading its Kafka topics up to the end offsets it saw at start; assigning-pairs: a sharded calibrator waiting for its pair assignment; standby: a sharded calibrator whose PAIRS are all owned by other calibrators'),
  message: z.string().optional().describe('Why the process holds every answer (catching-up, assigning-pairs, standby)'),
  missing: z.array(z.string()),
  pairs: z.array(
    z.object({
      source: z.string(),
      pair: z.string(),
      calibrated: z.boolean(),
      observationTimestamp: numOrNull(),
      expiries: num(),
      status: z.enum(['ok', 'not-connected', 'warming-up', 'stale']),
    }),
  ),
});

/** The health routes over `cache` (a named fastify-plugin, `health`). */
export const healthRoutes = (cache: MarketCache): FastifyPluginAsyncZod =>
  routePlugin('health', async (app) => {
    app.get(
      '/health',
      { schema: { summary: 'Liveness', tags: ['health'], description: 'The process is alive (always 200).', docs: { response: HealthResult, errors: [] } } },
      async () => ({ status: 'ok' }),
    );

    const readyDocs = {
      summary: 'Readiness: every configured pair has a calibrated surface',
      tags: ['health'],
      description:
        '200 once every configured (source, pair) has a calibrated SVI surface (an API replica: also once it has read its Kafka topics up to the end offsets it saw at start); 503 before, listing what is missing (same body).',
      docs: { response: ReadyResult, errors: [503] },
    };
    app.get('/ready', { schema: readyDocs }, async (_req, reply) => {
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
  });
