/**
 * pino logger: JSON lines in production, pretty lines in a terminal (pino-pretty, when installed).
 */
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';

/** Request/response headers that carry a credential: API key, bearer token (METRICS_KEY), session cookie. */
const SECRET_HEADERS = ['x-api-key', 'authorization', 'cookie', 'set-cookie'];

/**
 * Never logged: the credential headers wherever a request's or response's headers are logged, and the
 * secret settings (pino redact paths, https://getpino.io/#/docs/redaction).
 * Source: issue 8 "keys never logged", issue 14 (metrics key, dashboard session).
 */
export const LOG_REDACT = {
  paths: [
    ...SECRET_HEADERS.flatMap((h) => [`req.headers["${h}"]`, `request.headers["${h}"]`, `res.headers["${h}"]`, `headers["${h}"]`, `*.headers["${h}"]`]),
    'config.API_KEYS',
    'API_KEYS',
    'config.METRICS_KEY',
    'METRICS_KEY',
  ],
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
