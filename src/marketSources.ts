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
import { DeribitFeed } from '../adapters/deribit/feed.js';
import type { SimulatorEndpoints } from '../adapters/simulator/exchanges.js';
import type { OkxSimulatorOptions } from '../adapters/simulator/okxServer.js';
import type { BybitSimulatorOptions } from '../adapters/simulator/bybitServer.js';

type DeribitFeedOptions = ConstructorParameters<typeof DeribitFeed>[0];

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

/**
 * The feeds of the simulated exchanges at `endpoints` (in this process or the simulator process): the same
 * adapters as live, only the URLs differ. Deribit pairs: the spec's table.
 */
export function simulatedFeeds(
  endpoints: SimulatorEndpoints,
  clock: Clock,
  logger: Logger,
  overrides: OkxBybitOverrides & { readonly deribit?: Partial<DeribitFeedOptions> } = {},
): MarketFeed[] {
  const feeds: MarketFeed[] = [];
  if (endpoints.deribit) feeds.push(new DeribitFeed({ url: endpoints.deribit.url, pairs: SUPPORTED_PAIRS.DERIBIT, logger, clock, ...overrides.deribit }));
  if (endpoints.okx) feeds.push(new OkxFeed({ url: endpoints.okx.url, baseUrl: endpoints.okx.restUrl, logger, clock, ...overrides.okx }));
  if (endpoints.bybit) {
    const b = endpoints.bybit;
    feeds.push(new BybitFeed({ optionUrl: b.optionUrl, linearUrl: b.linearUrl, baseUrl: b.restUrl, logger, clock, ...overrides.bybit }));
  }
  return feeds;
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
