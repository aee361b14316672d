/**
 * pino logger: JSON lines in production, pretty lines in a terminal (pino-pretty, when installed).
 */
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';

/** Create the service logger. `pretty` defaults to stdout being a TTY. */
export function createLogger(level: string, pretty = Boolean(process.stdout.isTTY)): Logger {
  if (pretty && canResolve('pino-pretty')) {
    return pino({ level, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } });
  }
  return pino({ level });
}

function canResolve(name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(name);
    return true;
  } catch {
    return false;
  }
}
