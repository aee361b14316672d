/**
 * OkxFeed: the OKX API v5 public feed (live, or the simulator: only the URLs differ).
 *
 * - REST bootstrap (fetch, `baseUrl`): GET /api/v5/public/instruments for instType OPTION, FUTURES
 *   and SWAP of each followed family (`BTC-USD`, `ETH-USD`), paced (OKX: 20 requests / 2 s) ->
 *   InstrumentDefinition events; then GET /api/v5/public/funding-rate-history of each swap, paged
 *   backwards with `after` over `fundingLookbackS` (OKX: 10 requests / 2 s) -> FundingRate events.
 *   A failed bootstrap is retried (5 s doubling to 60 s); the listing is re-read every
 *   `instrumentRefreshMs` (new futures subscribed, delisted ones unsubscribed, new instruments announced).
 * - WebSocket (`url`, one connection on adapters/shared/transport.ts): on every (re)connect,
 *   subscribe `opt-summary` per family, `index-tickers` per family, `mark-price` and `tickers` for
 *   the swap and every listed future, `funding-rate` for the swap. Requests are batched within
 *   OKX's 64 KB per request and counted against its 480 subscribe/unsubscribe requests per hour
 *   per connection: a request over budget waits for the window to free up (never sent early).
 *   The swap's channels are subscribed at once; futures as soon as the listing is known.
 * - Heartbeat: the text `ping` after `pingAfterIdleMs` (25 s) without any inbound frame; OKX answers
 *   `pong`; no traffic for ping + `pongTimeoutMs` (30 s in all, OKX's own limit) -> reconnect.
 * - `event: error` answers are counted (`ws-error`) and logged; `event: notice` 64008 (service
 *   upgrade within 60 s) makes the feed reconnect at once.
 * - A socket loss emits FeedStatus `disconnected` (data stale; nothing erased), a (re)connect
 *   `connected`; after a reconnect the last `fundingCatchUpS` of funding history is read again
 *   (deduplicated) so that a settlement missed while away is not lost. Malformed frames are
 *   counted in a DropCounter, never thrown.
 *
 * Source: OKX API v5 docs (sections in wire.ts); rules summarised in README.md beside this file.
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
import { familyOf, swapOf } from './instruments.js';
import { OkxDropKinds, OkxNormalizer, normalizeOkxFundingHistory, normalizeOkxInstruments } from './normalize.js';
import {
  OKX_MAX_REQUEST_BYTES,
  OKX_REQUESTS_PER_HOUR,
  OkxEventSchema,
  argKey,
  batchOkxRequests,
  type OkxSubscriptionArg,
} from './wire.js';

/** OKX production public WebSocket. */
export const OKX_WS_URL = 'wss://ws.okx.com:8443/ws/v5/public';
/** OKX production REST base. */
export const OKX_REST_URL = 'https://www.okx.com';
const HOUR_MS = 3_600_000;

export interface OkxFeedOptions {
  /** WebSocket URL. Default {@link OKX_WS_URL}. */
  readonly url?: string;
  /** REST base URL (no trailing slash needed). Default {@link OKX_REST_URL}. */
  readonly baseUrl?: string;
  /** Pairs to follow, among OKX's BTC/USD and ETH/USD. Default both. Others throw. */
  readonly pairs?: readonly Pair[];
  /** fetch implementation. Default the global fetch (Node >= 18). */
  readonly fetch?: typeof fetch;
  /** Send the text `ping` after this long without any inbound frame, ms (OKX: N < 30 s). Default 25 000. */
  readonly pingAfterIdleMs?: number;
  /** Wait this long for `pong` (or any frame) after a ping before reconnecting, ms. Default 5 000. */
  readonly pongTimeoutMs?: number;
  /** Bytes per subscribe/unsubscribe request. Default and maximum 65 536 (OKX: 64 KB). */
  readonly maxRequestBytes?: number;
  /** subscribe/unsubscribe requests per connection per rolling hour. Default and maximum 480 (OKX). */
  readonly requestsPerHour?: number;
  /** Re-read the instrument listing this often, ms; 0 disables. Default 600 000. */
  readonly instrumentRefreshMs?: number;
  /** Funding history bootstrap window, s. Default 7 days. */
  readonly fundingLookbackS?: number;
  /** Funding window re-read after a reconnect, s. Default 2 days. */
  readonly fundingCatchUpS?: number;
  /** Points per funding-rate-history page (OKX max 400). Default 100. */
  readonly fundingPageLimit?: number;
  /** At most this many funding history pages per swap. Default 20. */
  readonly fundingMaxPages?: number;
  /** REST request timeout, ms. Default 10 000. */
  readonly restTimeoutMs?: number;
  /** Minimum spacing of REST requests, ms (OKX: 20 req/2 s instruments, 10 req/2 s funding). Default 250. */
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

/** An OKX REST answer with a non-"0" `code`, or an HTTP error (`retryAfterMs`: HTTP 429 Retry-After or code 50011, ms). */
export class OkxRestError extends RestError {
  constructor(path: string, code: string, message: string, retryAfterMs: number | null = null, status: number | null = null) {
    super(path, code, message, retryAfterMs, status);
    this.name = 'OkxRestError';
  }
}

/**
 * Throws {@link OkxRestError} unless the body's `code` is "0" (50011, "rate limit reached", asks for
 * a 1 s wait). Source: #error-code-rest-api-public.
 */
function checkOkxBody(body: unknown, path: string): void {
  const code = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['code'] : undefined;
  if (code !== '0') {
    const msg = String((body as Record<string, unknown> | null)?.['msg'] ?? '');
    throw new OkxRestError(path, String(code), msg, code === '50011' ? 1_000 : null);
  }
}

function samePair(a: Pair, b: Pair): boolean {
  return a.base === b.base && a.quote === b.quote;
}

/** OKX {@link MarketFeed} (see the module docstring). */
export class OkxFeed implements MarketFeed {
  readonly source = 'OKX' as const;
  private readonly out: FeedOutput;
  /** Hot stream of normalized events, from start() until stop(). */
  readonly events$: Observable<MarketEvent>;

  private readonly pairs: readonly Pair[];
  private readonly maxRequestBytes: number;
  private readonly requestsPerHour: number;
  private readonly refreshMs: number;
  private readonly fundingLookbackS: number;
  private readonly fundingCatchUpS: number;
  private readonly fundingPageLimit: number;
  private readonly fundingMaxPages: number;
  private readonly restRetryMs: number;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly transport: ReconnectingTransport;
  private readonly rest: PacedRestClient;
  private readonly normalizer: OkxNormalizer;
  private readonly subs: Subscription[] = [];
  private readonly timers = new TrackedTimers();

  /** Live futures/swaps of the followed pairs, by instId (from the listing). */
  private readonly derivatives = new Map<string, InstrumentDefinition>();
  private readonly announced = new Set<string>();
  private listingLoaded = false;
  /** Arguments sent on the current socket (subscribe requests) and those the server acknowledged. */
  private readonly sent = new Map<string, OkxSubscriptionArg>();
  private readonly acked = new Set<string>();
  /** Send times (ms, wall clock) of subscribe/unsubscribe requests on the current socket. */
  private requestTimes: number[] = [];
  private deferredSync: NodeJS.Timeout | undefined;
  private ctx: OpenContext | undefined;
  private nextReqId = 0;

  private started = false;
  private stopped = false;
  private statusConnected = false;
  private pongCount = 0;

  constructor(opts: OkxFeedOptions = {}) {
    this.pairs = opts.pairs ?? SUPPORTED_PAIRS.OKX;
    for (const p of this.pairs) {
      if (!SUPPORTED_PAIRS.OKX.some((q) => samePair(p, q))) throw new Error(`OKX does not list ${pairLabel(p)}`);
    }
    this.maxRequestBytes = Math.min(opts.maxRequestBytes ?? OKX_MAX_REQUEST_BYTES, OKX_MAX_REQUEST_BYTES);
    this.requestsPerHour = Math.max(1, Math.min(opts.requestsPerHour ?? OKX_REQUESTS_PER_HOUR, OKX_REQUESTS_PER_HOUR));
    this.refreshMs = opts.instrumentRefreshMs ?? 600_000;
    this.fundingLookbackS = opts.fundingLookbackS ?? 7 * 86_400;
    this.fundingCatchUpS = opts.fundingCatchUpS ?? 2 * 86_400;
    this.fundingPageLimit = Math.max(1, Math.min(opts.fundingPageLimit ?? 100, 400));
    this.fundingMaxPages = opts.fundingMaxPages ?? 20;
    this.restRetryMs = opts.restRetryMs ?? 5_000;
    this.logger = opts.logger ?? silentLogger;
    this.clock = opts.clock ?? systemClock;
    this.out = new FeedOutput(this.source, this.logger);
    this.events$ = this.out.events$;
    this.rest = new PacedRestClient({
      baseUrl: opts.baseUrl ?? OKX_REST_URL,
      fetch: opts.fetch ?? fetch,
      pacingMs: opts.restPacingMs ?? 250,
      timeoutMs: opts.restTimeoutMs ?? 10_000,
      timers: this.timers,
      rateLimitStatuses: [429],
      defaultRetryAfterMs: 1_000,
      error: (path, code, message, retryAfterMs, status) => new OkxRestError(path, code, message, retryAfterMs, status),
      checkBody: checkOkxBody,
    });
    this.normalizer = new OkxNormalizer({ onItemDrop: (k, d) => this.out.drops.drop(k, d) });
    const pingMs = opts.pingAfterIdleMs ?? 25_000;
    const pongMs = opts.pongTimeoutMs ?? 5_000;
    this.transport = new ReconnectingTransport({
      name: 'OKX',
      logger: this.logger,
      ...opts.transport,
      url: opts.url ?? OKX_WS_URL,
      silenceTimeoutMs: pingMs + pongMs,
      heartbeat: { intervalMs: pingMs, payload: 'ping', mode: 'idle' },
      onOpen: (ctx) => this.onOpen(ctx),
    });
    this.subs.push(this.transport.messages$.subscribe((t) => this.onFrame(t)));
    this.subs.push(this.transport.states$.subscribe((s) => this.onState(s)));
  }

  /** Start the REST bootstrap and the WebSocket (idempotent). */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.transport.start();
    void this.bootstrap();
    if (this.refreshMs > 0) this.timers.interval(() => void this.refreshListing(), this.refreshMs);
  }

  /** Close for good; emits a final `disconnected` status and completes events$. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.rest.close();
    this.timers.close();
    if (this.deferredSync) clearTimeout(this.deferredSync);
    this.endConnection('stopped');
    await this.transport.stop();
    for (const s of this.subs) s.unsubscribe();
    this.out.complete();
  }

  /** Live counters (src/domain/feeds.ts FeedStats). */
  stats(): FeedStats {
    return this.out.stats(this.statusConnected, this.transport.reconnects, [this.transport]);
  }

  /** Diagnostics: subscription keys (`channel|id`) sent and acknowledged on the current socket, pings and pongs, requests in the last hour. */
  diagnostics(): { sent: string[]; acked: string[]; pingsSent: number; pongs: number; requestsLastHour: number; indexFallbacks: number } {
    const now = Date.now();
    return {
      sent: [...this.sent.keys()].sort(),
      acked: [...this.acked].sort(),
      pingsSent: this.transport.heartbeatsSent,
      pongs: this.pongCount,
      requestsLastHour: this.requestTimes.filter((t) => t > now - HOUR_MS).length,
      indexFallbacks: this.normalizer.indexFallbacks,
    };
  }

  // ---------------------------------------------------------------- connection lifecycle

  private onState(s: TransportStateChange): void {
    if (s.state === 'open') {
      this.statusConnected = true;
      this.emit({ kind: 'status', source: this.source, state: 'connected', timestamp: this.clock.now() });
    } else if (s.state === 'closed') {
      this.endConnection(s.reason ?? 'closed');
    }
  }

  private endConnection(reason: string): void {
    this.ctx = undefined;
    this.sent.clear();
    this.acked.clear();
    this.requestTimes = [];
    if (this.deferredSync) clearTimeout(this.deferredSync);
    this.deferredSync = undefined;
    if (this.statusConnected) {
      this.statusConnected = false;
      this.emit({ kind: 'status', source: this.source, state: 'disconnected', reason, timestamp: this.clock.now() });
    }
  }

  private onOpen(ctx: OpenContext): void {
    this.ctx = ctx;
    this.sent.clear();
    this.acked.clear();
    this.requestTimes = [];
    this.syncSubscriptions();
    // A settlement missed while away: re-read the recent funding history (deduplicated).
    if (ctx.connectionId > 1 && this.listingLoaded) void this.fundingCatchUp();
  }

  private emit(ev: MarketEvent): void {
    this.out.emit(ev);
  }

  // ---------------------------------------------------------------- subscriptions

  /** Every argument the feed wants on the socket now. */
  private desiredArgs(): Map<string, OkxSubscriptionArg> {
    const out = new Map<string, OkxSubscriptionArg>();
    const add = (a: OkxSubscriptionArg): void => void out.set(argKey(a), a);
    for (const p of this.pairs) {
      const family = familyOf(p);
      add({ channel: 'index-tickers', instId: family });
      add({ channel: 'opt-summary', instFamily: family });
      const swap = swapOf(p);
      add({ channel: 'mark-price', instId: swap });
      add({ channel: 'tickers', instId: swap });
      add({ channel: 'funding-rate', instId: swap });
    }
    const now = this.clock.now();
    for (const d of this.derivatives.values()) {
      if (d.type !== 'future' || (d.expirationTimestamp !== null && d.expirationTimestamp <= now)) continue;
      add({ channel: 'mark-price', instId: d.instrument });
      add({ channel: 'tickers', instId: d.instrument });
    }
    return out;
  }

  /** Requests still allowed in the rolling hour on this socket, and when the next slot frees (ms). */
  private budget(nowMs: number): { left: number; freeAt: number } {
    this.requestTimes = this.requestTimes.filter((t) => t > nowMs - HOUR_MS);
    const left = this.requestsPerHour - this.requestTimes.length;
    const freeAt = this.requestTimes.length > 0 ? (this.requestTimes[0] as number) + HOUR_MS : nowMs;
    return { left, freeAt };
  }

  /** Subscribe what is desired and not sent; unsubscribe what is sent and no longer desired (within budget). */
  private syncSubscriptions(): void {
    const ctx = this.ctx;
    if (!ctx || this.stopped) return;
    const desired = this.desiredArgs();
    const toSub = [...desired.entries()].filter(([k]) => !this.sent.has(k)).map(([, a]) => a);
    const toUnsub = [...this.sent.entries()].filter(([k]) => !desired.has(k)).map(([, a]) => a);
    const plan: { op: 'subscribe' | 'unsubscribe'; frames: string[]; batches: OkxSubscriptionArg[][] }[] = [];
    for (const [op, args] of [['subscribe', toSub], ['unsubscribe', toUnsub]] as const) {
      if (args.length === 0) continue;
      const first = this.nextReqId + 1;
      const b = batchOkxRequests(op, args, this.maxRequestBytes, (i) => String(first + i));
      this.nextReqId += b.frames.length;
      plan.push({ op, ...b });
    }
    for (const step of plan) {
      for (let i = 0; i < step.frames.length; i++) {
        const nowMs = Date.now();
        const b = this.budget(nowMs);
        if (b.left <= 0) {
          this.deferSync(b.freeAt - nowMs);
          return;
        }
        if (!ctx.send(step.frames[i] as string)) return;
        this.requestTimes.push(nowMs);
        for (const a of step.batches[i] as OkxSubscriptionArg[]) {
          if (step.op === 'subscribe') this.sent.set(argKey(a), a);
          else {
            this.sent.delete(argKey(a));
            this.acked.delete(argKey(a));
          }
        }
      }
    }
  }

  private deferSync(ms: number): void {
    if (this.deferredSync) return;
    this.logger.warn({ source: this.source, waitMs: Math.round(ms), perHour: this.requestsPerHour }, 'OKX subscribe budget exhausted on this connection; deferring');
    this.deferredSync = setTimeout(() => {
      this.deferredSync = undefined;
      this.syncSubscriptions();
    }, Math.max(10, ms));
  }

  // ---------------------------------------------------------------- frames

  private onFrame(text: string): void {
    const receivedAt = this.clock.now();
    this.out.countFrame(receivedAt);
    if (text === 'pong') {
      this.pongCount += 1;
      return;
    }
    const parsed = this.out.parseFrame(text);
    if (!parsed.ok) return;
    const msg = parsed.msg;
    if (typeof msg === 'object' && msg !== null && typeof (msg as Record<string, unknown>)['event'] === 'string') {
      this.onEvent(msg);
    }
    this.out.publish(this.normalizer.normalize(msg, receivedAt));
  }

  /** Bookkeeping of event answers (the normalizer counts errors). */
  private onEvent(msg: unknown): void {
    const e = OkxEventSchema.safeParse(msg);
    if (!e.success) return;
    const ev = e.data;
    if (ev.event === 'subscribe' && ev.arg) this.acked.add(argKey(ev.arg));
    else if (ev.event === 'error') this.logger.warn({ source: this.source, code: ev.code, msg: ev.msg?.slice(0, 200) }, 'OKX error event');
    else if (ev.event === 'notice') {
      this.logger.warn({ source: this.source, code: ev.code, msg: ev.msg }, 'OKX notice; reconnecting');
      if (ev.code === '64008') this.transport.reconnect(`notice ${ev.code}`);
    }
  }

  // ---------------------------------------------------------------- REST

  /** Instruments then funding history; retried with doubling delay until it succeeds or stop(). */
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
        onFailure: (e, retryInMs) => this.logger.warn({ source: this.source, err: errorMessage(e), retryInMs }, 'OKX REST bootstrap failed; retrying'),
      },
    );
  }

  /**
   * Read OPTION, FUTURES and SWAP listings of every followed family; announce instruments not
   * announced before; update the futures/swaps followed and resubscribe.
   */
  private async loadListing(): Promise<void> {
    const defs: InstrumentDefinition[] = [];
    for (const p of this.pairs) {
      const instFamily = familyOf(p);
      for (const instType of ['OPTION', 'FUTURES', 'SWAP'] as const) {
        const body = await this.rest.get('/api/v5/public/instruments', { instType, instFamily });
        const r = normalizeOkxInstruments(body, this.clock.now());
        for (const d of r.dropped) if (d.kind !== OkxDropKinds.unsupportedInstrument && d.kind !== OkxDropKinds.inactive) this.out.drops.drop(d.kind, d.detail);
        defs.push(...r.events.filter((d) => this.pairs.some((q) => q.base === d.base && q.quote === d.quote)));
      }
    }
    const now = this.clock.now();
    const live = defs.filter((d) => d.expirationTimestamp === null || d.expirationTimestamp > now);
    this.normalizer.registerInstruments(live);
    const liveNames = new Set(live.map((d) => d.instrument));
    for (const name of [...this.derivatives.keys()]) if (!liveNames.has(name)) this.derivatives.delete(name);
    for (const d of live) {
      if (d.type !== 'option') this.derivatives.set(d.instrument, d);
      if (!this.announced.has(d.instrument)) {
        this.announced.add(d.instrument);
        this.emit(d);
      }
    }
    for (const name of [...this.announced]) if (!liveNames.has(name)) this.announced.delete(name);
    this.listingLoaded = true;
    this.syncSubscriptions();
  }

  private async refreshListing(): Promise<void> {
    if (!this.listingLoaded || this.stopped) return;
    try {
      await this.loadListing();
    } catch (e) {
      if (!this.stopped) this.logger.warn({ source: this.source, err: errorMessage(e) }, 'OKX listing refresh failed');
    }
  }

  private async fundingCatchUp(): Promise<void> {
    try {
      await this.loadFundingHistory(this.fundingCatchUpS);
    } catch (e) {
      if (!this.stopped) this.logger.warn({ source: this.source, err: errorMessage(e) }, 'OKX funding catch-up failed');
    }
  }

  /** Funding history of each followed swap over the last `windowS`, paged backwards with `after`. */
  private async loadFundingHistory(windowS: number): Promise<void> {
    const startMs = (this.clock.now() - windowS) * 1000;
    for (const p of this.pairs) {
      const instId = swapOf(p);
      const items = await pageBackwards({
        maxPages: this.fundingMaxPages,
        pageLimit: this.fundingPageLimit,
        startMs,
        fetchPage: async (oldestMs) => {
          const params: Record<string, string> = { instId, limit: String(this.fundingPageLimit) };
          if (oldestMs !== undefined) params['after'] = String(oldestMs);
          const body = (await this.rest.get('/api/v5/public/funding-rate-history', params)) as { data?: unknown[] };
          return Array.isArray(body.data) ? body.data : [];
        },
        timeOf: (x) => Number((x as Record<string, unknown> | null)?.['fundingTime']),
      });
      const r = normalizeOkxFundingHistory(items);
      for (const d of r.dropped) this.out.drops.drop(d.kind, d.detail);
      for (const ev of r.events) {
        if (ev.timestamp * 1000 < startMs) continue;
        if (this.normalizer.noteFunding(ev.instrumentId, ev.timestamp)) this.emit(ev);
      }
    }
  }
}
