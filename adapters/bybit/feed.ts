/**
 * BybitFeed: the Bybit API v5 public feed (live, or the simulator: only the URLs differ), an {@link ExchangeFeed}
 * (adapters/shared/exchangeFeed.ts) driven by the description below.
 *
 * - REST (`baseUrl`): GET /v5/market/instruments-info `category=option|linear&baseCoin=X`, cursor-paged (limit
 *   1000); kept: USDC-settled options, USDC perpetuals and futures, status Trading -> InstrumentDefinition events;
 *   GET /v5/market/funding/history of each USDC perpetual, paged back with endTime (limit 200) -> FundingRate.
 *   The sockets open once the first listing is known (Bybit has no per-family topic).
 * - WebSockets: the option stream (`optionUrl`) carries `tickers.{symbol}` of every option, sharded so that no
 *   socket holds more than `maxOptionArgsPerConnection` (2000) topics or `maxArgsCharsPerConnection` (21 000)
 *   topic characters; the linear stream (`linearUrl`, one socket) the perpetuals and futures (snapshot + deltas
 *   merged in the normalizer, cleared when that socket drops). Requests hold at most `maxArgsPerRequest` topics.
 * - Heartbeat: `{"op":"ping"}` every `pingIntervalMs` (Bybit recommends 20 s) on every socket. After a linear
 *   reconnect the recent funding history is read again.
 *
 * Source: Bybit V5 docs (pages in wire.ts); rules summarised in README.md beside this file.
 */
import { RestError, pageBackwards } from '../shared/rest.js';
import { ExchangeFeed, type ExchangeDescription, type RestFeedOptions } from '../shared/exchangeFeed.js';
import { BybitDropKinds, BybitNormalizer, bybitRestList, normalizeBybitFundingHistory, normalizeBybitInstruments, type BybitListingInfo } from './normalize.js';
import { BYBIT_LINEAR_WS_URL, BYBIT_MAX_ARGS_CHARS, BYBIT_MAX_OPTION_ARGS, BYBIT_OPTION_WS_URL, BYBIT_REST_URL, batchBybitTopics, bybitRequest } from './wire.js';
export { BYBIT_OPTION_WS_URL, BYBIT_LINEAR_WS_URL, BYBIT_REST_URL } from './wire.js';

/** Options of {@link BybitFeed} (with {@link RestFeedOptions}: pairs among BTC/USDC, ETH/USDC, SOL/USDC; REST pacing default 100 ms). */
export interface BybitFeedOptions extends RestFeedOptions {
  /** Option stream URL. Default {@link BYBIT_OPTION_WS_URL}. */
  readonly optionUrl?: string;
  /** Linear stream URL. Default {@link BYBIT_LINEAR_WS_URL}. */
  readonly linearUrl?: string;
  /** `{"op":"ping"}` period, ms. Default 20 000 (Bybit's recommendation). */
  readonly pingIntervalMs?: number;
  /** Reconnect a socket silent for this long, ms. Default 30 000. */
  readonly silenceTimeoutMs?: number;
  /** Option topics per connection. Default and maximum 2000 (Bybit). */
  readonly maxOptionArgsPerConnection?: number;
  /** Topic characters per connection. Default and maximum 21 000 (Bybit). */
  readonly maxArgsCharsPerConnection?: number;
  /** Topics per subscribe/unsubscribe request. Default 100. */
  readonly maxArgsPerRequest?: number;
}

/** Bybit {@link MarketFeed} (see the module docstring). */
export class BybitFeed extends ExchangeFeed {
  declare readonly source: 'BYBIT';
  private readonly normalizer = new BybitNormalizer();
  private readonly listed = new Map<string, BybitListingInfo>();

  constructor(opts: BybitFeedOptions = {}) {
    const ref: { feed?: BybitFeed } = {};
    const self = (): BybitFeed => ref.feed as BybitFeed; // the hooks run once constructed
    const maxChars = Math.max(64, Math.min(opts.maxArgsCharsPerConnection ?? BYBIT_MAX_ARGS_CHARS, BYBIT_MAX_ARGS_CHARS));
    const perRequest = Math.max(1, opts.maxArgsPerRequest ?? 100);
    let seq = 0;
    const common = {
      silenceTimeoutMs: opts.silenceTimeoutMs ?? 30_000,
      heartbeat: { intervalMs: opts.pingIntervalMs ?? 20_000, payload: () => JSON.stringify({ req_id: `ping${++seq}`, op: 'ping' }), mode: 'fixed' as const },
    };
    const topicsOf = (option: boolean): string[] => [...self().listed.values()].filter((i) => (i.instrument.type === 'option') === option).map((i) => `tickers.${i.instrument.name}`);
    const description: ExchangeDescription = {
      source: 'BYBIT',
      restBootstrap: true,
      rest: { baseUrl: BYBIT_REST_URL, pacingMs: 100, rateLimitStatuses: [429, 403], defaultRetryAfterMs: 2_000, checkBody: checkBybitBody },
      streams: [
        { ...common, key: 'option', url: opts.optionUrl ?? BYBIT_OPTION_WS_URL, name: (i) => `BYBIT option #${i + 1}`, shard: { maxTopics: Math.max(1, Math.min(opts.maxOptionArgsPerConnection ?? BYBIT_MAX_OPTION_ARGS, BYBIT_MAX_OPTION_ARGS)), maxChars } },
        { ...common, key: 'linear', url: opts.linearUrl ?? BYBIT_LINEAR_WS_URL, name: () => 'BYBIT linear', warnChars: maxChars, catchUpOnReconnect: true },
      ],
      topics: () => new Map([['option', topicsOf(true)], ['linear', topicsOf(false)]]),
      unsubscribeFirst: true,
      subscribeFrames: (op, topics) => batchBybitTopics(topics, perRequest, maxChars).map((batch) => ({ frame: bybitRequest(op, batch, `${op[0]}${++seq}`), topics: batch })),
      onClosed: (_feed, conn) => void (conn.stream.key === 'linear' && self().normalizer.book.clear()),
      controlFrame: (feed, msg) => {
        const op = typeof msg === 'object' && msg !== null ? (msg as Record<string, unknown>) : {};
        if (op['op'] === 'pong' || (op['op'] === 'ping' && op['ret_msg'] === 'pong')) feed.notePong();
        return false; // the normalizer counts the answers
      },
      normalize: (msg, at) => self().normalizer.normalize(msg, at),
      afterNormalize: (feed, r) => void (!r.ok && r.kind === BybitDropKinds.subscribeError && feed.logger.warn({ source: feed.source, detail: r.detail }, 'Bybit subscription failed')),
      noteFunding: (id, ts) => self().normalizer.noteFunding(id, ts),
      async listing(feed) {
        const defs = [];
        const listed = new Map<string, BybitListingInfo>();
        const now = feed.clock.now();
        for (const p of feed.pairs) {
          for (const category of ['option', 'linear'] as const) {
            let cursor = '';
            for (let page = 0, seen = new Set<string>(); page < 50; page++) {
              const body = await feed.rest!.get('/v5/market/instruments-info', { category, baseCoin: p.base, limit: '1000', ...(cursor ? { cursor } : {}) });
              const r = normalizeBybitInstruments(body, feed.clock.now());
              defs.push(...feed.countDrops(r, [BybitDropKinds.unsupportedInstrument, BybitDropKinds.inactive]).filter((d) => d.base === p.base && d.quote === p.quote));
              for (const i of r.listing) if (i.instrument.pair.base === p.base && i.instrument.pair.quote === p.quote && (i.instrument.expirationTimestamp ?? Infinity) > now) listed.set(i.instrument.name, i);
              if (!r.nextPageCursor || seen.has(r.nextPageCursor)) break;
              seen.add((cursor = r.nextPageCursor));
            }
          }
        }
        self().listed.clear();
        for (const [k, v] of listed) self().listed.set(k, v);
        self().normalizer.registerListing(listed.values());
        return defs.filter((d) => listed.has(d.instrument));
      },
      async *fundingHistory(feed, windowS) {
        const nowMs = Math.floor(feed.clock.now() * 1000);
        const sinceMs = nowMs - windowS * 1000;
        for (const info of [...self().listed.values()].filter((i) => i.instrument.type === 'perpetual')) {
          const items = await pageBackwards({
            maxPages: 20,
            pageLimit: 200,
            startMs: sinceMs,
            fetchPage: async (oldestMs) => {
              const q = { category: 'linear', symbol: info.instrument.name, startTime: String(sinceMs), endTime: String(oldestMs === undefined ? nowMs : oldestMs - 1), limit: '200' };
              const r = bybitRestList(await feed.rest!.get('/v5/market/funding/history', q));
              return r.ok ? r.list : [];
            },
            timeOf: (x) => Number((x as Record<string, unknown> | null)?.['fundingRateTimestamp']),
          });
          yield { ...normalizeBybitFundingHistory(items, info.fundingIntervalHours), sinceMs };
        }
      },
    };
    super(description, opts);
    ref.feed = this;
  }

  /** Diagnostics: per connection, the topics sent on the current socket; pings sent and pongs received. */
  diagnostics(): { connections: { name: string; kind: 'option' | 'linear'; open: boolean; topics: number; chars: number; sent: string[] }[]; pingsSent: number; pongs: number } {
    const connections = this.connections().map((c) => ({ name: c.name, kind: c.stream.key as 'option' | 'linear', open: c.open, topics: c.desired.size, chars: c.chars, sent: [...c.sent].sort() }));
    return { connections, ...this.heartbeats() };
  }
}

/** Throws a {@link RestError} unless the body is a Bybit envelope with `retCode` 0 (10006, "too many visits", asks for a 1 s wait). Source: Bybit V5 error codes. */
function checkBybitBody(body: unknown, path: string): void {
  const r = bybitRestList(body);
  const code = (body as Record<string, unknown> | null)?.['retCode'];
  if (!r.ok) throw new RestError(path, String(code), r.detail, code === 10006 ? 1_000 : null);
}
