/**
 * The market sources of the service composition: which pairs are expected, the one list of exchanges and
 * their feeds (live or simulated: one loop over the configured sources), and the per-exchange replay feeds. Source: docs/spec/decisions.md "Market data sources" (live URLs; `simulated` = one
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
import { DeribitFeed, type DeribitFeedOptions } from '../adapters/deribit/feed.js';
import type { SimulatorEndpoints } from '../adapters/simulator/exchanges.js';
import type { OkxSimulatorOptions } from '../adapters/simulator/okxServer.js';
import type { BybitSimulatorOptions } from '../adapters/simulator/bybitServer.js';

/** Every (source, pair) of the spec's table for the given sources (what /ready waits for). */
export function expectedPairs(sources: readonly Source[]): Array<{ source: Source; pair: Pair }> {
  return sources.flatMap((source) => SUPPORTED_PAIRS[source].map((pair) => ({ source, pair })));
}

/** Per-exchange feed options merged over the defaults (tests, embedding), keyed by the source in lower case. */
export interface FeedOverrides {
  /** Deribit feed options (heartbeat, silence timeout...). */
  readonly deribit?: Partial<DeribitFeedOptions>;
  /** OKX feed options. */
  readonly okx?: Partial<OkxFeedOptions>;
  /** Bybit feed options. */
  readonly bybit?: Partial<BybitFeedOptions>;
}

/** Test and embedding overrides of the feeds and of the simulated OKX and Bybit exchanges. */
export interface MarketSourceOverrides extends FeedOverrides {
  /** OKX simulator options merged over the defaults. */
  readonly okxSimulator?: Partial<OkxSimulatorOptions>;
  /** Bybit simulator options merged over the defaults. */
  readonly bybitSimulator?: Partial<BybitSimulatorOptions>;
}

/** Where the feeds connect: the configured live URLs (decisions.md), or the simulated exchanges' endpoints. */
export type FeedUrls = { readonly live: Config } | { readonly simulated: SimulatorEndpoints };

/** One registered exchange: its overrides key, its URLs (undefined: not served there), and its feed. */
interface ExchangeFeedEntry<O> {
  readonly key: keyof FeedOverrides;
  urls(at: FeedUrls): Partial<O> | undefined;
  create(opts: O): MarketFeed;
}

const entry = <O>(e: ExchangeFeedEntry<O>): ExchangeFeedEntry<object> => e as unknown as ExchangeFeedEntry<object>;

/**
 * THE list of exchanges (adapters/ADD_NEW_EXCHANGE.md): for each source its feed class and where its URLs come
 * from. Start-up builds the feeds of the configured sources with one loop over it ({@link exchangeFeeds}).
 */
const EXCHANGE_FEEDS: { readonly [S in Source]: ExchangeFeedEntry<object> } = {
  DERIBIT: entry<DeribitFeedOptions>({
    key: 'deribit',
    urls: (at) => ('live' in at ? { url: at.live.DERIBIT_WS_URL } : at.simulated.deribit ? { url: at.simulated.deribit.url } : undefined),
    create: (o) => new DeribitFeed(o),
  }),
  OKX: entry<OkxFeedOptions>({
    key: 'okx',
    urls: (at) => ('live' in at ? { url: at.live.OKX_WS_URL, baseUrl: at.live.OKX_REST_URL } : at.simulated.okx ? { url: at.simulated.okx.url, baseUrl: at.simulated.okx.restUrl } : undefined),
    create: (o) => new OkxFeed(o),
  }),
  BYBIT: entry<BybitFeedOptions>({
    key: 'bybit',
    urls: (at) => {
      if ('live' in at) return { optionUrl: at.live.BYBIT_OPTION_WS_URL, linearUrl: at.live.BYBIT_LINEAR_WS_URL, baseUrl: at.live.BYBIT_REST_URL };
      const b = at.simulated.bybit;
      return b ? { optionUrl: b.optionUrl, linearUrl: b.linearUrl, baseUrl: b.restUrl } : undefined;
    },
    create: (o) => new BybitFeed(o),
  }),
};

/**
 * The feeds of `sources` (in the list's order) at `urls`: the same adapters live and simulated, only the URLs
 * differ. Each follows `pairsOf(source)`, with the given clock and logger; `overrides[key]` is merged last.
 */
export function exchangeFeeds(
  urls: FeedUrls,
  sources: readonly Source[],
  common: { readonly clock: Clock; readonly logger: Logger; readonly pairsOf: (source: Source) => readonly Pair[] },
  overrides: FeedOverrides = {},
): MarketFeed[] {
  return (Object.keys(EXCHANGE_FEEDS) as Source[])
    .filter((s) => sources.includes(s))
    .flatMap((source) => {
      const e = EXCHANGE_FEEDS[source];
      const at = e.urls(urls);
      return at ? [e.create({ ...at, pairs: common.pairsOf(source), logger: common.logger, clock: common.clock, ...overrides[e.key] })] : [];
    });
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
