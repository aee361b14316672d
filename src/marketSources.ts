/**
 * The OKX and Bybit side of the service composition (src/service.ts keeps Deribit's): which pairs are
 * expected, the simulated OKX and Bybit exchanges and their feeds, the live feeds, and the per-exchange
 * replay feeds. Source: docs/spec/decisions.md "Market data sources" (live URLs; `simulated` = one
 * local server per exchange speaking its real protocol, the same adapter code as live; `replay` = recorded
 * messages through the same normalizers).
 */
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Clock, MarketClock } from './domain/clock.js';
import { SUPPORTED_PAIRS, type Pair, type Source } from './domain/markets.js';
import type { MarketFeed } from './domain/feeds.js';
import { OkxFeed, type OkxFeedOptions } from '../adapters/okx/feed.js';
import { BybitFeed, type BybitFeedOptions } from '../adapters/bybit/feed.js';
import { exchangeReplayFeed } from '../adapters/replay/exchanges.js';
import type { ReplayFeed } from '../adapters/replay/replayFeed.js';
import type { Market } from '../adapters/simulator/market.js';
import { startOkxSimulator, type OkxSimulator, type OkxSimulatorOptions } from '../adapters/simulator/okxServer.js';
import { startBybitSimulator, type BybitSimulator, type BybitSimulatorOptions } from '../adapters/simulator/bybitServer.js';

/** Test and embedding overrides of the OKX and Bybit parts. */
export interface OkxBybitOverrides {
  /** OKX feed options merged over the defaults. */
  readonly okx?: Partial<OkxFeedOptions>;
  /** Bybit feed options merged over the defaults. */
  readonly bybit?: Partial<BybitFeedOptions>;
  /** OKX simulator options merged over the defaults. */
  readonly okxSimulator?: Partial<OkxSimulatorOptions>;
  /** Bybit simulator options merged over the defaults. */
  readonly bybitSimulator?: Partial<BybitSimulatorOptions>;
}

/** Every (source, pair) of the spec's table for the given sources (what /ready waits for). */
export function expectedPairs(sources: readonly Source[]): Array<{ source: Source; pair: Pair }> {
  return sources.flatMap((source) => SUPPORTED_PAIRS[source].map((pair) => ({ source, pair })));
}

/** The running simulated OKX and Bybit exchanges (null when not configured) and their feeds. */
export interface SimulatedOkxBybit {
  readonly okx: OkxSimulator | null;
  readonly bybit: BybitSimulator | null;
  readonly feeds: MarketFeed[];
  /** Close both simulators (the feeds are stopped by the service). */
  close(): Promise<void>;
}

/**
 * Start the simulated OKX and Bybit exchanges of `sources` on 127.0.0.1 and their feeds.
 * @param market the shared market (the Deribit simulator's), or undefined to give OKX its own
 * @param marketStepped true when another simulator (Deribit's) already steps `market` every tick;
 *   otherwise the first of OKX/Bybit started steps it and the other shares it
 * @param simulatedDefaults simulator options applied before the overrides (e.g. update rates)
 */
export async function startSimulatedOkxBybit(
  sources: readonly Source[],
  market: Market | undefined,
  marketStepped: boolean,
  opts: { readonly seed: number; readonly clock: Clock; readonly logger: Logger; readonly overrides?: OkxBybitOverrides },
): Promise<SimulatedOkxBybit> {
  const ov = opts.overrides ?? {};
  /** The simulators' clock (Unix ms) is the service's clock: one timeline for market and service. */
  const simClockMs = (): number => opts.clock.now() * 1000;
  let shared = market;
  let stepped = marketStepped;
  let okx: OkxSimulator | null = null;
  let bybit: BybitSimulator | null = null;
  const feeds: MarketFeed[] = [];
  if (sources.includes('OKX')) {
    okx = await startOkxSimulator({ host: '127.0.0.1', seed: opts.seed, ...(shared ? { market: shared } : { clock: simClockMs }), stepMarket: !stepped, optionUpdatesPerSecond: 0.5, ...ov.okxSimulator });
    shared = okx.market;
    stepped = true;
    opts.logger.info({ url: okx.url, rest: okx.restUrl }, 'simulated OKX exchange listening');
    feeds.push(new OkxFeed({ url: okx.url, baseUrl: okx.restUrl, logger: opts.logger, clock: opts.clock, ...ov.okx }));
  }
  if (sources.includes('BYBIT')) {
    bybit = await startBybitSimulator({ host: '127.0.0.1', seed: opts.seed, ...(shared ? { market: shared } : { clock: simClockMs }), stepMarket: !stepped, optionUpdatesPerSecond: 0.5, ...ov.bybitSimulator });
    opts.logger.info({ option: bybit.optionUrl, linear: bybit.linearUrl, rest: bybit.restUrl }, 'simulated Bybit exchange listening');
    feeds.push(
      new BybitFeed({ optionUrl: bybit.optionUrl, linearUrl: bybit.linearUrl, baseUrl: bybit.restUrl, logger: opts.logger, clock: opts.clock, ...ov.bybit }),
    );
  }
  return {
    okx,
    bybit,
    feeds,
    close: async () => {
      await Promise.all([okx?.close(), bybit?.close()]);
    },
  };
}

/** Live OKX and Bybit feeds of `sources` on the configured URLs (decisions.md). */
export function liveOkxBybitFeeds(config: Config, sources: readonly Source[], clock: Clock, logger: Logger, overrides: OkxBybitOverrides = {}): MarketFeed[] {
  const feeds: MarketFeed[] = [];
  if (sources.includes('OKX')) feeds.push(new OkxFeed({ url: config.OKX_WS_URL, baseUrl: config.OKX_REST_URL, logger, clock, ...overrides.okx }));
  if (sources.includes('BYBIT')) {
    feeds.push(
      new BybitFeed({ optionUrl: config.BYBIT_OPTION_WS_URL, linearUrl: config.BYBIT_LINEAR_WS_URL, baseUrl: config.BYBIT_REST_URL, logger, clock, ...overrides.bybit }),
    );
  }
  return feeds;
}

/**
 * One replay feed per configured recorded file (REPLAY_FILE: Deribit, REPLAY_FILE_OKX, REPLAY_FILE_BYBIT),
 * each with its exchange's fresh normalizer, all advancing the one replay clock (the latest message time
 * across the files: record the exchanges together, or replay one file at a time).
 */
export function replayFeeds(config: Config, clock: MarketClock, logger: Logger): ReplayFeed[] {
  const files: Array<[Source, string | undefined]> = [
    ['DERIBIT', config.REPLAY_FILE],
    ['OKX', config.REPLAY_FILE_OKX],
    ['BYBIT', config.REPLAY_FILE_BYBIT],
  ];
  return files.filter((f): f is [Source, string] => f[1] !== undefined).map(([source, path]) => exchangeReplayFeed(source, path, clock, config.REPLAY_SPEED, logger));
}
