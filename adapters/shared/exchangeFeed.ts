/**
 * ExchangeFeed: the one {@link MarketFeed} skeleton of the exchange adapters, driven by an
 * {@link ExchangeDescription} (adapters/deribit, okx, bybit `feed.ts` each supply one). The feed owns:
 * - the sockets: one or more streams ({@link StreamDescription}: URL, client heartbeat, silence watchdog),
 *   each on adapters/shared/transport.ts (reconnect with full-jitter backoff); a stream's topics are
 *   spread over as many sockets as its limits need (`shard`), or held on one;
 * - subscriptions: the description says which topics it wants ({@link ExchangeDescription.topics}); the
 *   feed diffs them against what each socket was sent and hands the difference to the description's
 *   subscribe-message builder ({@link ExchangeDescription.sendSubscriptions}); every (re)connect
 *   starts from nothing sent;
 * - status: FeedStatus `connected` once every socket is open, `disconnected` (data stale, nothing erased)
 *   as soon as one drops, and at stop();
 * - frames: counted, JSON-parsed (a malformed frame is a drop, never a throw), control frames
 *   (answers, heartbeats, acks) given to the description, the rest to its pure normalizer;
 * - the instrument listing: read (REST or socket, the description's call), live definitions of the
 *   followed pairs kept, new ones announced (or all again), refreshed every `instrumentRefreshMs`;
 * - funding: the history over `fundingLookbackS` at bootstrap, over `fundingCatchUpS` after a reconnect
 *   of a catch-up stream, and (optionally) the hour just settled when a perpetual ticker crosses a UTC
 *   hour; every point emitted once (deduplicated by instrument and timestamp);
 * - the REST bootstrap (listing, then funding history), retried with a doubling delay until it works;
 * - stats and stop().
 *
 * Source: src/domain/feeds.ts (MarketFeed, FeedStats); docs/architecture.md (feeds after tardis-node's
 * shared realtime-feed base and cryptofeed's endpoint + channel-map descriptions); each exchange's API
 * docs, cited in its description.
 */
import type { Observable, Subscription } from 'rxjs';
import type { FundingRate, InstrumentDefinition, MarketEvent } from '../../src/domain/events.js';
import { systemClock, type Clock } from '../../src/domain/clock.js';
import { SUPPORTED_PAIRS, pairLabel, type Pair, type Source } from '../../src/domain/markets.js';
import type { FeedStats, MarketFeed, NormalizeResult } from '../../src/domain/feeds.js';
import { FeedOutput, TrackedTimers } from './feedKit.js';
import { errorMessage } from './normalizeKit.js';
import { PacedRestClient, RestError, retryUntilDone, type PacedRestClientOptions } from './rest.js';
import {
  ReconnectingTransport,
  silentLogger,
  type Logger,
  type OpenContext,
  type ReconnectingTransportOptions,
  type TransportHeartbeat,
  type TransportStateChange,
} from './transport.js';

/** Options every exchange feed accepts (each exchange adds its own; defaults are the description's). */
export interface ExchangeFeedOptions {
  /** Pairs to follow, among the exchange's row of SUPPORTED_PAIRS (src/domain/markets.ts). Default all. Others throw. */
  readonly pairs?: readonly Pair[];
  /** Re-read the instrument listing this often, ms; 0 disables. Default 600 000 (10 min). */
  readonly instrumentRefreshMs?: number;
  /** Funding history bootstrap window, s. Default 7 days. */
  readonly fundingLookbackS?: number;
  /** Exchanges that fetch the hour just settled (Deribit): wait between attempts while it is not published, ms. Default 60 000. */
  readonly fundingRetryMs?: number;
  /** Exchanges that fetch the hour just settled: attempts. Default 5. */
  readonly fundingAttempts?: number;
  /** pino-like logger. Default silent. */
  readonly logger?: Logger;
  /** Clock for receive times, status timestamps and the funding window (Unix s). Default wall clock. */
  readonly clock?: Clock;
  /** Transport overrides (backoff, random, timers), mainly for tests. */
  readonly transport?: Partial<Omit<ReconnectingTransportOptions, 'url' | 'onOpen' | 'silenceTimeoutMs' | 'heartbeat'>>;
}

/** Options of an exchange whose listing and funding history come over REST (OKX, Bybit). */
export interface RestFeedOptions extends ExchangeFeedOptions {
  /** REST base URL (no trailing slash needed). Default the exchange's production base. */
  readonly baseUrl?: string;
  /** fetch implementation. Default the global fetch (Node >= 18). */
  readonly fetch?: typeof fetch;
  /** Funding window re-read after a reconnect, s. Default 2 days. */
  readonly fundingCatchUpS?: number;
  /** REST request timeout, ms. Default 10 000. */
  readonly restTimeoutMs?: number;
  /** Minimum spacing of REST requests, ms (the exchange's rate limit). Default the description's. */
  readonly restPacingMs?: number;
  /** First retry delay of a failed REST bootstrap, ms (doubles up to 60 s). Default 5 000. */
  readonly restRetryMs?: number;
}

/** One kind of socket of an exchange (Bybit: `option` and `linear`; Deribit, OKX: one). */
export interface StreamDescription {
  /** Key of the stream, as used in {@link ExchangeDescription.topics}. */
  readonly key: string;
  /** WebSocket URL. */
  readonly url: string;
  /** Transport name (log label) of the stream's `index`-th socket (0-based). */
  readonly name: (index: number) => string;
  /** Reconnect a socket silent for this long, ms. */
  readonly silenceTimeoutMs: number;
  /** Client heartbeat frame (OKX `ping`, Bybit `{"op":"ping"}`); none for a server-driven one (Deribit). */
  readonly heartbeat?: TransportHeartbeat;
  /** Open a socket at start(), before any listing (else once the stream has topics). */
  readonly eager?: boolean;
  /** Spread topics over sockets: at most `maxTopics` topics and `maxChars` topic characters each. */
  readonly shard?: { readonly maxTopics: number; readonly maxChars: number };
  /** One socket only: warn when its topics exceed this many characters. */
  readonly warnChars?: number;
  /** Re-read `fundingCatchUpS` of funding history when a socket of this stream reconnects. */
  readonly catchUpOnReconnect?: boolean;
  /** Subscribe/unsubscribe frames allowed per socket per rolling hour (OKX: 480); a frame over it waits. */
  readonly requestsPerHour?: number;
}

/** One socket of an {@link ExchangeFeed}, with the topics it should carry and those it was sent. */
export interface FeedConnection {
  readonly name: string;
  readonly stream: StreamDescription;
  readonly transport: ReconnectingTransport;
  /** Topics wanted on this socket, in subscription order. */
  readonly desired: Set<string>;
  /** Topics sent (subscribe requests) on the current socket; cleared on every (re)connect. */
  readonly sent: Set<string>;
  /** Characters of `desired`. */
  chars: number;
  /** Send times (ms, wall clock) of subscribe/unsubscribe frames on the current socket. */
  requestTimes: number[];
  /** The open socket; undefined between sockets. */
  ctx: OpenContext | undefined;
  open: boolean;
}

/** The REST side of a description (OKX, Bybit). */
export interface RestDescription {
  /** Production REST base URL. */
  readonly baseUrl: string;
  /** Default minimum spacing of requests, ms. */
  readonly pacingMs: number;
  /** HTTP statuses meaning "rate limited" (their Retry-After is honoured). */
  readonly rateLimitStatuses: readonly number[];
  /** Wait after a rate-limit status without Retry-After, ms. */
  readonly defaultRetryAfterMs: number;
  /** Throws a {@link RestError} for an exchange-level error in a parsed body. */
  readonly checkBody: PacedRestClientOptions['checkBody'];
}

/** Funding points read from the exchange, and the items the normalizer could not read. */
export interface FundingBatch {
  readonly events: readonly FundingRate[];
  readonly dropped: ReadonlyArray<{ readonly kind: string; readonly detail: string }>;
  /** Only points at or after this time are kept (Unix ms); absent: all. */
  readonly sinceMs?: number;
}

/**
 * What an exchange supplies to {@link ExchangeFeed}: endpoints, channel map, subscribe messages,
 * heartbeat form, listing and funding calls, and its pure normalizer. Hooks receive the feed.
 */
export interface ExchangeDescription {
  readonly source: Source;
  /** The sockets (see {@link StreamDescription}). */
  readonly streams: readonly StreamDescription[];
  /** REST client settings, when the listing or funding history comes over REST. */
  readonly rest?: RestDescription;
  /**
   * The listing and funding are read on the socket (Deribit JSON-RPC). Each socket then runs a session: the
   * {@link handshake}; the first time the listing (every definition announced), later an immediate
   * resubscription from the known instruments (expired ones left out) with the listing re-read in the
   * background (all announced again); then the funding history. A failed session reconnects its socket.
   * The periodic refresh waits for an open socket.
   */
  readonly listingOnSocket?: boolean;
  /** The first requests of a `listingOnSocket` session (Deribit: public/set_heartbeat). */
  handshake?(feed: ExchangeFeed, conn: FeedConnection): Promise<void>;
  /** Run the REST bootstrap (listing, then funding history) at start(). */
  readonly restBootstrap?: boolean;
  /** Topics wanted now, by stream key, in subscription order. */
  topics(feed: ExchangeFeed): ReadonlyMap<string, readonly string[]>;
  /**
   * The subscribe message builder: the frames that (un)subscribe `topics`, each with the topics it carries.
   * The feed sends them in order (subscribe first, or unsubscribe first with `unsubscribeFirst`), within the
   * stream's `requestsPerHour`, and keeps `sent` up to date.
   */
  subscribeFrames?(op: 'subscribe' | 'unsubscribe', topics: readonly string[]): Array<{ readonly frame: string; readonly topics: readonly string[] }>;
  /** Send unsubscribe frames before subscribe frames. */
  readonly unsubscribeFirst?: boolean;
  /** Instead of frames: send the requests for `toSub`/`toUnsub` on `conn` and update `conn.sent` (Deribit's answered JSON-RPC). */
  sendSubscriptions?(feed: ExchangeFeed, conn: FeedConnection, toSub: readonly string[], toUnsub: readonly string[]): Promise<void>;
  /** A socket opened (`conn.sent` cleared), before its subscriptions are synced (or its session runs). */
  onOpen?(feed: ExchangeFeed, conn: FeedConnection): void;
  /** A socket closed (or stop()). */
  onClosed?(feed: ExchangeFeed, conn: FeedConnection, reason: string): void;
  /** A raw text frame before JSON parsing; true when consumed (OKX's text `pong`). */
  rawFrame?(feed: ExchangeFeed, text: string): boolean;
  /** A parsed frame before normalizing; true when consumed (RPC answers, heartbeats). */
  controlFrame?(feed: ExchangeFeed, msg: unknown, conn: FeedConnection): boolean;
  /** The exchange's pure normalizer (never throws). */
  normalize(msg: unknown, receivedAtS: number): NormalizeResult;
  /** Called with a normalizer result after its events are published (logging of subscription errors). */
  afterNormalize?(feed: ExchangeFeed, r: NormalizeResult): void;
  /** Read the listing: definitions of any pair (the feed keeps the followed, live ones); drops counted by the description. */
  listing(feed: ExchangeFeed): Promise<InstrumentDefinition[]>;
  /** The live definitions of the followed pairs after each listing (register them in the normalizer). */
  onListing?(feed: ExchangeFeed, live: readonly InstrumentDefinition[]): void;
  /** Funding history of the followed perpetuals over the last `windowS` seconds, a batch per perpetual (each emitted as it comes). */
  fundingHistory(feed: ExchangeFeed, windowS: number): AsyncIterable<FundingBatch>;
  /** Funding points around the hour just settled at `boundaryS` (Deribit: perpetual tickers trigger it). */
  settledFunding?(feed: ExchangeFeed, instrumentId: string, pair: Pair, boundaryS: number): Promise<FundingBatch>;
  /** Dedup shared with the normalizer's live funding channel: true when (instrument, ts) is new. Default the feed's own set. */
  noteFunding?(instrumentId: string, timestampS: number): boolean;
}

/** Feed-level settings derived from the options (the description's defaults applied). */
export interface ExchangeFeedSettings {
  readonly instrumentRefreshMs: number;
  readonly fundingLookbackS: number;
  readonly fundingCatchUpS: number;
  readonly restRetryMs: number;
  /** Wait between attempts to fetch a just-settled funding hour, ms. */
  readonly fundingRetryMs: number;
  /** Attempts to fetch a just-settled funding hour. */
  readonly fundingAttempts: number;
}

const HOUR_MS = 3_600_000;

function samePair(a: Pair, b: Pair): boolean {
  return a.base === b.base && a.quote === b.quote;
}

/** The generic exchange feed (see the module docstring). */
export class ExchangeFeed implements MarketFeed {
  readonly source: Source;
  /** Hot stream of normalized events, from construction until stop(). */
  readonly events$: Observable<MarketEvent>;
  /** Events, drops and counters. */
  readonly out: FeedOutput;
  readonly pairs: readonly Pair[];
  readonly logger: Logger;
  readonly clock: Clock;
  /** Timers cleared by stop(). */
  readonly timers = new TrackedTimers();
  /** The paced REST client (descriptions with `rest`). */
  readonly rest: PacedRestClient | undefined;
  /** Live instruments of the followed pairs, by name, in listing order. */
  readonly instruments = new Map<string, InstrumentDefinition>();
  private readonly settings: ExchangeFeedSettings;
  private readonly transportOpts: ExchangeFeedOptions['transport'];
  private readonly conns: FeedConnection[] = [];
  private readonly subs: Subscription[] = [];
  private readonly fundingSeen = new Map<string, Set<number>>();
  private readonly perpHour = new Map<string, number>();
  private listingLoaded = false;
  private deferredSync: NodeJS.Timeout | undefined;
  private pongCount = 0;
  private started = false;
  private stopped = false;
  private statusConnected = false;

  constructor(
    readonly description: ExchangeDescription,
    opts: RestFeedOptions & { readonly fundingRetryMs?: number; readonly fundingAttempts?: number },
  ) {
    this.source = description.source;
    const supported = SUPPORTED_PAIRS[this.source];
    this.pairs = opts.pairs ?? supported;
    for (const p of this.pairs) if (!supported.some((q) => samePair(p, q))) throw new Error(`${this.source}: unsupported pair ${pairLabel(p)}`);
    this.logger = opts.logger ?? silentLogger;
    this.clock = opts.clock ?? systemClock;
    this.settings = {
      instrumentRefreshMs: opts.instrumentRefreshMs ?? 600_000,
      fundingLookbackS: opts.fundingLookbackS ?? 7 * 86_400,
      fundingCatchUpS: opts.fundingCatchUpS ?? 2 * 86_400,
      restRetryMs: opts.restRetryMs ?? 5_000,
      fundingRetryMs: opts.fundingRetryMs ?? 60_000,
      fundingAttempts: Math.max(1, opts.fundingAttempts ?? 5),
    };
    this.out = new FeedOutput(this.source, this.logger);
    this.events$ = this.out.events$;
    const r = description.rest;
    this.rest = r
      ? new PacedRestClient({
          baseUrl: opts.baseUrl ?? r.baseUrl,
          fetch: opts.fetch ?? fetch,
          pacingMs: opts.restPacingMs ?? r.pacingMs,
          timeoutMs: opts.restTimeoutMs ?? 10_000,
          timers: this.timers,
          rateLimitStatuses: r.rateLimitStatuses,
          defaultRetryAfterMs: r.defaultRetryAfterMs,
          error: (path, code, message, retryAfterMs, status) => new RestError(path, code, message, retryAfterMs, status),
          checkBody: r.checkBody,
        })
      : undefined;
    this.transportOpts = opts.transport;
    for (const s of description.streams) if (s.eager) this.newConn(s);
  }

  /** Connect (and start the REST bootstrap); keeps reconnecting until stop(). Idempotent. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    for (const c of this.conns) c.transport.start();
    if (this.description.restBootstrap) void this.bootstrap();
    if (this.settings.instrumentRefreshMs > 0) this.timers.interval(() => void this.refreshListing(false), this.settings.instrumentRefreshMs);
  }

  /** Close every socket for good; emits a final `disconnected` status and completes events$. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.rest?.close();
    this.timers.close();
    clearTimeout(this.deferredSync);
    for (const c of this.conns) this.description.onClosed?.(this, c, 'stopped');
    this.setStatus(false, 'stopped');
    await Promise.all(this.conns.map((c) => c.transport.stop()));
    for (const s of this.subs) s.unsubscribe();
    this.out.complete();
  }

  /** Live counters (src/domain/feeds.ts FeedStats); reconnects summed over every socket. */
  stats(): FeedStats {
    const ts = this.conns.map((c) => c.transport);
    return this.out.stats(this.statusConnected, ts.reduce((n, t) => n + t.reconnects, 0), ts);
  }

  /** True once stop() was called. */
  get isStopped(): boolean {
    return this.stopped;
  }

  /** The feed's sockets (diagnostics, descriptions). */
  connections(): readonly FeedConnection[] {
    return this.conns;
  }

  /** Count a normalizer's dropped items, except the `quiet` kinds (expected, e.g. unsupported instruments); returns its events. */
  countDrops<T>(r: { readonly events: readonly T[]; readonly dropped: ReadonlyArray<{ readonly kind: string; readonly detail: string }> }, quiet: readonly string[] = []): readonly T[] {
    for (const d of r.dropped) if (!quiet.includes(d.kind)) this.out.drops.drop(d.kind, d.detail);
    return r.events;
  }

  /** Count one answer to the client heartbeat (descriptions call it). */
  notePong(): void {
    this.pongCount += 1;
  }

  /** Client heartbeat frames sent over every socket, and the answers counted by {@link notePong}. */
  heartbeats(): { pingsSent: number; pongs: number } {
    return { pingsSent: this.conns.reduce((n, c) => n + c.transport.heartbeatsSent, 0), pongs: this.pongCount };
  }

  /** Subscribe/unsubscribe frames sent on `conn`'s current socket within the last hour. */
  requestsLastHour(conn: FeedConnection): number {
    const now = Date.now();
    return conn.requestTimes.filter((t) => t > now - HOUR_MS).length;
  }

  // ---------------------------------------------------------------- sockets and subscriptions

  private newConn(stream: StreamDescription): FeedConnection {
    const name = stream.name(this.conns.filter((c) => c.stream === stream).length);
    const transport = new ReconnectingTransport({
      name,
      logger: this.logger,
      ...this.transportOpts,
      url: stream.url,
      silenceTimeoutMs: stream.silenceTimeoutMs,
      ...(stream.heartbeat ? { heartbeat: stream.heartbeat } : {}),
      onOpen: (ctx) => this.onOpen(conn, ctx),
    });
    const conn: FeedConnection = { name, stream, transport, desired: new Set(), sent: new Set(), chars: 0, requestTimes: [], ctx: undefined, open: false };
    this.conns.push(conn);
    this.subs.push(transport.messages$.subscribe((t) => this.onFrame(t, conn)));
    this.subs.push(transport.states$.subscribe((s) => this.onState(conn, s)));
    if (this.started && !this.stopped) transport.start();
    return conn;
  }

  private onOpen(conn: FeedConnection, ctx: OpenContext): void {
    conn.ctx = ctx;
    conn.sent.clear();
    conn.requestTimes = [];
    this.description.onOpen?.(this, conn);
    void (this.description.listingOnSocket ? this.session(conn, ctx) : this.assignTopics());
    if (conn.stream.catchUpOnReconnect && ctx.connectionId > 1 && this.listingLoaded) void this.loadFundingLogged(this.settings.fundingCatchUpS, 'funding catch-up failed');
  }

  /** A `listingOnSocket` socket's session (see {@link ExchangeDescription.listingOnSocket}). */
  private async session(conn: FeedConnection, ctx: OpenContext): Promise<void> {
    try {
      await this.description.handshake?.(this, conn);
      if (this.listingLoaded) {
        this.forgetExpired();
        await this.assignTopics();
        this.logger.info({ source: this.source, channels: conn.sent.size }, `${this.source} resubscribed from the known instruments; refreshing the listing`);
        void this.refreshListing(true);
      } else await this.loadListing(true);
      await this.loadFunding();
    } catch (e) {
      if (conn.ctx !== ctx || this.stopped) return;
      this.logger.error({ source: this.source, err: errorMessage(e) }, `${this.source} session setup failed; reconnecting`);
      conn.transport.reconnect(`setup failed: ${errorMessage(e)}`);
    }
  }

  private onState(conn: FeedConnection, s: TransportStateChange): void {
    if (s.state === 'open') {
      conn.open = true;
      if (this.conns.every((c) => c.open)) this.setStatus(true);
    } else if (s.state === 'closed') {
      conn.open = false;
      conn.ctx = undefined;
      conn.sent.clear();
      conn.requestTimes = [];
      clearTimeout(this.deferredSync);
      this.deferredSync = undefined;
      const reason = s.reason ?? 'closed';
      this.description.onClosed?.(this, conn, reason);
      this.setStatus(false, this.description.streams.length > 1 ? `${conn.name}: ${reason}` : reason);
    }
  }

  private setStatus(connected: boolean, reason?: string): void {
    if (this.statusConnected === connected) return;
    this.statusConnected = connected;
    if (connected) this.logger.info({ source: this.source }, `${this.source} connected`);
    const timestamp = this.clock.now();
    this.out.emit(connected ? { kind: 'status', source: this.source, state: 'connected', timestamp } : { kind: 'status', source: this.source, state: 'disconnected', reason: reason ?? 'closed', timestamp });
  }

  /** Send what `conn` should carry and was not sent; unsubscribe what it no longer should. */
  sync(conn: FeedConnection): Promise<void> {
    if (!conn.ctx || this.stopped) return Promise.resolve();
    const toSub = [...conn.desired].filter((t) => !conn.sent.has(t));
    const toUnsub = [...conn.sent].filter((t) => !conn.desired.has(t));
    if (toSub.length === 0 && toUnsub.length === 0) return Promise.resolve();
    if (this.description.sendSubscriptions) return this.description.sendSubscriptions(this, conn, toSub, toUnsub);
    const steps = [['subscribe', toSub] as const, ['unsubscribe', toUnsub] as const];
    for (const [op, topics] of this.description.unsubscribeFirst ? steps.reverse() : steps) {
      if (topics.length > 0 && !this.sendFrames(conn, op, topics)) break;
    }
    return Promise.resolve();
  }

  /** Send the frames of one op; false when the socket went or the hourly budget is spent (a later sync is scheduled). */
  private sendFrames(conn: FeedConnection, op: 'subscribe' | 'unsubscribe', topics: readonly string[]): boolean {
    const perHour = conn.stream.requestsPerHour ?? Infinity;
    for (const f of this.description.subscribeFrames?.(op, topics) ?? []) {
      const nowMs = Date.now();
      conn.requestTimes = conn.requestTimes.filter((t) => t > nowMs - HOUR_MS);
      if (conn.requestTimes.length >= perHour) {
        this.syncLater((conn.requestTimes[0] ?? nowMs) + HOUR_MS - nowMs, perHour);
        return false;
      }
      if (!conn.ctx?.send(f.frame)) return false;
      if (perHour !== Infinity) conn.requestTimes.push(nowMs);
      for (const t of f.topics) conn.sent[op === 'subscribe' ? 'add' : 'delete'](t);
    }
    return true;
  }

  private syncLater(ms: number, perHour: number): void {
    if (this.deferredSync || this.stopped) return;
    this.logger.warn({ source: this.source, waitMs: Math.round(ms), perHour }, `${this.source} subscribe budget exhausted on this connection; deferring`);
    this.deferredSync = setTimeout(() => {
      this.deferredSync = undefined;
      void this.assignTopics();
    }, Math.max(10, ms));
  }

  /** Put the description's topics on the sockets (sharded streams: first socket with room), then sync every socket. */
  assignTopics(): Promise<void> {
    const wanted = this.description.topics(this);
    for (const stream of this.description.streams) {
      const topics = wanted.get(stream.key) ?? [];
      const own = this.conns.filter((c) => c.stream === stream);
      if (stream.shard) this.placeSharded(stream, stream.shard, own, topics);
      else {
        const conn = own[0] ?? (topics.length > 0 ? this.newConn(stream) : undefined);
        if (!conn) continue;
        conn.desired.clear();
        for (const t of topics) conn.desired.add(t);
        conn.chars = topics.reduce((n, t) => n + t.length, 0);
        if (stream.warnChars !== undefined && conn.chars > stream.warnChars) this.logger.warn({ source: this.source, chars: conn.chars }, `${conn.name}: topics exceed the per-connection character limit`);
      }
    }
    return Promise.all(this.conns.map((c) => this.sync(c))).then(() => undefined);
  }

  private placeSharded(stream: StreamDescription, lim: NonNullable<StreamDescription['shard']>, own: FeedConnection[], topics: readonly string[]): void {
    const want = new Set(topics);
    for (const c of own) {
      for (const t of [...c.desired]) {
        if (want.has(t)) continue;
        c.desired.delete(t);
        c.chars -= t.length;
      }
    }
    const placed = new Set(own.flatMap((c) => [...c.desired]));
    for (const t of [...want].sort()) {
      if (placed.has(t)) continue;
      let conn = own.find((c) => c.desired.size < lim.maxTopics && c.chars + t.length <= lim.maxChars);
      if (!conn) {
        conn = this.newConn(stream);
        own.push(conn);
      }
      conn.desired.add(t);
      conn.chars += t.length;
    }
  }

  // ---------------------------------------------------------------- frames

  private onFrame(text: string, conn: FeedConnection): void {
    const receivedAt = this.clock.now();
    this.out.countFrame(receivedAt);
    if (this.description.rawFrame?.(this, text)) return;
    const parsed = this.out.parseFrame(text);
    if (!parsed.ok) return;
    if (this.description.controlFrame?.(this, parsed.msg, conn)) return;
    const r = this.description.normalize(parsed.msg, receivedAt);
    if (r.ok) {
      for (const ev of r.events) {
        this.out.emit(ev);
        if (ev.kind === 'future' && ev.perpetual && this.description.settledFunding) this.onPerpetualTicker(ev.instrument, { base: ev.base, quote: ev.quote }, ev.timestamp);
      }
    } else this.out.drops.drop(r.kind, r.detail);
    this.description.afterNormalize?.(this, r);
  }

  // ---------------------------------------------------------------- listing

  /** True once a listing was read. */
  get hasListing(): boolean {
    return this.listingLoaded;
  }

  /**
   * Read the listing and reconcile: keep the live definitions of the followed pairs, announce the new
   * ones (`announceAll`: every one again), then place the topics and sync the sockets. Returns the
   * instrument names added and removed.
   * @throws what the description's listing call throws (REST or RPC errors)
   */
  async loadListing(announceAll: boolean): Promise<{ added: string[]; removed: string[] }> {
    const defs = await this.description.listing(this);
    const now = this.clock.now();
    const live = defs.filter((d) => this.pairs.some((p) => p.base === d.base && p.quote === d.quote) && (d.expirationTimestamp === null || d.expirationTimestamp > now));
    const liveNames = new Set(live.map((d) => d.instrument));
    const removed = [...this.instruments.keys()].filter((n) => !liveNames.has(n));
    for (const n of removed) this.instruments.delete(n);
    const added: string[] = [];
    for (const d of live) {
      const isNew = !this.instruments.has(d.instrument);
      this.instruments.set(d.instrument, d);
      if (isNew) added.push(d.instrument);
      if (announceAll || isNew) this.out.emit(d);
    }
    this.description.onListing?.(this, live);
    const wasLoaded = this.listingLoaded;
    this.listingLoaded = true;
    if (wasLoaded && (added.length > 0 || removed.length > 0)) this.logger.info({ source: this.source, added: added.length, removed: removed.length }, `${this.source} instrument listing changed`);
    if (!this.stopped) await this.assignTopics();
    return { added, removed };
  }

  /** Drop known instruments expired by now (a reconnect resubscribes only the others). */
  forgetExpired(): void {
    const now = this.clock.now();
    for (const [name, d] of this.instruments) if (d.expirationTimestamp !== null && d.expirationTimestamp <= now) this.instruments.delete(name);
  }

  /** The periodic (or, with `announceAll`, post-reconnect) listing refresh; failures are logged. */
  async refreshListing(announceAll: boolean): Promise<void> {
    if (!this.listingLoaded || this.stopped) return;
    if (this.description.listingOnSocket && !this.conns.some((c) => c.open)) return;
    try {
      await this.loadListing(announceAll);
    } catch (e) {
      if (!this.stopped) this.logger.warn({ source: this.source, err: errorMessage(e) }, `${this.source} listing refresh failed`);
    }
  }

  // ---------------------------------------------------------------- funding

  /** Funding history over the last `windowS` (default the bootstrap window), each point emitted once. @throws the description's call errors */
  async loadFunding(windowS: number = this.settings.fundingLookbackS): Promise<void> {
    for await (const b of this.description.fundingHistory(this, windowS)) this.emitFunding(b);
  }

  private async loadFundingLogged(windowS: number, what: string): Promise<void> {
    try {
      await this.loadFunding(windowS);
    } catch (e) {
      if (!this.stopped) this.logger.warn({ source: this.source, err: errorMessage(e) }, `${this.source} ${what}`);
    }
  }

  /** Emit the points not emitted before; returns the timestamps (s) present per instrument. */
  private emitFunding(b: FundingBatch): Map<string, Set<number>> {
    this.countDrops(b);
    const present = new Map<string, Set<number>>();
    for (const ev of b.events) {
      if (b.sinceMs !== undefined && ev.timestamp * 1000 < b.sinceMs) continue;
      present.set(ev.instrumentId, (present.get(ev.instrumentId) ?? new Set()).add(ev.timestamp));
      if (this.noteFunding(ev.instrumentId, ev.timestamp)) this.out.emit(ev);
    }
    return present;
  }

  private noteFunding(instrumentId: string, ts: number): boolean {
    if (this.description.noteFunding) return this.description.noteFunding(instrumentId, ts);
    let seen = this.fundingSeen.get(instrumentId);
    if (!seen) this.fundingSeen.set(instrumentId, (seen = new Set()));
    if (seen.has(ts)) return false;
    seen.add(ts);
    const lookbackS = this.settings.fundingLookbackS;
    if (seen.size > 2 * (lookbackS / 3600) + 48) {
      const horizon = this.clock.now() - lookbackS - 86_400;
      for (const t of seen) if (t < horizon) seen.delete(t);
    }
    return true;
  }

  /** A perpetual ticker: when its timestamp enters a new UTC hour, fetch the hour just settled. */
  private onPerpetualTicker(instrument: string, pair: Pair, timestampS: number): void {
    const hour = Math.floor(timestampS / 3600);
    const prev = this.perpHour.get(instrument);
    if (prev !== undefined && hour <= prev) return;
    this.perpHour.set(instrument, hour);
    if (prev === undefined || !this.pairs.some((p) => samePair(p, pair))) return;
    void this.fetchSettledHour(instrument, pair, hour * 3600, 1);
  }

  private async fetchSettledHour(instrumentId: string, pair: Pair, boundaryS: number, attempt: number): Promise<void> {
    const settled = this.description.settledFunding;
    if (!settled || this.stopped || !this.conns.some((c) => c.open)) return;
    let published = false;
    try {
      published = this.emitFunding(await settled(this, instrumentId, pair, boundaryS)).get(instrumentId)?.has(boundaryS) ?? false;
      published ||= this.fundingSeen.get(instrumentId)?.has(boundaryS) ?? false;
    } catch (e) {
      this.logger.warn({ source: this.source, instrumentId, err: errorMessage(e) }, `${this.source} funding fetch failed`);
    }
    if (!published && attempt < this.settings.fundingAttempts && !this.stopped) {
      this.timers.timeout(() => void this.fetchSettledHour(instrumentId, pair, boundaryS, attempt + 1), this.settings.fundingRetryMs);
    }
  }

  // ---------------------------------------------------------------- REST bootstrap

  /** Listing then funding history; retried with doubling delay until it succeeds or stop(). */
  private bootstrap(): Promise<void> {
    return retryUntilDone(
      async () => {
        await this.loadListing(false);
        await this.loadFunding();
      },
      {
        firstDelayMs: this.settings.restRetryMs,
        timers: this.timers,
        isStopped: () => this.stopped,
        onFailure: (e, retryInMs) => this.logger.warn({ source: this.source, err: errorMessage(e), retryInMs }, `${this.source} REST bootstrap failed; retrying`),
      },
    );
  }
}
