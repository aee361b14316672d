/**
 * DeribitFeed: the Deribit API v2 JSON-RPC WebSocket feed (live, or the simulator: only the URL differs).
 *
 * On the first connect, in this order (docs.deribit.com; see README.md beside this file):
 * 1. `public/set_heartbeat {interval}` (>= 10 s); every later `heartbeat` `test_request` is answered
 *    with `public/test` (the server closes the connection otherwise);
 * 2. `public/get_instruments {currency, kind, expired: false}` for BTC and ETH (kind option, future)
 *    and USDC (kind option, future; filtered to SOL_USDC/XRP_USDC), paced at the method's 1 request/s;
 *    InstrumentDefinition events for the configured pairs;
 * 3. `public/subscribe` in batches of `subscribeBatchSize` channels, paced (~3.3 requests/s sustained):
 *    `ticker.{instrument}.100ms` for every live option, future and perpetual of the configured pairs
 *    and `deribit_price_index.{btc_usd|eth_usd|sol_usdc|xrp_usdc}`;
 * 4. funding bootstrap: `public/get_funding_rate_history` of each configured perpetual over the last
 *    `fundingLookbackS` (hourly points) -> FundingRate events.
 * On a reconnect (instruments already known), fresh data first: `public/set_heartbeat`, then at once
 * `public/subscribe` of the index channels and of every known instrument not expired meanwhile; the listings
 * are re-read in the background (paced as above) and reconciled (definitions announced again, new instruments
 * subscribed, delisted ones unsubscribed); then the funding bootstrap.
 * Then: the instrument listing is re-read every `instrumentRefreshMs` (new instruments subscribed and
 * announced, expired/delisted ones unsubscribed); when a perpetual ticker's timestamp crosses a UTC
 * hour, the just-settled hour's funding point is fetched (retried until published) and emitted once
 * (deduplicated by timestamp across reconnects).
 *
 * A socket loss emits FeedStatus `disconnected` (streams mark data stale; nothing is erased), a
 * (re)connect `connected`. Malformed frames are counted in a DropCounter, never thrown.
 */
import type { Observable, Subscription } from 'rxjs';
import type { FundingRate, InstrumentDefinition, MarketEvent } from '../../src/domain/events.js';
import { systemClock, type Clock } from '../../src/domain/clock.js';
import { SUPPORTED_PAIRS, pairLabel, type Pair } from '../../src/domain/markets.js';
import { FeedOutput, TrackedTimers } from '../shared/feedKit.js';
import { errorMessage } from '../shared/normalizeKit.js';
import {
  ReconnectingTransport,
  silentLogger,
  type Logger,
  type OpenContext,
  type ReconnectingTransportOptions,
  type TransportStateChange,
} from '../shared/transport.js';
import type { FeedStats, MarketFeed } from '../../src/domain/feeds.js';
import { indexNameOf, parseInstrumentName, perpetualOf, type DeribitInstrument } from './instruments.js';
import { DropKinds, normalizeDeribit, normalizeFundingHistory, normalizeInstrumentList } from './normalize.js';
import { RpcErrorObjectSchema, SubscribeResultSchema, rpcRequest } from './wire.js';

/** Deribit production WebSocket endpoint. */
export const DERIBIT_WS_URL = 'wss://www.deribit.com/ws/api/v2';
/** Minimum heartbeat interval Deribit accepts, seconds (public/set_heartbeat). */
export const DERIBIT_MIN_HEARTBEAT_S = 10;
/** Deribit's "too many requests" error code (docs: articles/errors). */
export const DERIBIT_TOO_MANY_REQUESTS = 10028;

export interface DeribitFeedOptions {
  /** WebSocket URL. Default {@link DERIBIT_WS_URL}; the simulator's `ws://127.0.0.1:port/ws/api/v2` in `simulated`. */
  readonly url?: string;
  /** Pairs to follow, among BTC/USD, ETH/USD, SOL/USDC, XRP/USDC. Default all four. Others throw. */
  readonly pairs?: readonly Pair[];
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
  /** Re-read the instrument listing this often, ms; 0 disables. Default 600 000 (10 min). */
  readonly instrumentRefreshMs?: number;
  /** Funding bootstrap window, s. Default 7 days. */
  readonly fundingLookbackS?: number;
  /** Wait between attempts to fetch a just-settled funding hour not yet published, ms. Default 60 000. */
  readonly fundingRetryMs?: number;
  /** Attempts to fetch a just-settled funding hour. Default 5. */
  readonly fundingAttempts?: number;
  /**
   * Minimum spacing of rate-limited requests, ms: subscribe (default 300), get_instruments (default
   * 1 000); and the first wait after a too_many_requests (10028) answer, doubled per retry (default 1 000).
   */
  readonly pacing?: { readonly subscribeMs?: number; readonly getInstrumentsMs?: number; readonly rateLimitRetryMs?: number };
  /** pino-like logger. Default silent. */
  readonly logger?: Logger;
  /** Clock for receive times, status timestamps and the funding window (Unix s). Default wall clock. */
  readonly clock?: Clock;
  /** Transport overrides (backoff, random, timers), mainly for tests. */
  readonly transport?: Partial<Omit<ReconnectingTransportOptions, 'url' | 'onOpen' | 'silenceTimeoutMs'>>;
}

/** A JSON-RPC error answered by Deribit. */
export class DeribitRpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
  ) {
    super(`${method}: ${code} ${message}`);
    this.name = 'DeribitRpcError';
  }
}

interface Pending {
  readonly method: string;
  readonly resolve: (result: unknown) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/** The currency values of public/get_instruments that hold a pair's instruments. */
function listingCurrency(p: Pair): string {
  return p.quote === 'USDC' ? 'USDC' : p.base;
}

function samePair(a: Pair, b: Pair): boolean {
  return a.base === b.base && a.quote === b.quote;
}

/** Deribit {@link MarketFeed} (see the module docstring). */
export class DeribitFeed implements MarketFeed {
  readonly source = 'DERIBIT' as const;
  private readonly out: FeedOutput;
  /** Hot stream of normalized events, from start() until stop(). */
  readonly events$: Observable<MarketEvent>;

  private readonly url: string;
  private readonly pairs: readonly Pair[];
  private readonly heartbeatS: number;
  private readonly batchSize: number;
  private readonly tickerInterval: string;
  private readonly requestTimeoutMs: number;
  private readonly refreshMs: number;
  private readonly fundingLookbackS: number;
  private readonly fundingRetryMs: number;
  private readonly fundingAttempts: number;
  private readonly subscribePacingMs: number;
  private readonly instrumentsPacingMs: number;
  private readonly rateLimitRetryMs: number;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly transport: ReconnectingTransport;
  private readonly subs: Subscription[] = [];

  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  /** Id of the open socket; 0 while disconnected. */
  private cid = 0;
  private statusConnected = false;
  private stopped = false;
  private refreshTimer: NodeJS.Timeout | undefined;
  private readonly timers = new TrackedTimers();
  /** Live instruments of the configured pairs, by name. */
  private readonly instruments = new Map<string, DeribitInstrument>();
  /** Channels the server confirmed on the current socket. */
  private readonly subscribed = new Set<string>();
  /** Funding timestamps (s) already emitted, per perpetual. */
  private readonly fundingSeen = new Map<string, Set<number>>();
  /** Last UTC hour index (floor(ts / 3600)) seen per perpetual ticker. */
  private readonly perpHour = new Map<string, number>();

  constructor(opts: DeribitFeedOptions = {}) {
    this.url = opts.url ?? DERIBIT_WS_URL;
    const pairs = opts.pairs ?? SUPPORTED_PAIRS.DERIBIT;
    for (const p of pairs) {
      if (!SUPPORTED_PAIRS.DERIBIT.some((q) => samePair(p, q))) throw new Error(`DeribitFeed: unsupported pair ${pairLabel(p)}`);
    }
    this.pairs = pairs;
    this.heartbeatS = Math.max(DERIBIT_MIN_HEARTBEAT_S, Math.ceil(opts.heartbeatIntervalS ?? 15));
    this.batchSize = Math.max(1, Math.floor(opts.subscribeBatchSize ?? 200));
    this.tickerInterval = opts.tickerInterval ?? '100ms';
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 10_000;
    this.refreshMs = opts.instrumentRefreshMs ?? 600_000;
    this.fundingLookbackS = opts.fundingLookbackS ?? 7 * 86_400;
    this.fundingRetryMs = opts.fundingRetryMs ?? 60_000;
    this.fundingAttempts = Math.max(1, opts.fundingAttempts ?? 5);
    this.subscribePacingMs = opts.pacing?.subscribeMs ?? 300;
    this.instrumentsPacingMs = opts.pacing?.getInstrumentsMs ?? 1_000;
    this.rateLimitRetryMs = opts.pacing?.rateLimitRetryMs ?? 1_000;
    this.logger = opts.logger ?? silentLogger;
    this.clock = opts.clock ?? systemClock;
    this.out = new FeedOutput(this.source, this.logger);
    this.events$ = this.out.events$;
    this.transport = new ReconnectingTransport({
      name: 'DERIBIT',
      logger: this.logger,
      ...opts.transport,
      url: this.url,
      silenceTimeoutMs: opts.silenceTimeoutMs ?? 3 * this.heartbeatS * 1000,
      onOpen: (ctx) => this.onOpen(ctx),
    });
    this.subs.push(this.transport.messages$.subscribe((text) => this.onFrame(text)));
    this.subs.push(this.transport.states$.subscribe((s) => this.onState(s)));
  }

  /** Connect and keep reconnecting until stop(). */
  start(): void {
    if (this.stopped) return;
    this.transport.start();
  }

  /** Close for good; emits a final `disconnected` status and completes events$. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.endConnection('stopped');
    this.timers.clear();
    await this.transport.stop();
    for (const s of this.subs) s.unsubscribe();
    this.out.complete();
  }

  /** Live counters (src/domain/feeds.ts FeedStats). */
  stats(): FeedStats {
    return this.out.stats(this.statusConnected, this.transport.reconnects, [this.transport]);
  }

  /** Channels confirmed by the server on the current socket (diagnostics). */
  subscribedChannels(): ReadonlySet<string> {
    return this.subscribed;
  }

  /** Names of the live instruments followed (diagnostics). */
  instrumentNames(): string[] {
    return [...this.instruments.keys()];
  }

  // ---------------------------------------------------------------- connection lifecycle

  private onState(s: TransportStateChange): void {
    if (s.state === 'open') {
      this.logger.info({ source: this.source, url: this.url, connectionId: s.connectionId }, 'Deribit connected');
      this.statusConnected = true;
      this.out.emit({ kind: 'status', source: this.source, state: 'connected', timestamp: this.clock.now() });
    } else if (s.state === 'closed') {
      this.endConnection(s.reason ?? 'closed');
    }
  }

  /** Forget the socket's session: reject pending requests, stop timers, emit `disconnected` once. */
  private endConnection(reason: string): void {
    this.cid = 0;
    this.subscribed.clear();
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    this.refreshTimer = undefined;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new Error(`${p.method}: connection closed (${reason})`));
      this.pending.delete(id);
    }
    if (this.statusConnected) {
      this.statusConnected = false;
      this.out.emit({ kind: 'status', source: this.source, state: 'disconnected', reason, timestamp: this.clock.now() });
    }
  }

  private onOpen(ctx: OpenContext): void {
    this.cid = ctx.connectionId;
    void this.session(ctx.connectionId);
  }

  /** The setup sequence of one socket; a failure (timeout, error answer) forces a reconnect. */
  private async session(cid: number): Promise<void> {
    try {
      await this.call(cid, 'public/set_heartbeat', { interval: this.heartbeatS });
      const indexChannels = this.pairs.map((p) => `deribit_price_index.${indexNameOf(p)}`);
      const reconnect = this.instruments.size > 0;
      if (reconnect) {
        // A reconnect: resubscribe at once from the instruments already known (those expired meanwhile left
        // out), then re-read the listings in the background and reconcile (subscribe new, unsubscribe delisted).
        const now = this.clock.now();
        for (const [name, inst] of this.instruments) if (inst.expirationTimestamp !== null && inst.expirationTimestamp <= now) this.instruments.delete(name);
        await this.subscribe(cid, [...indexChannels, ...this.tickerChannels([...this.instruments.keys()])]);
        this.logger.info({ source: this.source, channels: this.subscribed.size }, 'Deribit resubscribed from the known instruments; refreshing the listing');
        void this.refresh(cid, true);
      } else {
        await this.syncInstruments(cid, true);
        await this.subscribe(cid, [...indexChannels, ...this.tickerChannels([...this.instruments.keys()])]);
      }
      if (this.refreshMs > 0 && cid === this.cid) {
        this.refreshTimer = setInterval(() => void this.refresh(cid, false), this.refreshMs);
      }
      await this.bootstrapFunding(cid);
    } catch (e) {
      if (cid !== this.cid || this.stopped) return;
      const err = errorMessage(e);
      this.logger.error({ source: this.source, err }, 'Deribit session setup failed; reconnecting');
      this.transport.reconnect(`setup failed: ${err}`);
    }
  }

  private tickerChannels(names: readonly string[]): string[] {
    return names.map((n) => `ticker.${n}.${this.tickerInterval}`);
  }

  // ---------------------------------------------------------------- instruments

  /**
   * Read the listing; update the live set; emit definitions (all when `emitAll`, else only new).
   * Returns the names added and removed. Listing items outside the configured pairs, combos and
   * unsupported currencies are skipped silently; malformed items count as `bad-instrument`.
   */
  private async syncInstruments(cid: number, emitAll: boolean): Promise<{ added: string[]; removed: string[] }> {
    const currencies = [...new Set(this.pairs.map(listingCurrency))];
    const defs: InstrumentDefinition[] = [];
    let first = true;
    for (const currency of currencies) {
      for (const kind of ['option', 'future'] as const) {
        if (!first) await this.sleep(this.instrumentsPacingMs);
        first = false;
        const result = await this.callPaced(cid, 'public/get_instruments', { currency, kind, expired: false });
        const r = normalizeInstrumentList(result, this.clock.now());
        for (const d of r.dropped) {
          if (d.kind !== DropKinds.combo && d.kind !== DropKinds.unsupportedInstrument && d.kind !== DropKinds.inactive) this.out.drops.drop(d.kind, d.detail);
        }
        defs.push(...r.events);
      }
    }
    const now = this.clock.now();
    const live = defs.filter(
      (d) => this.pairs.some((p) => p.base === d.base && p.quote === d.quote) && (d.expirationTimestamp === null || d.expirationTimestamp > now),
    );
    const liveNames = new Set(live.map((d) => d.instrument));
    const added: string[] = [];
    const removed: string[] = [];
    for (const name of this.instruments.keys()) {
      if (!liveNames.has(name)) {
        this.instruments.delete(name);
        removed.push(name);
      }
    }
    for (const d of live) {
      const isNew = !this.instruments.has(d.instrument);
      if (isNew) {
        const p = parseInstrumentName(d.instrument);
        if (!p.ok) continue;
        this.instruments.set(d.instrument, p.instrument);
        added.push(d.instrument);
      }
      if (emitAll || isNew) this.out.emit(d);
    }
    return { added, removed };
  }

  /**
   * Listing refresh (periodic, and in the background after a reconnect with `emitAll`: every definition is
   * announced again): subscribe new instruments, unsubscribe expired/delisted ones.
   */
  private async refresh(cid: number, emitAll: boolean): Promise<void> {
    if (cid !== this.cid) return;
    try {
      const { added, removed } = await this.syncInstruments(cid, emitAll);
      if (removed.length > 0) await this.unsubscribe(cid, this.tickerChannels(removed));
      if (added.length > 0) await this.subscribe(cid, this.tickerChannels(added));
      if (added.length || removed.length) this.logger.info({ source: this.source, added: added.length, removed: removed.length }, 'Deribit instrument listing changed');
    } catch (e) {
      if (cid !== this.cid || this.stopped) return;
      this.logger.warn({ source: this.source, err: errorMessage(e) }, 'Deribit instrument refresh failed');
    }
  }

  // ---------------------------------------------------------------- subscriptions

  private async subscribe(cid: number, channels: readonly string[]): Promise<void> {
    for (let i = 0; i < channels.length; i += this.batchSize) {
      if (i > 0) await this.sleep(this.subscribePacingMs);
      const batch = channels.slice(i, i + this.batchSize);
      const result = await this.callPaced(cid, 'public/subscribe', { channels: batch });
      const ok = SubscribeResultSchema.safeParse(result);
      if (!ok.success) throw new Error('public/subscribe: result is not a list of channels');
      for (const c of ok.data) this.subscribed.add(c);
      const confirmed = new Set(ok.data);
      const missing = batch.filter((c) => !confirmed.has(c));
      if (missing.length > 0) this.logger.warn({ source: this.source, missing: missing.length, example: missing[0] }, 'Deribit did not confirm some channels');
    }
  }

  private async unsubscribe(cid: number, channels: readonly string[]): Promise<void> {
    for (let i = 0; i < channels.length; i += this.batchSize) {
      if (i > 0) await this.sleep(this.subscribePacingMs);
      const batch = channels.slice(i, i + this.batchSize);
      await this.callPaced(cid, 'public/unsubscribe', { channels: batch });
      for (const c of batch) this.subscribed.delete(c);
    }
  }

  // ---------------------------------------------------------------- funding

  private async bootstrapFunding(cid: number): Promise<void> {
    const endMs = Math.floor(this.clock.now() * 1000);
    const startMs = endMs - this.fundingLookbackS * 1000;
    for (const pair of this.pairs) {
      const instrumentId = perpetualOf(pair);
      const result = await this.callPaced(cid, 'public/get_funding_rate_history', { instrument_name: instrumentId, start_timestamp: startMs, end_timestamp: endMs });
      this.emitFunding(instrumentId, pair, result);
    }
  }

  /** Emit the points of a history result not emitted before; returns the timestamps (s) present. */
  private emitFunding(instrumentId: string, pair: Pair, result: unknown): Set<number> {
    const r = normalizeFundingHistory(result, instrumentId, pair);
    for (const d of r.dropped) this.out.drops.drop(d.kind, d.detail);
    let seen = this.fundingSeen.get(instrumentId);
    if (!seen) {
      seen = new Set();
      this.fundingSeen.set(instrumentId, seen);
    }
    const present = new Set<number>();
    const fresh: FundingRate[] = [];
    for (const ev of r.events) {
      present.add(ev.timestamp);
      if (!seen.has(ev.timestamp)) {
        seen.add(ev.timestamp);
        fresh.push(ev);
      }
    }
    for (const ev of fresh) this.out.emit(ev);
    if (seen.size > 2 * (this.fundingLookbackS / 3600) + 48) {
      const horizon = this.clock.now() - this.fundingLookbackS - 86_400;
      for (const t of seen) if (t < horizon) seen.delete(t);
    }
    return present;
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
    const cid = this.cid;
    if (cid === 0 || this.stopped) return;
    let published = false;
    try {
      const result = await this.call(cid, 'public/get_funding_rate_history', {
        instrument_name: instrumentId,
        start_timestamp: (boundaryS - 2 * 3600) * 1000,
        end_timestamp: boundaryS * 1000,
      });
      published = this.emitFunding(instrumentId, pair, result).has(boundaryS) || (this.fundingSeen.get(instrumentId)?.has(boundaryS) ?? false);
    } catch (e) {
      this.logger.warn({ source: this.source, instrumentId, err: errorMessage(e) }, 'Deribit funding fetch failed');
    }
    if (!published && attempt < this.fundingAttempts && !this.stopped) {
      this.timers.timeout(() => void this.fetchSettledHour(instrumentId, pair, boundaryS, attempt + 1), this.fundingRetryMs);
    }
  }

  // ---------------------------------------------------------------- frames

  private onFrame(text: string): void {
    const receivedAt = this.clock.now();
    this.out.countFrame(receivedAt);
    const parsed = this.out.parseFrame(text);
    if (!parsed.ok) return;
    const msg = parsed.msg;
    if (typeof msg === 'object' && msg !== null && !Array.isArray(msg)) {
      const m = msg as Record<string, unknown>;
      if (('result' in m || 'error' in m) && m['method'] === undefined) {
        this.onResponse(m);
        return;
      }
      if (m['method'] === 'heartbeat') {
        const params = m['params'];
        if (typeof params === 'object' && params !== null && (params as Record<string, unknown>)['type'] === 'test_request') {
          this.answerTestRequest();
        }
        return;
      }
    }
    const r = normalizeDeribit(msg, receivedAt);
    if (!r.ok) {
      this.out.drops.drop(r.kind, r.detail);
      return;
    }
    for (const ev of r.events) {
      this.out.emit(ev);
      if (ev.kind === 'future' && ev.perpetual) this.onPerpetualTicker(ev.instrument, { base: ev.base, quote: ev.quote }, ev.timestamp);
    }
  }

  private onResponse(m: Record<string, unknown>): void {
    const id = m['id'];
    const p = typeof id === 'number' ? this.pending.get(id) : undefined;
    if (!p) {
      this.out.drops.drop('unmatched-response', `id ${JSON.stringify(id)}`);
      return;
    }
    this.pending.delete(id as number);
    clearTimeout(p.timer);
    if ('error' in m) {
      const e = RpcErrorObjectSchema.safeParse(m['error']);
      p.reject(e.success ? new DeribitRpcError(p.method, e.data.code, e.data.message) : new DeribitRpcError(p.method, -1, 'malformed error'));
    } else {
      p.resolve(m['result']);
    }
  }

  private answerTestRequest(): void {
    const cid = this.cid;
    if (cid === 0) return;
    this.call(cid, 'public/test', {}).catch((e: unknown) => {
      this.logger.warn({ source: this.source, err: errorMessage(e) }, 'public/test (heartbeat answer) failed');
    });
  }

  // ---------------------------------------------------------------- JSON-RPC

  /** One JSON-RPC request on socket `cid`, correlated by id, with a timeout. */
  private call(cid: number, method: string, params: Record<string, unknown>): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      if (cid !== this.cid || this.stopped) {
        reject(new Error(`${method}: connection ${cid} is gone`));
        return;
      }
      const id = ++this.nextId;
      const timer = setTimeout(() => {
        if (this.pending.delete(id)) reject(new Error(`${method}: no answer within ${this.requestTimeoutMs} ms`));
      }, this.requestTimeoutMs);
      this.pending.set(id, { method, resolve, reject, timer });
      if (!this.transport.send(rpcRequest(id, method, params))) {
        this.pending.delete(id);
        clearTimeout(timer);
        reject(new Error(`${method}: not connected`));
      }
    });
  }

  /** {@link call}, retried up to 3 times on Deribit's too_many_requests (10028), after 1, 2, 4 x rateLimitRetryMs. */
  private async callPaced(cid: number, method: string, params: Record<string, unknown>): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.call(cid, method, params);
      } catch (e) {
        if (!(e instanceof DeribitRpcError) || e.code !== DERIBIT_TOO_MANY_REQUESTS || attempt >= 3) throw e;
        this.logger.warn({ source: this.source, method, attempt: attempt + 1 }, 'Deribit rate limit; retrying');
        await this.sleep(this.rateLimitRetryMs * 2 ** attempt);
      }
    }
  }

  /** Resolves after `ms` on a tracked timer (cleared by stop(), which abandons the waiting task). */
  private sleep(ms: number): Promise<void> {
    return this.timers.sleep(ms);
  }
}
