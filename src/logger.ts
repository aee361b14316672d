/**
 * pino logger: JSON lines in production, pretty lines in a terminal (pino-pretty, when installed).
 */
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';

/**
 * Never logged: the API key header wherever a request's headers are logged (pino redact paths,
 * https://getpino.io/#/docs/redaction). Source: issue 8 "keys never logged".
 */
export const LOG_REDACT = {
  paths: ['req.headers["x-api-key"]', 'request.headers["x-api-key"]', 'headers["x-api-key"]', '*.headers["x-api-key"]', 'config.API_KEYS', 'API_KEYS'],
  censor: '[redacted]',
};

/** Create the service logger. `pretty` defaults to stdout being a TTY. */
export function createLogger(level: string, pretty = Boolean(process.stdout.isTTY)): Logger {
  if (pretty && canResolve('pino-pretty')) {
    return pino({ level, redact: LOG_REDACT, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true } } });
  }
  return pino({ level, redact: LOG_REDACT });
}

function canResolve(name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(name);
    return true;
  } catch {
    return false;
  }
}
