/**
 * The HTTP app of ROLE=calibrator (docs/events.md "API replicas"): `/health` and `/ready` only, with the same
 * handlers and error shape as the full API (src/api/app.ts).
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { MarketCache } from '../cache/marketCache.js';
import { installErrorHandling } from './errors.js';
import { healthRoutes } from './routes/health.js';

/** Build (not listen) the health-only app over `cache`; `logger` false or absent = no request logs. */
export async function buildHealthApp(cache: MarketCache, logger?: FastifyServerOptions['loggerInstance'] | false): Promise<FastifyInstance> {
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    requestTimeout: 10_000,
    return503OnClosing: true,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandling(app);
  await app.register(healthRoutes(cache));
  return app;
}
