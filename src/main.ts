/**
 * Entry point: `npm start`. Reads the configuration from the environment (a bad value stops with
 * one clear line), starts the service, logs where it listens, and shuts down gracefully on
 * SIGINT/SIGTERM.
 */
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { startService } from './service.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.LOG_LEVEL, config.LOG_PRETTY);
  logger.info({ marketSource: config.MARKET_SOURCE, port: config.PORT, host: config.HOST }, 'starting vol-surface service');
  const svc = await startService(config, logger);
  // a wildcard bind address is not a URL one can open: show localhost instead
  const shown = svc.url.replace('//0.0.0.0:', '//localhost:').replace('//[::]:', '//localhost:');
  const dashboard = config.ROLE === 'calibrator' ? null : `${shown}/`;
  const metrics = `${(svc.metricsUrl ?? shown).replace('//0.0.0.0:', '//localhost:').replace('//[::]:', '//localhost:')}/metrics`;
  const links = dashboard ? `dashboard ${dashboard}, API docs ${shown}/docs, metrics ${metrics}` : `metrics ${metrics}`;
  logger.info({ url: shown, dashboard, metrics }, `HTTP listening at ${shown} (${links}; readiness ${shown}/ready)`);

  const readyTimer = setInterval(() => {
    if (!svc.cache.held() && svc.cache.expected().length > 0 && svc.cache.missing().length === 0) {
      clearInterval(readyTimer);
      logger.info(
        { url: shown, dashboard },
        dashboard
          ? `ready: every configured pair has a calibrated surface. Live dashboard: ${dashboard} (API docs ${shown}/docs)`
          : `ready: every configured pair has a calibrated surface (metrics ${metrics})`,
      );
    }
  }, 250);
  readyTimer.unref();

  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    svc.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err) => {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  // a port that cannot be bound is a configuration problem: one clear line, like a bad setting
  if (e?.syscall === 'listen' && (e.code === 'EADDRINUSE' || e.code === 'EACCES' || e.code === 'EADDRNOTAVAIL')) {
    const what = e.code === 'EADDRINUSE' ? 'already in use' : e.code === 'EACCES' ? 'not permitted' : 'not an address of this machine';
    process.stderr.write(`cannot listen on ${e.address ?? '?'}:${e.port ?? '?'}: ${what} (${e.code}); choose another PORT/HOST (or METRICS_PORT/METRICS_HOST)\n`);
    process.exit(2);
  }
  process.stderr.write(`fatal: ${e?.stack ?? String(err)}\n`);
  process.exit(1);
});
