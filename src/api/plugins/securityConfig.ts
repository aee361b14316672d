/**
 * Security and protection settings of the service configuration (spread into src/config.ts's
 * ConfigSchema like the Kafka shape; documented in docs/operations.md "Configuration"):
 * API keys (env list or file), rate limit, body size limit, request timeout and overload
 * protection. Values come from the environment as strings; zod coerces and validates them.
 *
 * Defaults keep the embedded start (`npm start`, nothing configured) open on loopback: no keys,
 * a per-IP rate limit generous enough for a desk, 1 MiB bodies (docs/spec/decisions.md).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { SecurityOptions } from './security.js';
import { DEFAULT_SESSION_TTL_S } from './sessions.js';

/** Shortest API key accepted, characters (a key shorter than this is guessable). */
export const MIN_API_KEY_LENGTH = 16;

/** Longest dashboard session accepted, s (30 days). */
export const MAX_SESSION_TTL_S = 30 * 86400;

/** Zod shape of the security variables. */
export const SECURITY_CONFIG_SHAPE = {
  /** Comma list of API keys; when set (or API_KEYS_FILE), every /api route needs header `X-API-Key`. */
  API_KEYS: z.string().optional(),
  /** File with one API key per line (blank lines and lines starting with `#` ignored); merged with API_KEYS. */
  API_KEYS_FILE: z.string().min(1).optional(),
  /** Requests per RATE_LIMIT_WINDOW_MS allowed per API key (per client IP without keys); 0 disables. */
  RATE_LIMIT_MAX: z.coerce.number().int().min(0).default(3000),
  /** Rate-limit window, ms. */
  RATE_LIMIT_WINDOW_MS: z.coerce.number().int().min(1).default(60_000),
  /** Largest accepted request body, bytes (413 above it). */
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  /** A request not received completely (headers and body) within this many ms is answered 408; 0 disables. */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
  /** Overload protection: answer 503 while the mean event-loop delay exceeds this, ms; 0 disables. */
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: z.coerce.number().min(0).default(1000),
  /** Overload protection: answer 503 while event-loop utilization exceeds this fraction (0..1); 0 disables. */
  OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: z.coerce.number().min(0).max(1).default(0),
  /** Lifetime of a dashboard login (session cookie) with keys, s: 60 s to 30 days; default 12 h. */
  DASHBOARD_SESSION_TTL_S: z.coerce.number().int().min(60).max(MAX_SESSION_TTL_S).default(DEFAULT_SESSION_TTL_S),
  /** The scraper's key: when set, GET /metrics needs `Authorization: Bearer <METRICS_KEY>` (and only that). */
  METRICS_KEY: z.string().optional(),
  /** File holding METRICS_KEY (first non-comment line; Prometheus-style credentials file); exclusive with METRICS_KEY. */
  METRICS_KEY_FILE: z.string().min(1).optional(),
  /** When set, /metrics is served on this port only (its own listener, METRICS_HOST), not on PORT; 0 = any free port. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Interface of the metrics listener (needs METRICS_PORT). Default 127.0.0.1. */
  METRICS_HOST: z.string().min(1).optional(),
};

/** The parsed security settings (a subset of Config). */
export interface SecurityConfig {
  readonly API_KEYS?: string | undefined;
  readonly API_KEYS_FILE?: string | undefined;
  readonly RATE_LIMIT_MAX: number;
  readonly RATE_LIMIT_WINDOW_MS: number;
  readonly BODY_LIMIT_BYTES: number;
  readonly REQUEST_TIMEOUT_MS: number;
  readonly OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: number;
  readonly OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: number;
  readonly DASHBOARD_SESSION_TTL_S: number;
  readonly METRICS_KEY?: string | undefined;
  readonly METRICS_KEY_FILE?: string | undefined;
  readonly METRICS_PORT?: number | undefined;
  readonly METRICS_HOST?: string | undefined;
}

/** Keys of a comma list (trimmed, blanks dropped). */
export function parseKeyList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Keys of a key file's text: one per line, trimmed; blank lines and `#` comments ignored. */
export function parseKeyFile(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0 && !s.startsWith('#'));
}

/**
 * Every configured API key (API_KEYS then API_KEYS_FILE), deduplicated; empty = no authentication.
 * @throws Error (message without any key) when API_KEYS_FILE cannot be read.
 */
export function apiKeysFromConfig(c: Pick<SecurityConfig, 'API_KEYS' | 'API_KEYS_FILE'>): string[] {
  const keys = parseKeyList(c.API_KEYS);
  if (c.API_KEYS_FILE) keys.push(...parseKeyFile(readFileSync(c.API_KEYS_FILE, 'utf8')));
  return [...new Set(keys)];
}

/**
 * Cross-field check for ConfigSchema.superRefine: the key file is readable and holds keys, every
 * key is at least {@link MIN_API_KEY_LENGTH} characters of visible ASCII. The message never
 * contains a key. Returns null when fine.
 */
export function securityConfigIssue(c: Pick<SecurityConfig, 'API_KEYS' | 'API_KEYS_FILE'>): { path: string; message: string } | null {
  let fromFile: string[] = [];
  if (c.API_KEYS_FILE) {
    try {
      fromFile = parseKeyFile(readFileSync(c.API_KEYS_FILE, 'utf8'));
    } catch (err) {
      return { path: 'API_KEYS_FILE', message: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
    }
    if (fromFile.length === 0) return { path: 'API_KEYS_FILE', message: 'holds no key' };
  }
  for (const [path, list] of [
    ['API_KEYS', parseKeyList(c.API_KEYS)],
    ['API_KEYS_FILE', fromFile],
  ] as const) {
    const i = list.findIndex((k) => k.length < MIN_API_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(k));
    if (i >= 0) return { path, message: `key #${i + 1} must be at least ${MIN_API_KEY_LENGTH} visible ASCII characters` };
  }
  return null;
}

/** Default interface of the metrics listener. */
export const DEFAULT_METRICS_HOST = '127.0.0.1';

/**
 * The scraper's key: METRICS_KEY, or the first line of METRICS_KEY_FILE that is neither blank nor a `#`
 * comment; undefined when neither is set.
 * @throws Error (message without the key) when METRICS_KEY_FILE cannot be read.
 */
export function metricsKeyFromConfig(c: Pick<SecurityConfig, 'METRICS_KEY' | 'METRICS_KEY_FILE'>): string | undefined {
  if (c.METRICS_KEY !== undefined) return c.METRICS_KEY.trim();
  if (c.METRICS_KEY_FILE) return parseKeyFile(readFileSync(c.METRICS_KEY_FILE, 'utf8'))[0];
  return undefined;
}

/**
 * Cross-field check of the metrics settings for ConfigSchema.superRefine: METRICS_KEY and METRICS_KEY_FILE
 * not both, the key at least {@link MIN_API_KEY_LENGTH} visible ASCII characters and not one of the API keys
 * (the scraper's credential would then open the API), the file readable; METRICS_HOST only with
 * METRICS_PORT; METRICS_PORT not PORT. The message never contains a key. Null when fine.
 */
export function metricsConfigIssue(c: Pick<SecurityConfig, 'API_KEYS' | 'API_KEYS_FILE' | 'METRICS_KEY' | 'METRICS_KEY_FILE' | 'METRICS_PORT' | 'METRICS_HOST'> & { PORT?: number }): { path: string; message: string } | null {
  if (c.METRICS_KEY !== undefined && c.METRICS_KEY_FILE) return { path: 'METRICS_KEY_FILE', message: 'set METRICS_KEY or METRICS_KEY_FILE, not both' };
  let key: string | undefined;
  try {
    key = metricsKeyFromConfig(c);
  } catch (err) {
    return { path: 'METRICS_KEY_FILE', message: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  const keyPath = c.METRICS_KEY_FILE ? 'METRICS_KEY_FILE' : 'METRICS_KEY';
  if (c.METRICS_KEY_FILE && key === undefined) return { path: keyPath, message: 'holds no key' };
  if (key !== undefined) {
    if (key.length < MIN_API_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) return { path: keyPath, message: `must be at least ${MIN_API_KEY_LENGTH} visible ASCII characters` };
    let apiKeys: string[] = [];
    try {
      apiKeys = apiKeysFromConfig(c);
    } catch {
      /* reported by securityConfigIssue */
    }
    if (apiKeys.includes(key)) return { path: keyPath, message: 'must differ from every API key (the scraper would otherwise hold an API key)' };
  }
  if (c.METRICS_HOST !== undefined && c.METRICS_PORT === undefined) return { path: 'METRICS_HOST', message: 'needs METRICS_PORT (the metrics listener is off without it)' };
  if (c.METRICS_PORT !== undefined && c.METRICS_PORT !== 0 && c.PORT !== undefined && c.METRICS_PORT === c.PORT) {
    return { path: 'METRICS_PORT', message: `must differ from PORT (${c.PORT}); 0 picks a free port` };
  }
  return null;
}

/** The options of the security plugin from the configuration (reads API_KEYS_FILE). */
export function securityOptionsFromConfig(c: SecurityConfig): SecurityOptions {
  return {
    apiKeys: apiKeysFromConfig(c),
    sessionTtlS: c.DASHBOARD_SESSION_TTL_S,
    rateLimit: c.RATE_LIMIT_MAX > 0 ? { max: c.RATE_LIMIT_MAX, timeWindowMs: c.RATE_LIMIT_WINDOW_MS } : false,
    overload:
      c.OVERLOAD_MAX_EVENT_LOOP_DELAY_MS > 0 || c.OVERLOAD_MAX_EVENT_LOOP_UTILIZATION > 0
        ? { maxEventLoopDelayMs: c.OVERLOAD_MAX_EVENT_LOOP_DELAY_MS, maxEventLoopUtilization: c.OVERLOAD_MAX_EVENT_LOOP_UTILIZATION }
        : false,
  };
}
