/**
 * Service configuration from environment variables, validated by zod at start-up.
 *
 * A bad value stops the service with ONE clear line naming the variable (see {@link loadConfig}).
 * Defaults give the embedded simulated market with no configuration at all.
 */
import { z } from 'zod';
import { parseSourcePairs, resolveSource, SUPPORTED_PAIRS, type Source, type SourcePair } from './domain/markets.js';
import { parseStartTime } from './domain/clock.js';
import { KAFKA_CONFIG_SHAPE, kafkaConfigIssue } from './kafka/config.js';
import { SECURITY_CONFIG_SHAPE, metricsConfigIssue, securityConfigIssue } from './api/plugins/securityConfig.js';
import { STREAM_CONFIG_SHAPE } from './api/stream/config.js';
import { HISTORY_CONFIG_SHAPE } from './history/config.js';

const ALL_PAIRS_OF = (source: Source): SourcePair[] => SUPPORTED_PAIRS[source].map((pair) => ({ source, pair }));

const bool = z.stringbool();

export const ConfigSchema = z
  .object({
    /** TCP port of the REST API. */
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    /** Interface to bind (loopback by default). */
    HOST: z.string().min(1).default('127.0.0.1'),
    /** Where market data comes from: the embedded simulator, the real exchanges, or a recorded file. */
    MARKET_SOURCE: z.enum(['simulated', 'live', 'replay']).default('simulated'),
    /** JSON Lines file of recorded Deribit WebSocket messages (MARKET_SOURCE=replay). */
    REPLAY_FILE: z.string().min(1).optional(),
    /** JSON Lines file of recorded OKX v5 public WebSocket messages (MARKET_SOURCE=replay). */
    REPLAY_FILE_OKX: z.string().min(1).optional(),
    /** JSON Lines file of recorded Bybit v5 public WebSocket messages (MARKET_SOURCE=replay). */
    REPLAY_FILE_BYBIT: z.string().min(1).optional(),
    /**
     * Exchanges connected in `simulated` and `live` (comma-separated wire values or XCHG_A/B/C aliases);
     * default all three. In `replay` the REPLAY_FILE* variables decide.
     */
    SOURCES: z
      .string()
      .default('DERIBIT,OKX,BYBIT')
      .transform((v, ctx) => {
        const out: Source[] = [];
        for (const part of v.split(',').map((x) => x.trim().toUpperCase()).filter(Boolean)) {
          const s = resolveSource(part);
          if (!s) {
            ctx.addIssue({ code: 'custom', message: `unknown source ${part} (expected DERIBIT, OKX, BYBIT)` });
            return z.NEVER;
          }
          if (!out.includes(s)) out.push(s);
        }
        if (out.length === 0) {
          ctx.addIssue({ code: 'custom', message: 'must name at least one source' });
          return z.NEVER;
        }
        return out as readonly Source[];
      }),
    /**
     * Sharding: the (source, pair)s this process follows, e.g. `DERIBIT:BTC/USD,OKX:BTC/USD`; default every pair of
     * SOURCES. A calibrator subscribes only to these pairs' instruments, calibrates and publishes only these, and
     * with KAFKA_BROKERS claims them through the `calibrator-assignments` consumer group (docs/events.md
     * "Sharded calibrators"). An API replica waits in /ready for these (the union its calibrators publish).
     */
    PAIRS: z
      .string()
      .transform((v, ctx) => {
        const r = parseSourcePairs(v);
        if ('error' in r) {
          ctx.addIssue({ code: 'custom', message: r.error });
          return z.NEVER;
        }
        return r.pairs;
      })
      .optional(),
    /** Replay speed: 0 = as fast as possible, 1 = recorded speed, 10 = ten times faster. */
    REPLAY_SPEED: z.coerce.number().min(0).default(0),
    /** Data older than this many seconds is stale: REST answers 503 instead of a silent stale value. */
    STALE_AFTER_S: z.coerce.number().positive().default(30),
    /** pino log level. */
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Deribit WebSocket URL for `live` (the simulator's URL is used for `simulated`). */
    DERIBIT_WS_URL: z.string().url().default('wss://www.deribit.com/ws/api/v2'),
    /** OKX public WebSocket for `live` (decisions.md). */
    OKX_WS_URL: z.string().url().default('wss://ws.okx.com:8443/ws/v5/public'),
    /** OKX REST base for `live` (instrument and funding bootstrap). */
    OKX_REST_URL: z.string().url().default('https://www.okx.com'),
    /** Bybit public option stream for `live` (decisions.md). */
    BYBIT_OPTION_WS_URL: z.string().url().default('wss://stream.bybit.com/v5/public/option'),
    /** Bybit public linear stream for `live` (decisions.md). */
    BYBIT_LINEAR_WS_URL: z.string().url().default('wss://stream.bybit.com/v5/public/linear'),
    /** Bybit REST base for `live` (instrument and funding bootstrap). */
    BYBIT_REST_URL: z.string().url().default('https://api.bybit.com'),
    /** Minimum milliseconds between two recalibrations of one (source, pair). */
    CALIBRATION_THROTTLE_MS: z.coerce.number().int().min(0).default(250),
    /**
     * Urgency threshold, vol points: an expiry whose smile moved at least this far against the marks it was last
     * refitted to (the moves of its marks smoothed across strikes by least squares, streams/chainState.ts: one mark's
     * noise is not a move) gets an immediate partial refit, without waiting for CALIBRATION_THROTTLE_MS
     * (streams/pipeline.ts); 0 turns it off. Always off with MARKET_SOURCE=replay (a replay gives the same surfaces
     * every time; urgent refits depend on arrival timing).
     */
    CALIBRATION_URGENT_VOL_PTS: z.coerce.number().min(0).max(100).default(0.25),
    /**
     * Calibration worker threads (streams/calibrationPool.ts); 0 = one per core minus one for REST and ingest
     * (os.availableParallelism() - 1, at least 1).
     */
    CALIBRATION_WORKERS: z.coerce.number().int().min(0).max(64).default(0),
    /**
     * Simulated mode: where the simulated exchanges run. `separate` (default): in their own child process
     * (src/simulation/process.ts), so the service's CPU and memory are its own; `inprocess`: in the service's
     * process (tests reach their fault hooks through RunningService.simulator/simulators).
     */
    SIMULATOR_PROCESS: z.enum(['separate', 'inprocess']).default('separate'),
    /** Simulator: seed of the stochastic market (simulated mode). */
    SIM_SEED: z.coerce.number().int().default(42),
    /** Simulator: hours of market history pre-run at start, seeding the iVSummary 24 h changes (0 = none). */
    SIM_HISTORY_HOURS: z.coerce.number().int().min(0).max(24).default(24),
    /**
     * Simulator: the simulated market's start time, Unix seconds or ISO 8601 with a zone (e.g.
     * `2026-11-27T07:58:00Z`); unset = the wall clock. The whole service then runs on a clock that starts
     * there and advances at the real rate, so tests see the same listings and funding hours at any hour.
     * Between 2000-01-01 and 2100-01-01. Only with MARKET_SOURCE=simulated.
     */
    SIM_START_TIME: z
      .string()
      .optional()
      .transform((v, ctx) => {
        if (v === undefined) return undefined;
        const s = parseStartTime(v);
        if (s === null || s < 946_684_800 || s >= 4_102_444_800) {
          ctx.addIssue({ code: 'custom', message: 'must be Unix seconds or an ISO 8601 date-time with a zone, between 2000-01-01 and 2100-01-01' });
          return z.NEVER;
        }
        return s;
      }),
    /** SABR CEV exponent beta, fixed in every SABR fit (Hagan et al. 2002), in [0, 1]. */
    SABR_BETA: z.coerce.number().min(0).max(1).default(1),
    /** Pretty logs (default: on when stdout is a terminal). */
    LOG_PRETTY: bool.optional(),
    /** Kafka and ROLE (docs/events.md "Configuration"). */
    ...KAFKA_CONFIG_SHAPE,
    /** API keys, dashboard sessions, /metrics protection, rate limit, body/time limits, overload protection (docs/operations.md). */
    ...SECURITY_CONFIG_SHAPE,
    /** Limits of the streaming API (WebSocket /api/v1/ws, SSE /api/v1/stream; docs/streaming.md "Limits"). */
    ...STREAM_CONFIG_SHAPE,
    /** The history store (as-of answers, series; docs/operations.md "History"). */
    ...HISTORY_CONFIG_SHAPE,
  })
  .superRefine((c, ctx) => {
    if (c.MARKET_SOURCE === 'replay' && !c.REPLAY_FILE && !c.REPLAY_FILE_OKX && !c.REPLAY_FILE_BYBIT) {
      ctx.addIssue({ code: 'custom', path: ['REPLAY_FILE'], message: 'is required when MARKET_SOURCE=replay (or REPLAY_FILE_OKX / REPLAY_FILE_BYBIT)' });
    }
    if (c.SIM_START_TIME !== undefined && c.MARKET_SOURCE !== 'simulated') {
      ctx.addIssue({ code: 'custom', path: ['SIM_START_TIME'], message: 'applies only to MARKET_SOURCE=simulated' });
    }
    if (c.PAIRS) {
      const outside = c.PAIRS.filter((p) => !c.SOURCES.includes(p.source));
      if (outside.length > 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['PAIRS'],
          message: `names ${outside.map((p) => `${p.source}:${p.pair.base}/${p.pair.quote}`).join(', ')} but SOURCES is ${c.SOURCES.join(',')} (add the source to SOURCES or drop the pair)`,
        });
      }
      if (c.MARKET_SOURCE === 'replay') ctx.addIssue({ code: 'custom', path: ['PAIRS'], message: 'is not supported with MARKET_SOURCE=replay (the recording decides the pairs)' });
    }
    if (c.HISTORY_RETENTION_D * 24 < c.HISTORY_FULL_H) {
      ctx.addIssue({ code: 'custom', path: ['HISTORY_RETENTION_D'], message: `must keep at least HISTORY_FULL_H (${c.HISTORY_FULL_H} h)` });
    }
    const kafkaIssue = kafkaConfigIssue(c);
    if (kafkaIssue) ctx.addIssue({ code: 'custom', path: [kafkaIssue.path], message: kafkaIssue.message });
    const securityIssue = securityConfigIssue(c);
    if (securityIssue) ctx.addIssue({ code: 'custom', path: [securityIssue.path], message: securityIssue.message });
    const metricsIssue = metricsConfigIssue(c);
    if (metricsIssue) ctx.addIssue({ code: 'custom', path: [metricsIssue.path], message: metricsIssue.message });
  });

/**
 * The (source, pair)s a process follows: PAIRS when set, else every supported pair of SOURCES.
 */
export function followedPairs(c: Pick<Config, 'PAIRS' | 'SOURCES'>): SourcePair[] {
  if (c.PAIRS) return [...c.PAIRS];
  return c.SOURCES.flatMap((source) => ALL_PAIRS_OF(source));
}

/** The sources a process connects: those of {@link followedPairs}, in SOURCES order. */
export function followedSources(c: Pick<Config, 'PAIRS' | 'SOURCES'>): Source[] {
  const pairs = followedPairs(c);
  return c.SOURCES.filter((s) => pairs.some((p) => p.source === s));
}

/** Variables whose values are secrets: never echoed in a configuration error. */
const SECRET_VARIABLES = new Set(['API_KEYS', 'METRICS_KEY']);

/** The validated configuration. */
export type Config = z.infer<typeof ConfigSchema>;

/** Thrown by {@link loadConfig} with a one-line message naming the bad variable(s). */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parse and validate the configuration from `env` (default process.env).
 * Empty strings count as unset.
 * @throws ConfigError with one line such as `invalid configuration: PORT: Too big: expected number to be <=65535 (got "70000")`.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const keys = Object.keys(ConfigSchema.shape);
  const picked: Record<string, string> = {};
  for (const k of keys) {
    const v = env[k];
    if (v !== undefined && v !== '') picked[k] = v;
  }
  const r = ConfigSchema.safeParse(picked);
  if (!r.success) {
    const parts = r.error.issues.map((i) => {
      const key = String(i.path[0] ?? '');
      // secrets (API keys) are never echoed
      const got = key in picked && !SECRET_VARIABLES.has(key) ? ` (got ${JSON.stringify(picked[key])})` : '';
      return `${key}: ${i.message}${got}`;
    });
    throw new ConfigError(`invalid configuration: ${parts.join('; ')}`);
  }
  return r.data;
}
