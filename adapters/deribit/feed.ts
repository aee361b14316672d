/**
 * DeribitFeed: the Deribit API v2 JSON-RPC WebSocket feed (live, or the simulator: only the URL differs),
 * an {@link ExchangeFeed} (adapters/shared/exchangeFeed.ts) driven by the description below.
 *
 * Every socket's setup, in this order (docs.deribit.com; README.md beside this file):
 * 1. `public/set_heartbeat {interval}` (>= 10 s); every `heartbeat` `test_request` is answered with `public/test`;
 * 2. first socket: `public/get_instruments {currency, kind: option|future, expired: false}` for BTC, ETH and USDC
 *    (paced, 1 request/s) -> InstrumentDefinition events of the configured pairs;
 * 3. `public/subscribe` in batches of `subscribeBatchSize` (paced): `deribit_price_index.{index}` per pair, then
 *    `ticker.{instrument}.{tickerInterval}` per live instrument; on a reconnect at once from the known
 *    instruments (expired ones left out), the listing then re-read in the background, every definition
 *    announced again, new instruments subscribed, delisted ones unsubscribed;
 * 4. `public/get_funding_rate_history` of each perpetual over `fundingLookbackS` -> FundingRate events.
 * A failed setup request (error answer, timeout) reconnects. A perpetual ticker crossing a UTC hour fetches the
 * hour just settled (retried until published). Too-many-requests answers (10028) are retried after a wait.
 */
import type { Pair } from '../../src/domain/markets.js';
import { ExchangeFeed, type ExchangeDescription, type ExchangeFeedOptions, type FeedConnection, type FundingBatch } from '../shared/exchangeFeed.js';
import { JsonRpcClient } from '../shared/jsonRpc.js';
import { errorMessage } from '../shared/normalizeKit.js';
import { indexNameOf, parseInstrumentName, perpetualOf } from './instruments.js';
import { DropKinds, normalizeDeribit, normalizeFundingHistory, normalizeInstrumentList } from './normalize.js';
import { SubscribeResultSchema } from './wire.js';

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
  /** Wait between attempts to fetch a just-settled funding hour not yet published, ms. Default 60 000. */
  readonly fundingRetryMs?: number;
  /** Attempts to fetch a just-settled funding hour. Default 5. */
  readonly fundingAttempts?: number;
  /** Spacing, ms: subscribe (default 300), get_instruments (default 1 000); first wait after a 10028 answer, doubled per retry (default 1 000). */
  readonly pacing?: { readonly subscribeMs?: number; readonly getInstrumentsMs?: number; readonly rateLimitRetryMs?: number };
}

/** The Deribit description: JSON-RPC on one socket, listing and funding over it too. */
function deribitDescription(o: DeribitFeedOptions, confirmed: Set<string>): ExchangeDescription {
  const heartbeatS = Math.max(DERIBIT_MIN_HEARTBEAT_S, Math.ceil(o.heartbeatIntervalS ?? 15));
  const batchSize = Math.max(1, Math.floor(o.subscribeBatchSize ?? 200));
  const pace = { subscribeMs: o.pacing?.subscribeMs ?? 300, instrumentsMs: o.pacing?.getInstrumentsMs ?? 1_000 };
  /** The current socket's client (a task started on an older socket keeps the client it started with). */
  let rpc: JsonRpcClient | undefined;
  const need = (): JsonRpcClient => {
    if (!rpc) throw new Error('Deribit: not connected');
    return rpc;
  };
  /** `public/(un)subscribe` in paced batches. */
  const batches = async (feed: ExchangeFeed, method: string, channels: readonly string[], onDone: (batch: string[], result: unknown) => void): Promise<void> => {
    const c = need();
    for (let i = 0; i < channels.length; i += batchSize) {
      if (i > 0) await feed.timers.sleep(pace.subscribeMs);
      const batch = channels.slice(i, i + batchSize);
      onDone(batch, await c.callPaced(method, { channels: batch }));
    }
  };
  const historyParams = (pair: Pair, fromS: number, toS: number): Record<string, unknown> => ({
    instrument_name: perpetualOf(pair),
    start_timestamp: Math.round(fromS * 1000),
    end_timestamp: Math.round(toS * 1000),
  });
  const fundingOf = (pair: Pair, result: unknown): FundingBatch => normalizeFundingHistory(result, perpetualOf(pair), pair);
  /** One socket's setup (module docstring); a failure forces a reconnect of that socket. */
  const session = async (feed: ExchangeFeed, conn: FeedConnection, client: JsonRpcClient): Promise<void> => {
    try {
      await client.call('public/set_heartbeat', { interval: heartbeatS });
      if (feed.hasListing) {
        feed.forgetExpired();
        await feed.assignTopics();
        feed.logger.info({ source: feed.source, channels: conn.sent.size }, 'Deribit resubscribed from the known instruments; refreshing the listing');
        void feed.refreshListing(true);
      } else await feed.loadListing(true);
      await feed.loadFunding();
    } catch (e) {
      if (rpc !== client || feed.isStopped) return;
      feed.logger.error({ source: feed.source, err: errorMessage(e) }, 'Deribit session setup failed; reconnecting');
      conn.transport.reconnect(`setup failed: ${errorMessage(e)}`);
    }
  };
  return {
    source: 'DERIBIT',
    listingOnSocket: true,
    streams: [{ key: 'ws', eager: true, url: o.url ?? DERIBIT_WS_URL, name: () => 'DERIBIT', silenceTimeoutMs: o.silenceTimeoutMs ?? 3 * heartbeatS * 1000 }],
    topics: (feed) => {
      const tickers = [...feed.instruments.keys()].map((n) => `ticker.${n}.${o.tickerInterval ?? '100ms'}`);
      return new Map([['ws', [...feed.pairs.map((p) => `deribit_price_index.${indexNameOf(p)}`), ...tickers]]]);
    },
    async sendSubscriptions(feed, conn, toSub, toUnsub) {
      for (const c of toSub) conn.sent.add(c);
      for (const c of toUnsub) conn.sent.delete(c);
      await batches(feed, 'public/unsubscribe', toUnsub, (b) => b.forEach((c) => confirmed.delete(c)));
      await batches(feed, 'public/subscribe', toSub, (batch, result) => {
        const ok = SubscribeResultSchema.safeParse(result);
        if (!ok.success) throw new Error('public/subscribe: result is not a list of channels');
        for (const c of ok.data) confirmed.add(c);
        const missing = batch.filter((c) => !ok.data.includes(c));
        if (missing.length > 0) feed.logger.warn({ source: feed.source, missing: missing.length, example: missing[0] }, 'Deribit did not confirm some channels');
      });
    },
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
      void session(feed, conn, rpc);
    },
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
        for (const d of r.dropped) if (d.kind !== DropKinds.combo && d.kind !== DropKinds.unsupportedInstrument && d.kind !== DropKinds.inactive) feed.out.drops.drop(d.kind, d.detail);
        out.push(...r.events.filter((d) => parseInstrumentName(d.instrument).ok));
      }
      return out;
    },
    async *fundingHistory(feed, windowS) {
      const c = need();
      const endS = Math.floor(feed.clock.now() * 1000) / 1000;
      for (const p of feed.pairs) yield fundingOf(p, await c.callPaced('public/get_funding_rate_history', historyParams(p, endS - windowS, endS)));
    },
    settledFunding: async (_feed, _id, pair, boundaryS) => fundingOf(pair, await need().call('public/get_funding_rate_history', historyParams(pair, boundaryS - 2 * 3600, boundaryS))),
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
