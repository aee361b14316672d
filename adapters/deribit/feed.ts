/**
 * DeribitFeed: the Deribit API v2 JSON-RPC WebSocket feed (live, or the simulator: only the URL differs), an
 * {@link ExchangeFeed} (adapters/shared/exchangeFeed.ts) driven by the description below. Each socket's setup
 * (docs.deribit.com; README.md beside this file): `public/set_heartbeat` (>= 10 s; `test_request` answered with
 * `public/test`); the first time, `public/get_instruments {currency: BTC|ETH|USDC, kind: option|future}` (paced
 * 1/s) -> InstrumentDefinition events; `public/subscribe` in paced batches: `deribit_price_index.{index}` per pair
 * and `ticker.{instrument}.{tickerInterval}` per live instrument (on a reconnect at once from the known ones, the
 * listing then re-read in the background: all announced again, new subscribed, delisted unsubscribed);
 * `public/get_funding_rate_history` per perpetual over `fundingLookbackS`. A failed setup request reconnects; a
 * perpetual ticker crossing a UTC hour fetches the hour just settled; 10028 answers are retried after a wait.
 */
import type { Pair } from '../../src/domain/markets.js';
import { ExchangeFeed, type ExchangeDescription, type ExchangeFeedOptions, type FundingBatch } from '../shared/exchangeFeed.js';
import { JsonRpcClient } from '../shared/jsonRpc.js';
import { errorMessage } from '../shared/normalizeKit.js';
import { indexNameOf, parseInstrumentName, perpetualOf } from './instruments.js';
import { DropKinds, normalizeDeribit, normalizeFundingHistory, normalizeInstrumentList } from './normalize.js';
import { subscribeOnSocket } from './subscriptions.js';

/** Deribit production WebSocket endpoint. */
export const DERIBIT_WS_URL = 'wss://www.deribit.com/ws/api/v2';
/** Minimum heartbeat interval Deribit accepts, seconds (public/set_heartbeat). */
export const DERIBIT_MIN_HEARTBEAT_S = 10;
/** Deribit's "too many requests" error code (docs: articles/errors). */
export const DERIBIT_TOO_MANY_REQUESTS = 10028;

/** Options of {@link DeribitFeed} (with {@link ExchangeFeedOptions}: pairs among BTC/USD, ETH/USD, SOL/USDC, XRP/USDC). */
export interface DeribitFeedOptions extends ExchangeFeedOptions {
  /** WebSocket URL. Default {@link DERIBIT_WS_URL}; the simulator's `ws://127.0.0.1:port/ws/api/v2` in `simulated`. */
  readonly url?: string;
  /** public/set_heartbeat interval, s; raised to Deribit's minimum 10. Default 15. */
  readonly heartbeatIntervalS?: number;
  /** Reconnect a socket silent for this long, ms. Default 3 heartbeat intervals. */
  readonly silenceTimeoutMs?: number;
  /** Channels per public/subscribe request. Default 200. */
  readonly subscribeBatchSize?: number;
  /** Ticker aggregation interval: `100ms` (default), `agg2`, or `raw` (raw needs an authorised session). */
  readonly tickerInterval?: '100ms' | 'agg2' | 'raw';
  /** JSON-RPC request timeout, ms; a setup request that times out forces a reconnect. Default 10 000. */
  readonly requestTimeoutMs?: number;
  /** Spacing, ms: subscribe (default 300), get_instruments (default 1 000); first wait after a 10028 answer, doubled per retry (default 1 000). */
  readonly pacing?: { readonly subscribeMs?: number; readonly getInstrumentsMs?: number; readonly rateLimitRetryMs?: number };
}

/** public/get_funding_rate_history of the pair's perpetual over [fromS, toS] (s); `paced`: retried on 10028. */
async function history(c: JsonRpcClient, pair: Pair, fromS: number, toS: number, paced: boolean): Promise<FundingBatch> {
  const params = { instrument_name: perpetualOf(pair), start_timestamp: Math.round(fromS * 1000), end_timestamp: Math.round(toS * 1000) };
  return normalizeFundingHistory(await (paced ? c.callPaced : c.call).call(c, 'public/get_funding_rate_history', params), perpetualOf(pair), pair);
}

/** The Deribit description: JSON-RPC on one socket, listing and funding over it too. */
function deribitDescription(o: DeribitFeedOptions, confirmed: Set<string>): ExchangeDescription {
  const heartbeatS = Math.max(DERIBIT_MIN_HEARTBEAT_S, Math.ceil(o.heartbeatIntervalS ?? 15));
  const batchSize = Math.max(1, Math.floor(o.subscribeBatchSize ?? 200));
  const pace = { subscribeMs: o.pacing?.subscribeMs ?? 300, instrumentsMs: o.pacing?.getInstrumentsMs ?? 1_000 };
  /** The current socket's client (a task keeps the client it started with). */
  let rpc: JsonRpcClient | undefined;
  const need = (): JsonRpcClient => {
    if (rpc) return rpc;
    throw new Error('Deribit: not connected');
  };
  return {
    source: 'DERIBIT',
    listingOnSocket: true,
    streams: [{ key: 'ws', eager: true, url: o.url ?? DERIBIT_WS_URL, name: () => 'DERIBIT', silenceTimeoutMs: o.silenceTimeoutMs ?? 3 * heartbeatS * 1000 }],
    topics: (feed) => new Map([['ws', [...feed.pairs.map((p) => `deribit_price_index.${indexNameOf(p)}`), ...[...feed.instruments.keys()].map((n) => `ticker.${n}.${o.tickerInterval ?? '100ms'}`)]]]),
    sendSubscriptions: (feed, conn, toSub, toUnsub) => subscribeOnSocket(feed, conn, need(), { toSub, toUnsub, confirmed, batchSize, paceMs: pace.subscribeMs }),
    onOpen(feed, conn) {
      const ctx = conn.ctx;
      rpc = new JsonRpcClient({
        send: (t) => ctx?.send(t) ?? false,
        timeoutMs: o.requestTimeoutMs ?? 10_000,
        timers: feed.timers,
        rateLimitCode: DERIBIT_TOO_MANY_REQUESTS,
        rateLimitRetryMs: o.pacing?.rateLimitRetryMs ?? 1_000,
        onRateLimited: (method, attempt) => feed.logger.warn({ source: feed.source, method, attempt }, 'Deribit rate limit; retrying'),
      });
    },
    handshake: async () => void (await need().call('public/set_heartbeat', { interval: heartbeatS })),
    onClosed(_feed, _conn, reason) {
      confirmed.clear();
      rpc?.rejectAll(reason);
      rpc = undefined;
    },
    controlFrame(feed, msg) {
      if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) return false;
      const m = msg as Record<string, unknown>;
      const answer = rpc?.onResponse(m) ?? (('result' in m || 'error' in m) && m['method'] === undefined ? 'unmatched' : false);
      if (answer === 'unmatched') feed.out.drops.drop('unmatched-response', `id ${JSON.stringify(m['id'])}`);
      if (answer !== false) return true;
      if (m['method'] !== 'heartbeat') return false;
      if ((m['params'] as Record<string, unknown> | null)?.['type'] === 'test_request') {
        rpc?.call('public/test', {}).catch((e: unknown) => feed.logger.warn({ source: feed.source, err: errorMessage(e) }, 'public/test (heartbeat answer) failed'));
      }
      return true;
    },
    normalize: normalizeDeribit,
    async listing(feed) {
      const c = need();
      const out = [];
      const currencies = [...new Set(feed.pairs.map((p) => (p.quote === 'USDC' ? 'USDC' : p.base)))];
      for (const [i, [currency, kind]] of currencies.flatMap((x) => [[x, 'option'], [x, 'future']] as const).entries()) {
        if (i > 0) await feed.timers.sleep(pace.instrumentsMs);
        const r = normalizeInstrumentList(await c.callPaced('public/get_instruments', { currency, kind, expired: false }), feed.clock.now());
        out.push(...feed.countDrops(r, [DropKinds.combo, DropKinds.unsupportedInstrument, DropKinds.inactive]).filter((d) => parseInstrumentName(d.instrument).ok));
      }
      return out;
    },
    async *fundingHistory(feed, windowS) {
      const c = need();
      const endS = Math.floor(feed.clock.now() * 1000) / 1000;
      for (const p of feed.pairs) yield await history(c, p, endS - windowS, endS, true);
    },
    settledFunding: async (_feed, _id, pair, boundaryS) => history(need(), pair, boundaryS - 2 * 3600, boundaryS, false),
  };
}

/** Deribit {@link MarketFeed} (see the module docstring). */
export class DeribitFeed extends ExchangeFeed {
  declare readonly source: 'DERIBIT';
  private readonly confirmed: Set<string>;

  constructor(opts: DeribitFeedOptions = {}) {
    const confirmed = new Set<string>();
    super(deribitDescription(opts, confirmed), opts);
    this.confirmed = confirmed;
  }

  /** Channels confirmed by the server on the current socket (diagnostics). */
  subscribedChannels(): ReadonlySet<string> {
    return this.confirmed;
  }

  /** Names of the live instruments followed (diagnostics). */
  instrumentNames(): string[] {
    return [...this.instruments.keys()];
  }
}
