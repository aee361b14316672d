/**
 * The one logger interface of the code base: structured, pino-compatible (`logger.warn({ ...fields }, 'message')`).
 * The service passes pino loggers (src/logger.ts); tests pass fakes or {@link silentLogger}. Modules that need
 * less name a `Pick` of it.
 */
export interface Logger {
  debug(obj: Record<string, unknown>, msg: string): void;
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}

/** A {@link Logger} with pino's `child(bindings)`. */
export interface ChildLogger extends Logger {
  child(bindings: Record<string, unknown>): Logger;
}

/** A logger that discards everything. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
