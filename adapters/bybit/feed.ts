/**
 * BybitFeed: the Bybit API v5 public feed (live, or the simulator: only the URLs differ).
 *
 * - REST bootstrap (fetch, `baseUrl`): GET /v5/market/instruments-info `category=option&baseCoin=X`
 *   and `category=linear&baseCoin=X` for each followed base coin, cursor-paged (limit 1000), kept:
 *   USDC-settled options, USDC perpetuals and futures, status Trading -> InstrumentDefinition events;
 *   then GET /v5/market/funding/history of each USDC perpetual over `fundingLookbackS` (paged back
 *   with endTime, limit 200) -> FundingRate events. Retried (5 s doubling to 60 s) until it works;
 *   re-read every `instrumentRefreshMs` (new symbols subscribed and announced, delisted ones
 *   unsubscribed). WebSockets open once the first listing is known (Bybit has no per-family topic).
 * - WebSockets on adapters/shared/transport.ts: the option stream (`optionUrl`) carries
 *   `tickers.{symbol}` of every option, SHARDED over as many connections as needed so that no
 *   connection holds more than `maxOptionArgsPerConnection` (Bybit: 2000) topics or more than
 *   `maxArgsCharsPerConnection` (Bybit: 21,000) topic characters; the linear stream (`linearUrl`,
 *   one connection) carries `tickers.{symbol}` of the USDC perpetuals and futures (snapshot + deltas
 *   merged in the normalizer; the merged book is cleared when that socket drops). Requests hold at
 *   most `maxArgsPerRequest` topics. Every (re)connect resubscribes that connection's topics.
 * - Heartbeat: `{"op":"ping"}` every `pingIntervalMs` (Bybit recommends 20 s) on every socket;
 *   no traffic for `silenceTimeoutMs` (default 30 s) -> reconnect. After a linear reconnect the
 *   recent funding history is fetched again so that a settlement missed while away is not lost.
 * - Status: `connected` when every socket is open, `disconnected` (data stale, nothing erased) as
 *   soon as one drops. Malformed frames and failed subscriptions are counted, never thrown.
 *
 * Source: Bybit V5 docs (pages in wire.ts); rules summarised in README.md beside this file.
 */
import type { Observable, Subscription } from 'rxjs';
import type { InstrumentDefinition, MarketEvent } from '../../src/domain/events.js';
import { systemClock, type Clock } from '../../src/domain/clock.js';
import { SUPPORTED_PAIRS, pairLabel, type Pair } from '../../src/domain/markets.js';
import { FeedOutput, TrackedTimers } from '../shared/feedKit.js';
import { errorMessage } from '../shared/normalizeKit.js';
import { PacedRestClient, RestError, pageBackwards, retryUntilDone } from '../shared/rest.js';
import {
  ReconnectingTransport,
  silentLogger,
  type Logger,
  type OpenContext,
  type ReconnectingTransportOptions,
  type TransportStateChange,
} from '../shared/transport.js';
import type { FeedStats, MarketFeed } from '../../src/domain/feeds.js';
import type { BybitSymbol } from './instruments.js';
import {
  BybitDropKinds,
  BybitNormalizer,
  bybitRestList,
  normalizeBybitFundingHistory,
  normalizeBybitInstruments,
  type BybitListingInfo,
} from './normalize.js';
import { BYBIT_MAX_ARGS_CHARS, BYBIT_MAX_OPTION_ARGS, batchBybitTopics, bybitRequest } from './wire.js';

/** Bybit production public option stream. */
export const BYBIT_OPTION_WS_URL = 'wss://stream.bybit.com/v5/public/option';
/** Bybit production public linear (USDT/USDC perpetual and futures) stream. */
export const BYBIT_LINEAR_WS_URL = 'wss://stream.bybit.com/v5/public/linear';
/** Bybit production REST base. */
export const BYBIT_REST_URL = 'https://api.bybit.com';

export interface BybitFeedOptions {
  /** Option stream URL. Default {@link BYBIT_OPTION_WS_URL}. */
  readonly optionUrl?: string;
  /** Linear stream URL. Default {@link BYBIT_LINEAR_WS_URL}. */
  readonly linearUrl?: string;
  /** REST base URL. Default {@link BYBIT_REST_URL}. */
  readonly baseUrl?: string;
  /** Pairs to follow, among BTC/USDC, ETH/USDC, SOL/USDC. Default all three. Others throw. */
  readonly pairs?: readonly Pair[];
  /** fetch implementation. Default the global fetch. */
  readonly fetch?: typeof fetch;
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
  /** Re-read the listings this often, ms; 0 disables. Default 600 000. */
  readonly instrumentRefreshMs?: number;
  /** Funding history bootstrap window, s. Default 7 days. */
  readonly fundingLookbackS?: number;
  /** Window re-read after a linear reconnect, s. Default 2 days. */
  readonly fundingCatchUpS?: number;
  /** REST request timeout, ms. Default 10 000. */
  readonly restTimeoutMs?: number;
  /** Minimum spacing of REST requests, ms. Default 100. */
  readonly restPacingMs?: number;
  /** First retry delay of a failed REST bootstrap, ms (doubles up to 60 s). Default 5 000. */
  readonly restRetryMs?: number;
  /** pino-like logger. Default silent. */
  readonly logger?: Logger;
  /** Clock for receive times, status timestamps and the funding window (Unix s). Default wall clock. */
  readonly clock?: Clock;
  /** Transport overrides (backoff, random, timers), mainly for tests. */
  readonly transport?: Partial<Omit<ReconnectingTransportOptions, 'url' | 'onOpen' | 'silenceTimeoutMs' | 'heartbeat'>>;
}

/** A Bybit REST answer with a non-zero `retCode`, or an HTTP error (`retryAfterMs`: HTTP 429/403 Retry-After or retCode 10006, ms). */
export class BybitRestError extends RestError {
  constructor(path: string, code: string, message: string, retryAfterMs: number | null = null, status: number | null = null) {
    super(path, code, message, retryAfterMs, status);
    this.name = 'BybitRestError';
  }
}

/**
 * Throws {@link BybitRestError} unless the body is a Bybit envelope with `retCode` 0 (10006, "too
 * many visits", asks for a 1 s wait). Source: Bybit V5 docs, error codes.
 */
function checkBybitBody(body: unknown, path: string): void {
  const r = bybitRestList(body);
  if (!r.ok) {
    const code = (body as Record<string, unknown> | null)?.['retCode'];
    throw new BybitRestError(path, String(code), r.detail, code === 10006 ? 1_000 : null);
  }
}

/** One WebSocket of the feed and the topics it should carry. */
interface Conn {
  readonly name: string;
  readonly kind: 'option' | 'linear';
  readonly transport: ReconnectingTransport;
  readonly desired: Set<string>;
  readonly sent: Set<string>;
  chars: number;
  ctx: OpenContext | undefined;
  open: boolean;
}

function samePair(a: Pair, b: Pair): boolean {
  return a.base === b.base && a.quote === b.quote;
}

const topicOf = (symbol: string): string => `tickers.${symbol}`;

/** Bybit {@link MarketFeed} (see the module docstring). */
export class BybitFeed implements MarketFeed {
  readonly source = 'BYBIT' as const;
  private readonly out: FeedOutput;
  /** Hot stream of normalized events, from start() until stop(). */
  readonly events$: Observable<MarketEvent>;

  private readonly pairs: readonly Pair[];
  private readonly optionUrl: string;
  private readonly linearUrl: string;
  private readonly pingMs: number;
  private readonly silenceMs: number;
  private readonly maxOptionArgs: number;
  private readonly maxChars: number;
  private readonly maxArgsPerRequest: number;
  private readonly refreshMs: number;
  private readonly fundingLookbackS: number;
  private readonly fundingCatchUpS: number;
  private readonly restRetryMs: number;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly transportOpts: BybitFeedOptions['transport'];
  private readonly rest: PacedRestClient;
  private readonly normalizer = new BybitNormalizer();
  private readonly subs: Subscription[] = [];
  private readonly timers = new TrackedTimers();

  private readonly optionConns: Conn[] = [];
  private linearConn: Conn | undefined;
  /** Option topic -> its connection. */
  private readonly optionHome = new Map<string, Conn>();
  private readonly listing = new Map<string, BybitListingInfo>();
  private readonly announced = new Set<string>();
  private listingLoaded = false;

  private started = false;
  private stopped = false;
  private statusConnected = false;
  private pongCount = 0;
  private reqSeq = 0;

  constructor(opts: BybitFeedOptions = {}) {
    this.pairs = opts.pairs ?? SUPPORTED_PAIRS.BYBIT;
    for (const p of this.pairs) {
      if (!SUPPORTED_PAIRS.BYBIT.some((q) => samePair(p, q))) throw new Error(`Bybit does not list ${pairLabel(p)}`);
    }
    this.optionUrl = opts.optionUrl ?? BYBIT_OPTION_WS_URL;
    this.linearUrl = opts.linearUrl ?? BYBIT_LINEAR_WS_URL;
    this.pingMs = opts.pingIntervalMs ?? 20_000;
    this.silenceMs = opts.silenceTimeoutMs ?? 30_000;
    this.maxOptionArgs = Math.max(1, Math.min(opts.maxOptionArgsPerConnection ?? BYBIT_MAX_OPTION_ARGS, BYBIT_MAX_OPTION_ARGS));
    this.maxChars = Math.max(64, Math.min(opts.maxArgsCharsPerConnection ?? BYBIT_MAX_ARGS_CHARS, BYBIT_MAX_ARGS_CHARS));
    this.maxArgsPerRequest = Math.max(1, opts.maxArgsPerRequest ?? 100);
    this.refreshMs = opts.instrumentRefreshMs ?? 600_000;
    this.fundingLookbackS = opts.fundingLookbackS ?? 7 * 86_400;
    this.fundingCatchUpS = opts.fundingCatchUpS ?? 2 * 86_400;
    this.restRetryMs = opts.restRetryMs ?? 5_000;
    this.logger = opts.logger ?? silentLogger;
    this.clock = opts.clock ?? systemClock;
    this.transportOpts = opts.transport;
    this.out = new FeedOutput(this.source, this.logger);
    this.events$ = this.out.events$;
    this.rest = new PacedRestClient({
      baseUrl: opts.baseUrl ?? BYBIT_REST_URL,
      fetch: opts.fetch ?? fetch,
      pacingMs: opts.restPacingMs ?? 100,
      timeoutMs: opts.restTimeoutMs ?? 10_000,
      timers: this.timers,
      // Bybit answers an IP rate-limit breach with HTTP 403 (docs: rate-limit) or 429.
      rateLimitStatuses: [429, 403],
      defaultRetryAfterMs: 2_000,
      error: (path, code, message, retryAfterMs, status) => new BybitRestError(path, code, message, retryAfterMs, status),
      checkBody: checkBybitBody,
    });
  }

  /** Start the REST bootstrap; the WebSockets follow the first listing (idempotent). */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    void this.bootstrap();
    if (this.refreshMs > 0) this.timers.interval(() => void this.refreshListing(), this.refreshMs);
  }

  /** Close every socket for good; emits a final `disconnected` status and completes events$. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.rest.close();
    this.timers.close();
    if (this.statusConnected) {
      this.statusConnected = false;
      this.emit({ kind: 'status', source: this.source, state: 'disconnected', reason: 'stopped', timestamp: this.clock.now() });
    }
    await Promise.all(this.conns().map((c) => c.transport.stop()));
    for (const s of this.subs) s.unsubscribe();
    this.out.complete();
  }

  /** Live counters (src/domain/feeds.ts FeedStats); reconnects summed over every socket. */
  stats(): FeedStats {
    return this.out.stats(
      this.statusConnected,
      this.conns().reduce((n, c) => n + c.transport.reconnects, 0),
      this.conns().map((c) => c.transport),
    );
  }

  /** Diagnostics: per connection, the topics sent on the current socket; pings sent and pongs received. */
  diagnostics(): { connections: { name: string; kind: 'option' | 'linear'; open: boolean; topics: number; chars: number; sent: string[] }[]; pingsSent: number; pongs: number } {
    return {
      connections: this.conns().map((c) => ({ name: c.name, kind: c.kind, open: c.open, topics: c.desired.size, chars: c.chars, sent: [...c.sent].sort() })),
      pingsSent: this.conns().reduce((n, c) => n + c.transport.heartbeatsSent, 0),
      pongs: this.pongCount,
    };
  }

  private conns(): Conn[] {
    return this.linearConn ? [...this.optionConns, this.linearConn] : [...this.optionConns];
  }

  private emit(ev: MarketEvent): void {
    this.out.emit(ev);
  }

  // ---------------------------------------------------------------- connections

  private newConn(kind: 'option' | 'linear'): Conn {
    const name = kind === 'linear' ? 'BYBIT linear' : `BYBIT option #${this.optionConns.length + 1}`;
    const transport = new ReconnectingTransport({
      name,
      logger: this.logger,
      ...this.transportOpts,
      url: kind === 'linear' ? this.linearUrl : this.optionUrl,
      silenceTimeoutMs: this.silenceMs,
      heartbeat: { intervalMs: this.pingMs, payload: () => JSON.stringify({ req_id: `ping${++this.reqSeq}`, op: 'ping' }), mode: 'fixed' },
      onOpen: (ctx) => this.onOpen(conn, ctx),
    });
    const conn: Conn = { name, kind, transport, desired: new Set(), sent: new Set(), chars: 0, ctx: undefined, open: false };
    this.subs.push(transport.messages$.subscribe((t) => this.onFrame(t)));
    this.subs.push(transport.states$.subscribe((s) => this.onState(conn, s)));
    if (this.started && !this.stopped) transport.start();
    return conn;
  }

  private onOpen(conn: Conn, ctx: OpenContext): void {
    conn.ctx = ctx;
    conn.sent.clear();
    this.sync(conn);
    if (conn.kind === 'linear' && ctx.connectionId > 1) void this.fundingCatchUp();
  }

  private onState(conn: Conn, s: TransportStateChange): void {
    if (s.state === 'open') {
      conn.open = true;
      if (!this.statusConnected && this.conns().every((c) => c.open)) {
        this.statusConnected = true;
        this.emit({ kind: 'status', source: this.source, state: 'connected', timestamp: this.clock.now() });
      }
    } else if (s.state === 'closed') {
      conn.open = false;
      conn.ctx = undefined;
      conn.sent.clear();
      if (conn.kind === 'linear') this.normalizer.book.clear();
      if (this.statusConnected) {
        this.statusConnected = false;
        this.emit({ kind: 'status', source: this.source, state: 'disconnected', reason: `${conn.name}: ${s.reason ?? 'closed'}`, timestamp: this.clock.now() });
      }
    }
  }

  /** Send subscribe/unsubscribe requests so that the socket carries exactly `desired`. */
  private sync(conn: Conn): void {
    const ctx = conn.ctx;
    if (!ctx || this.stopped) return;
    const toSub = [...conn.desired].filter((t) => !conn.sent.has(t));
    const toUnsub = [...conn.sent].filter((t) => !conn.desired.has(t));
    for (const batch of batchBybitTopics(toUnsub, this.maxArgsPerRequest, this.maxChars)) {
      if (!ctx.send(bybitRequest('unsubscribe', batch, `u${++this.reqSeq}`))) return;
      for (const t of batch) conn.sent.delete(t);
    }
    for (const batch of batchBybitTopics(toSub, this.maxArgsPerRequest, this.maxChars)) {
      if (!ctx.send(bybitRequest('subscribe', batch, `s${++this.reqSeq}`))) return;
      for (const t of batch) conn.sent.add(t);
    }
  }

  /** Put the listing's topics on the connections: options sharded, linear on one; then sync. */
  private assignTopics(): void {
    const optionTopics = new Set<string>();
    const linearTopics = new Set<string>();
    for (const info of this.listing.values()) (info.instrument.type === 'option' ? optionTopics : linearTopics).add(topicOf(info.instrument.name));
    // options: remove the delisted, then place the new on the first shard with room
    for (const [topic, conn] of [...this.optionHome]) {
      if (!optionTopics.has(topic)) {
        conn.desired.delete(topic);
        conn.chars -= topic.length;
        this.optionHome.delete(topic);
      }
    }
    for (const topic of [...optionTopics].sort()) {
      if (this.optionHome.has(topic)) continue;
      let conn = this.optionConns.find((c) => c.desired.size < this.maxOptionArgs && c.chars + topic.length <= this.maxChars);
      if (!conn) {
        conn = this.newConn('option');
        this.optionConns.push(conn);
      }
      conn.desired.add(topic);
      conn.chars += topic.length;
      this.optionHome.set(topic, conn);
    }
    if (linearTopics.size > 0 && !this.linearConn) this.linearConn = this.newConn('linear');
    if (this.linearConn) {
      const lc = this.linearConn;
      lc.desired.clear();
      for (const t of linearTopics) lc.desired.add(t);
      lc.chars = [...linearTopics].reduce((n, t) => n + t.length, 0);
      if (lc.chars > this.maxChars) this.logger.warn({ source: this.source, chars: lc.chars }, 'Bybit linear topics exceed the per-connection character limit');
    }
    for (const c of this.conns()) this.sync(c);
  }

  // ---------------------------------------------------------------- frames

  private onFrame(text: string): void {
    const receivedAt = this.clock.now();
    this.out.countFrame(receivedAt);
    const parsed = this.out.parseFrame(text);
    if (!parsed.ok) return;
    const msg = parsed.msg;
    if (typeof msg === 'object' && msg !== null) {
      const m = msg as Record<string, unknown>;
      if (m['op'] === 'pong' || (m['op'] === 'ping' && m['ret_msg'] === 'pong')) this.pongCount += 1;
    }
    const r = this.normalizer.normalize(msg, receivedAt);
    this.out.publish(r);
    if (!r.ok && r.kind === BybitDropKinds.subscribeError) this.logger.warn({ source: this.source, detail: r.detail }, 'Bybit subscription failed');
  }

  // ---------------------------------------------------------------- REST

  /** Listings then funding history; retried with doubling delay until it succeeds or stop(). */
  private bootstrap(): Promise<void> {
    return retryUntilDone(
      async () => {
        await this.loadListing();
        await this.loadFundingHistory(this.fundingLookbackS);
      },
      {
        firstDelayMs: this.restRetryMs,
        timers: this.timers,
        isStopped: () => this.stopped,
        onFailure: (e, retryInMs) => this.logger.warn({ source: this.source, err: errorMessage(e), retryInMs }, 'Bybit REST bootstrap failed; retrying'),
      },
    );
  }

  /** All pages of instruments-info for (category, baseCoin). */
  private async listingPages(category: 'option' | 'linear', baseCoin: string): Promise<{ defs: InstrumentDefinition[]; infos: BybitListingInfo[] }> {
    const defs: InstrumentDefinition[] = [];
    const infos: BybitListingInfo[] = [];
    let cursor = '';
    const seenCursors = new Set<string>();
    for (let page = 0; page < 50; page++) {
      const params: Record<string, string> = { category, baseCoin, limit: '1000' };
      if (cursor) params['cursor'] = cursor;
      const body = await this.rest.get('/v5/market/instruments-info', params);
      const r = normalizeBybitInstruments(body, this.clock.now());
      for (const d of r.dropped) if (d.kind !== BybitDropKinds.unsupportedInstrument && d.kind !== BybitDropKinds.inactive) this.out.drops.drop(d.kind, d.detail);
      defs.push(...r.events);
      infos.push(...r.listing);
      if (!r.nextPageCursor || seenCursors.has(r.nextPageCursor)) break;
      seenCursors.add(r.nextPageCursor);
      cursor = r.nextPageCursor;
    }
    return { defs, infos };
  }

  private async loadListing(): Promise<void> {
    const defs: InstrumentDefinition[] = [];
    const infos: BybitListingInfo[] = [];
    for (const p of this.pairs) {
      for (const category of ['option', 'linear'] as const) {
        const r = await this.listingPages(category, p.base);
        defs.push(...r.defs.filter((d) => d.base === p.base && d.quote === p.quote));
        infos.push(...r.infos.filter((i) => samePair(i.instrument.pair, p)));
      }
    }
    const now = this.clock.now();
    const live = (s: BybitSymbol): boolean => s.expirationTimestamp === null || s.expirationTimestamp > now;
    this.listing.clear();
    for (const i of infos) if (live(i.instrument)) this.listing.set(i.instrument.name, i);
    this.normalizer.registerListing(this.listing.values());
    for (const d of defs) {
      if (!this.listing.has(d.instrument) || this.announced.has(d.instrument)) continue;
      this.announced.add(d.instrument);
      this.emit(d);
    }
    for (const name of [...this.announced]) if (!this.listing.has(name)) this.announced.delete(name);
    this.listingLoaded = true;
    if (!this.stopped) this.assignTopics();
  }

  private async refreshListing(): Promise<void> {
    if (!this.listingLoaded || this.stopped) return;
    try {
      await this.loadListing();
    } catch (e) {
      if (!this.stopped) this.logger.warn({ source: this.source, err: errorMessage(e) }, 'Bybit listing refresh failed');
    }
  }

  /** Funding history of every listed USDC perpetual over the last `windowS`, paged back with endTime. */
  private async loadFundingHistory(windowS: number): Promise<void> {
    const nowMs = Math.floor(this.clock.now() * 1000);
    const startMs = nowMs - windowS * 1000;
    for (const info of this.listing.values()) {
      if (info.instrument.type !== 'perpetual') continue;
      const symbol = info.instrument.name;
      const items = await pageBackwards({
        maxPages: 20,
        pageLimit: 200,
        startMs,
        fetchPage: async (oldestMs) => {
          const body = await this.rest.get('/v5/market/funding/history', {
            category: 'linear',
            symbol,
            startTime: String(startMs),
            endTime: String(oldestMs === undefined ? nowMs : oldestMs - 1),
            limit: '200',
          });
          const r = bybitRestList(body);
          return r.ok ? r.list : [];
        },
        timeOf: (x) => Number((x as Record<string, unknown> | null)?.['fundingRateTimestamp']),
      });
      const r = normalizeBybitFundingHistory(items, info.fundingIntervalHours);
      for (const d of r.dropped) this.out.drops.drop(d.kind, d.detail);
      for (const ev of r.events) {
        if (ev.timestamp * 1000 < startMs) continue;
        if (this.normalizer.noteFunding(ev.instrumentId, ev.timestamp)) this.emit(ev);
      }
    }
  }

  private async fundingCatchUp(): Promise<void> {
    if (!this.listingLoaded || this.stopped) return;
    try {
      await this.loadFundingHistory(this.fundingCatchUpS);
    } catch (e) {
      if (!this.stopped) this.logger.warn({ source: this.source, err: errorMessage(e) }, 'Bybit funding catch-up failed');
    }
  }
}
