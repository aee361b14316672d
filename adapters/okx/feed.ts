/**
 * OkxFeed: the OKX API v5 public feed (live, or the simulator: only the URLs differ), an {@link ExchangeFeed}
 * (adapters/shared/exchangeFeed.ts) driven by the description below.
 * - REST (`baseUrl`, paced; OKX: 20 requests / 2 s): GET /api/v5/public/instruments (instType OPTION, FUTURES, SWAP
 *   of each family `BTC-USD`, `ETH-USD`) -> InstrumentDefinition; GET /api/v5/public/funding-rate-history of each
 *   swap, paged back with `after` -> FundingRate.
 * - WebSocket (one socket): `opt-summary` and `index-tickers` per family; `mark-price`, `tickers`, `funding-rate` of
 *   the swap; `mark-price` and `tickers` of every listed future. Frames within 64 KB, at most 480 subscribe/unsubscribe
 *   requests per hour per connection (over budget: wait, never send). Heartbeat: text `ping` after `pingAfterIdleMs`
 *   of silence, answered `pong`. `event: error` logged (the normalizer counts it); `notice` 64008 reconnects.
 * Source: OKX API v5 docs (sections in wire.ts); rules summarised in README.md beside this file.
 */
import { RestError, pageBackwards } from '../shared/rest.js';
import { ExchangeFeed, type ExchangeDescription, type RestFeedOptions } from '../shared/exchangeFeed.js';
import { familyOf, swapOf } from './instruments.js';
import { OkxDropKinds, OkxNormalizer, normalizeOkxFundingHistory, normalizeOkxInstruments } from './normalize.js';
import { OKX_MAX_REQUEST_BYTES, OKX_REQUESTS_PER_HOUR, OKX_REST_URL, OKX_WS_URL, OkxEventSchema, argKey, batchOkxRequests, type OkxSubscriptionArg } from './wire.js';
export { OKX_WS_URL, OKX_REST_URL } from './wire.js';

/** Options of {@link OkxFeed} (with {@link RestFeedOptions}: pairs among BTC/USD and ETH/USD; REST pacing default 250 ms). */
export interface OkxFeedOptions extends RestFeedOptions {
  /** WebSocket URL. Default {@link OKX_WS_URL}. */
  readonly url?: string;
  /** Send the text `ping` after this long without any inbound frame, ms (OKX: N < 30 s). Default 25 000. */
  readonly pingAfterIdleMs?: number;
  /** Wait this long for `pong` (or any frame) after a ping before reconnecting, ms. Default 5 000. */
  readonly pongTimeoutMs?: number;
  /** Bytes per subscribe/unsubscribe request. Default and maximum 65 536 (OKX: 64 KB). */
  readonly maxRequestBytes?: number;
  /** subscribe/unsubscribe requests per connection per rolling hour. Default and maximum 480 (OKX). */
  readonly requestsPerHour?: number;
  /** Points per funding-rate-history page (OKX max 400). Default 100. */
  readonly fundingPageLimit?: number;
  /** At most this many funding history pages per swap. Default 20. */
  readonly fundingMaxPages?: number;
}

/** OKX {@link MarketFeed} (see the module docstring). */
export class OkxFeed extends ExchangeFeed {
  declare readonly source: 'OKX';
  private readonly normalizer: OkxNormalizer;
  private readonly args = new Map<string, OkxSubscriptionArg>();
  private readonly acked = new Set<string>();
  private reqId = 0;

  constructor(opts: OkxFeedOptions = {}) {
    const ref: { feed?: OkxFeed } = {};
    const self = (): OkxFeed => ref.feed as OkxFeed; // the hooks run once constructed
    const maxBytes = Math.min(opts.maxRequestBytes ?? OKX_MAX_REQUEST_BYTES, OKX_MAX_REQUEST_BYTES);
    const pageLimit = Math.max(1, Math.min(opts.fundingPageLimit ?? 100, 400));
    const pingMs = opts.pingAfterIdleMs ?? 25_000;
    const description: ExchangeDescription = {
      source: 'OKX',
      restBootstrap: true,
      rest: { baseUrl: OKX_REST_URL, pacingMs: 250, rateLimitStatuses: [429], defaultRetryAfterMs: 1_000, checkBody: checkOkxBody },
      streams: [{
        key: 'ws', eager: true, catchUpOnReconnect: true, url: opts.url ?? OKX_WS_URL, name: () => 'OKX', silenceTimeoutMs: pingMs + (opts.pongTimeoutMs ?? 5_000),
        requestsPerHour: Math.max(1, Math.min(opts.requestsPerHour ?? OKX_REQUESTS_PER_HOUR, OKX_REQUESTS_PER_HOUR)), heartbeat: { intervalMs: pingMs, payload: 'ping', mode: 'idle' },
      }],
      topics: (feed) => new Map([['ws', self().desiredArgs(feed)]]),
      subscribeFrames: (op, keys) => {
        if (op === 'unsubscribe') for (const k of keys) self().acked.delete(k);
        const first = self().reqId + 1;
        const b = batchOkxRequests(op, keys.map((k) => self().args.get(k) as OkxSubscriptionArg), maxBytes, (i) => String(first + i));
        self().reqId += b.frames.length;
        return b.frames.map((frame, i) => ({ frame, topics: (b.batches[i] ?? []).map(argKey) }));
      },
      onClosed: () => self().acked.clear(),
      rawFrame: (feed, text) => text === 'pong' && (feed.notePong(), true),
      controlFrame: (feed, msg, conn) => {
        const ev = typeof msg === 'object' && msg !== null && typeof (msg as Record<string, unknown>)['event'] === 'string' ? OkxEventSchema.safeParse(msg) : undefined;
        if (!ev?.success) return false;
        const { event, arg, code } = ev.data;
        if (event === 'subscribe' && arg) self().acked.add(argKey(arg));
        else if (event === 'error') feed.logger.warn({ source: feed.source, code, msg: ev.data.msg?.slice(0, 200) }, 'OKX error event');
        else if (event === 'notice') {
          feed.logger.warn({ source: feed.source, code, msg: ev.data.msg }, 'OKX notice; reconnecting');
          if (code === '64008') conn.transport.reconnect(`notice ${code}`);
        }
        return false; // the normalizer counts error events
      },
      normalize: (msg, at) => self().normalizer.normalize(msg, at),
      onListing: (_feed, live) => self().normalizer.registerInstruments(live),
      noteFunding: (id, ts) => self().normalizer.noteFunding(id, ts),
      async listing(feed) {
        const defs = [];
        for (const instFamily of feed.pairs.map(familyOf)) {
          for (const instType of ['OPTION', 'FUTURES', 'SWAP'] as const) {
            const r = normalizeOkxInstruments(await feed.rest!.get('/api/v5/public/instruments', { instType, instFamily }), feed.clock.now());
            defs.push(...feed.countDrops(r, [OkxDropKinds.unsupportedInstrument, OkxDropKinds.inactive]));
          }
        }
        return defs;
      },
      async *fundingHistory(feed, windowS) {
        const sinceMs = (feed.clock.now() - windowS) * 1000;
        for (const instId of feed.pairs.map(swapOf)) {
          const items = await pageBackwards({
            maxPages: opts.fundingMaxPages ?? 20,
            pageLimit,
            startMs: sinceMs,
            fetchPage: async (oldestMs) => {
              const q = { instId, limit: String(pageLimit), ...(oldestMs === undefined ? {} : { after: String(oldestMs) }) };
              const { data } = (await feed.rest!.get('/api/v5/public/funding-rate-history', q)) as { data?: unknown };
              return Array.isArray(data) ? data : [];
            },
            timeOf: (x) => Number((x as Record<string, unknown> | null)?.['fundingTime']),
          });
          yield { ...normalizeOkxFundingHistory(items), sinceMs };
        }
      },
    };
    super(description, opts);
    ref.feed = this;
    this.normalizer = new OkxNormalizer({ onItemDrop: (k, d) => this.out.drops.drop(k, d) });
  }

  /** Diagnostics: subscription keys (`channel|id`) sent and acknowledged on the current socket, pings and pongs, requests in the last hour. */
  diagnostics(): { sent: string[]; acked: string[]; pingsSent: number; pongs: number; requestsLastHour: number; indexFallbacks: number } {
    const conn = this.connections()[0];
    return { sent: [...(conn?.sent ?? [])].sort(), acked: [...this.acked].sort(), ...this.heartbeats(), requestsLastHour: conn ? this.requestsLastHour(conn) : 0, indexFallbacks: this.normalizer.indexFallbacks };
  }

  /** Every argument wanted on the socket now: the families' and swaps' channels, then each live future's. */
  private desiredArgs(feed: ExchangeFeed): string[] {
    const wanted: OkxSubscriptionArg[] = feed.pairs.flatMap((p) => [
      { channel: 'index-tickers', instId: familyOf(p) },
      { channel: 'opt-summary', instFamily: familyOf(p) },
      ...['mark-price', 'tickers', 'funding-rate'].map((channel) => ({ channel, instId: swapOf(p) })),
    ]);
    const now = feed.clock.now();
    for (const d of feed.instruments.values()) {
      if (d.type === 'future' && (d.expirationTimestamp === null || d.expirationTimestamp > now)) wanted.push({ channel: 'mark-price', instId: d.instrument }, { channel: 'tickers', instId: d.instrument });
    }
    for (const a of wanted) this.args.set(argKey(a), a);
    return [...new Set(wanted.map(argKey))];
  }
}

/** Throws a {@link RestError} unless the body's `code` is "0" (50011, "rate limit reached", asks for a 1 s wait). Source: #error-code-rest-api-public. */
function checkOkxBody(body: unknown, path: string): void {
  const b = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  if (b['code'] !== '0') throw new RestError(path, String(b['code']), String(b['msg'] ?? ''), b['code'] === '50011' ? 1_000 : null);
}
