/**
 * One reconnecting WebSocket client transport, shared by the exchange adapters (Deribit now, OKX
 * and Bybit later). It only moves text frames: the adapter subscribes in `onOpen`, parses frames
 * from `messages$`, and reacts to `states$`.
 *
 * Behaviour (after tardis-node's `src/realtimefeeds/realtimefeed.ts` and cryptofeed's no-message
 * watchdog, docs/architecture.md):
 * - reconnect forever until {@link ReconnectingTransport.stop}, with capped exponential backoff
 *   and FULL jitter: delay(n) = min(2^(n-1) * baseMs, maxMs) * random(), n = consecutive failed
 *   connections (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015, "Full Jitter");
 *   n resets to 0 when a connection closes after carrying messages for at least `stableAfterMs` (a server that
 *   answers once and then drops the socket, e.g. a failing RPC after the handshake, keeps the backoff growing
 *   instead of being reconnected twice a second);
 * - a server-requested delay is honoured: a handshake answered with HTTP 429 or 503 and a
 *   `Retry-After` header (RFC 9110 §10.2.3: delay-seconds or an HTTP-date) waits at least that long;
 * - a watchdog terminates a socket silent (no frame, no ping) for longer than `silenceTimeoutMs`;
 *   every frame counts as traffic, including exchange heartbeats (Deribit sends `test_request`);
 * - `reconnects` counts completed reconnections (opens after the first);
 * - optionally, an application-level client heartbeat ({@link TransportHeartbeat}): a text frame
 *   sent every `intervalMs` (Bybit v5 `{"op":"ping"}`, "Connect" page: every 20 s), or only after
 *   `intervalMs` without inbound traffic (OKX v5 text `ping`, "Overview > WebSocket > Connect":
 *   N < 30 s). Its answer is ordinary traffic for the watchdog: a missing pong ends in a reconnect
 *   after `silenceTimeoutMs`.
 *
 * Not here: JSON parsing, subscriptions, heartbeat answers, request/response correlation.
 */
import WebSocket from 'ws';
import { Subject, type Observable } from 'rxjs';
import { silentLogger, type Logger as DomainLogger } from '../../src/domain/logger.js';

/** What the adapters need of a logger (the code base's one Logger, src/domain/logger.ts). */
export type Logger = Pick<DomainLogger, 'info' | 'warn' | 'error'>;
export { silentLogger };

/** Connection state of a transport. `closed` = between connections (a retry is scheduled); `stopped` = for good. */
export type TransportState = 'connecting' | 'open' | 'closed' | 'stopped';

/** One state change, as emitted on {@link ReconnectingTransport.states$}. */
export interface TransportStateChange {
  readonly state: TransportState;
  /** `closed`/`stopped`: why the socket closed (close code and reason, error, watchdog). */
  readonly reason?: string;
  /** `closed`: delay before the next connection attempt, ms. */
  readonly retryInMs?: number;
  /** `connecting`: consecutive failed connections before this attempt. */
  readonly attempt?: number;
  /** `open`: 1 for the first connection, then 2, 3, ... (a new id per socket). */
  readonly connectionId?: number;
}

/** Timer and wall-clock functions, injectable for tests. Times in ms. */
export interface TransportTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Wall clock, ms since the Unix epoch. */
  now(): number;
}

/** Node's timers and Date.now. */
export const systemTimers: TransportTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  now: () => Date.now(),
};

/** Handed to `onOpen`: send on the socket that just opened. */
export interface OpenContext {
  /** Id of the socket that opened (see {@link TransportStateChange.connectionId}). */
  readonly connectionId: number;
  /** Send a text frame on this socket; false when it is no longer open. */
  send(text: string): boolean;
}

/**
 * An application-level heartbeat sent by the client on every open socket (additive option, used by
 * the OKX and Bybit adapters; Deribit's server-driven `test_request` needs none).
 */
export interface TransportHeartbeat {
  /** Period, ms (`fixed`), or silence before a ping, ms (`idle`). Must be > 0. */
  readonly intervalMs: number;
  /** The text frame to send, e.g. `ping` (OKX) or `{"op":"ping"}` (Bybit); a function builds a fresh one each time. */
  readonly payload: string | (() => string);
  /**
   * `idle` (default): send only when no inbound frame arrived for `intervalMs`, then again every
   * `intervalMs` while the silence lasts (OKX's rule). `fixed`: send every `intervalMs` whatever
   * the traffic (Bybit's recommendation).
   */
  readonly mode?: 'idle' | 'fixed';
}

export interface ReconnectingTransportOptions {
  /** WebSocket URL, e.g. `wss://www.deribit.com/ws/api/v2`. */
  readonly url: string;
  /** Called on every (re)connect, before any frame of that socket is emitted. Errors are logged, not thrown. */
  readonly onOpen?: (ctx: OpenContext) => void;
  /** Terminate a socket with no inbound traffic for this long, ms; 0 disables. Default 30 000. */
  readonly silenceTimeoutMs?: number;
  /** Backoff base (first retry's cap), ms. Default 1 000. */
  readonly backoffBaseMs?: number;
  /** Backoff cap, ms. Default 30 000. */
  readonly backoffMaxMs?: number;
  /** A connection that closes at least this long (ms) after its first message resets the backoff. Default 30 000. */
  readonly stableAfterMs?: number;
  /** Uniform [0, 1) source for the jitter. Default Math.random. */
  readonly random?: () => number;
  /** Default {@link systemTimers}. */
  readonly timers?: TransportTimers;
  /** Opening handshake timeout, ms. Default 10 000. */
  readonly handshakeTimeoutMs?: number;
  /** Label for log lines, e.g. `DERIBIT`. */
  readonly name?: string;
  readonly logger?: Logger;
  /** Client heartbeat (see {@link TransportHeartbeat}); none by default. */
  readonly heartbeat?: TransportHeartbeat;
}

/**
 * Full-jitter capped exponential backoff: min(2^(attempt-1) * baseMs, maxMs) * random(), ms.
 * `attempt` >= 1 is the number of consecutive failed connections; attempt <= 0 gives 0.
 */
export function backoffDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  if (attempt <= 0) return 0;
  const cap = Math.min(2 ** Math.min(attempt - 1, 52) * baseMs, maxMs);
  const r = random();
  return cap * (Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 1);
}

/**
 * Parse an HTTP `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date, into ms
 * from `nowMs`. Null when absent or unparseable; never negative.
 */
export function parseRetryAfterMs(value: string | string[] | undefined, nowMs: number): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return null;
  const t = v.trim();
  if (/^\d+$/.test(t)) return Number(t) * 1000;
  const date = Date.parse(t);
  return Number.isFinite(date) ? Math.max(0, date - nowMs) : null;
}

/** The reconnecting WebSocket transport (see the module docstring). */
export class ReconnectingTransport {
  private readonly messagesSubject = new Subject<string>();
  private readonly statesSubject = new Subject<TransportStateChange>();
  /** Every inbound text frame (binary frames are decoded as UTF-8). */
  readonly messages$: Observable<string> = this.messagesSubject.asObservable();
  /** Every state change. */
  readonly states$: Observable<TransportStateChange> = this.statesSubject.asObservable();

  private readonly silenceTimeoutMs: number;
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;
  private readonly timers: TransportTimers;
  private readonly logger?: Logger;
  private readonly name: string;

  private ws: WebSocket | undefined;
  private currentState: TransportState = 'closed';
  private started = false;
  private stopped = false;
  private failures = 0;
  private opens = 0;
  private reconnectCount = 0;
  private attemptCount = 0;
  private nextAttemptMs: number | null = null;
  /** timers.now() of the current connection's first message; null until it has one. */
  private firstMessageMs: number | null = null;
  private readonly stableAfterMs: number;
  private lastTrafficMs = 0;
  private retryAfterMs: number | null = null;
  private closeReason: string | undefined;
  private reconnectTimer: unknown;
  private watchdogTimer: unknown;
  private heartbeatTimer: unknown;
  private lastHeartbeatMs = 0;
  private heartbeatCount = 0;
  private stoppedPromise: Promise<void> | undefined;

  constructor(private readonly opts: ReconnectingTransportOptions) {
    this.silenceTimeoutMs = opts.silenceTimeoutMs ?? 30_000;
    this.baseMs = opts.backoffBaseMs ?? 1_000;
    this.maxMs = opts.backoffMaxMs ?? 30_000;
    this.stableAfterMs = opts.stableAfterMs ?? 30_000;
    this.random = opts.random ?? Math.random;
    this.timers = opts.timers ?? systemTimers;
    this.logger = opts.logger;
    this.name = opts.name ?? opts.url;
  }

  /** Current state. */
  get state(): TransportState {
    return this.currentState;
  }

  /** Completed reconnections since start (opens after the first). */
  get reconnects(): number {
    return this.reconnectCount;
  }

  /** Connection attempts after the first since start, successful or not (a feed down shows them climbing). */
  get reconnectAttempts(): number {
    return this.attemptCount;
  }

  /** Wall-clock ms (timers.now) of the next scheduled connection attempt while closed; null otherwise. */
  get nextAttemptAtMs(): number | null {
    return this.nextAttemptMs;
  }

  /** Client heartbeat frames sent since start (see {@link TransportHeartbeat}). */
  get heartbeatsSent(): number {
    return this.heartbeatCount;
  }

  /** True while a socket is open. */
  get connected(): boolean {
    return this.currentState === 'open';
  }

  /** Start connecting (idempotent). */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.connect();
  }

  /** Send a text frame on the open socket; false when none is open. */
  send(text: string): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(text);
    return true;
  }

  /** Drop the current socket and reconnect with backoff (e.g. a request timed out). No-op when stopped. */
  reconnect(reason: string): void {
    if (this.stopped || !this.ws) return;
    this.closeReason = reason;
    this.ws.terminate();
  }

  /** Close for good: no more reconnects; resolves when the socket is closed. Idempotent. */
  stop(): Promise<void> {
    if (this.stoppedPromise) return this.stoppedPromise;
    this.stopped = true;
    this.clearReconnectTimer();
    this.clearWatchdog();
    this.clearHeartbeat();
    const ws = this.ws;
    this.stoppedPromise = new Promise<void>((resolve) => {
      const finish = (): void => {
        this.setState({ state: 'stopped', reason: 'stop()' });
        this.messagesSubject.complete();
        this.statesSubject.complete();
        resolve();
      };
      if (!ws || ws.readyState === WebSocket.CLOSED) {
        this.ws = undefined;
        finish();
        return;
      }
      const force = setTimeout(() => ws.terminate(), 2_000);
      ws.once('close', () => {
        clearTimeout(force);
        finish();
      });
      if (ws.readyState === WebSocket.OPEN) ws.close(1000, 'client stop');
      else ws.terminate();
    });
    return this.stoppedPromise;
  }

  private setState(change: TransportStateChange): void {
    this.currentState = change.state;
    this.statesSubject.next(change);
  }

  private connect(): void {
    if (this.stopped) return;
    this.reconnectTimer = undefined;
    this.nextAttemptMs = null;
    if (this.started && (this.opens > 0 || this.failures > 0)) this.attemptCount += 1;
    this.firstMessageMs = null;
    this.retryAfterMs = null;
    this.closeReason = undefined;
    this.setState({ state: 'connecting', attempt: this.failures });
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.opts.url, { handshakeTimeout: this.opts.handshakeTimeoutMs ?? 10_000, perMessageDeflate: false });
    } catch (e) {
      this.closeReason = `cannot connect: ${e instanceof Error ? e.message : String(e)}`;
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;

    ws.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      if (status === 429 || status === 503) this.retryAfterMs = parseRetryAfterMs(res.headers['retry-after'], this.timers.now());
      this.closeReason = `handshake answered HTTP ${status}`;
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      if (this.ws !== ws) return;
      this.opens += 1;
      if (this.opens > 1) this.reconnectCount += 1;
      this.lastTrafficMs = this.timers.now();
      this.setState({ state: 'open', connectionId: this.opens });
      this.armWatchdog(ws);
      this.armHeartbeat(ws);
      const id = this.opens;
      try {
        this.opts.onOpen?.({
          connectionId: id,
          send: (text) => (this.ws === ws && ws.readyState === WebSocket.OPEN ? (ws.send(text), true) : false),
        });
      } catch (e) {
        this.logger?.error({ transport: this.name, err: e instanceof Error ? e.message : String(e) }, 'onOpen hook threw');
      }
    });
    ws.on('message', (data, isBinary) => {
      if (this.ws !== ws) return;
      this.lastTrafficMs = this.timers.now();
      this.firstMessageMs ??= this.lastTrafficMs;
      const text = Array.isArray(data)
        ? Buffer.concat(data).toString('utf8')
        : Buffer.isBuffer(data)
          ? data.toString('utf8')
          : Buffer.from(data as ArrayBuffer).toString('utf8');
      void isBinary;
      this.messagesSubject.next(text);
    });
    ws.on('ping', () => {
      this.lastTrafficMs = this.timers.now();
    });
    ws.on('error', (err) => {
      this.closeReason ??= err.message;
    });
    ws.on('close', (code, reason) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.clearWatchdog();
      this.clearHeartbeat();
      if (this.stopped) return;
      this.closeReason ??= `closed ${code}${reason.length ? ` ${reason.toString('utf8')}` : ''}`;
      this.scheduleReconnect();
    });
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    if (this.firstMessageMs !== null && this.timers.now() - this.firstMessageMs >= this.stableAfterMs) this.failures = 0;
    this.failures += 1;
    let delay = backoffDelayMs(this.failures, this.baseMs, this.maxMs, this.random);
    if (this.retryAfterMs !== null) delay = Math.max(delay, this.retryAfterMs);
    const reason = this.closeReason ?? 'closed';
    this.logger?.warn({ transport: this.name, reason, retryInMs: Math.round(delay), attempt: this.failures }, 'websocket closed; reconnecting');
    this.nextAttemptMs = this.timers.now() + delay;
    this.setState({ state: 'closed', reason, retryInMs: delay });
    this.reconnectTimer = this.timers.setTimeout(() => this.connect(), delay);
  }

  private armWatchdog(ws: WebSocket): void {
    if (this.silenceTimeoutMs <= 0) return;
    const every = Math.max(10, Math.min(1_000, this.silenceTimeoutMs / 4));
    const check = (): void => {
      if (this.ws !== ws || this.stopped) return;
      const silentMs = this.timers.now() - this.lastTrafficMs;
      if (silentMs > this.silenceTimeoutMs) {
        this.closeReason = `watchdog: no traffic for ${silentMs} ms`;
        ws.terminate();
        return;
      }
      this.watchdogTimer = this.timers.setTimeout(check, every);
    };
    this.watchdogTimer = this.timers.setTimeout(check, every);
  }

  private armHeartbeat(ws: WebSocket): void {
    const hb = this.opts.heartbeat;
    if (!hb || !(hb.intervalMs > 0)) return;
    const every = hb.intervalMs;
    const idle = (hb.mode ?? 'idle') === 'idle';
    this.lastHeartbeatMs = this.timers.now();
    const tick = (): void => {
      this.heartbeatTimer = undefined;
      if (this.ws !== ws || this.stopped || ws.readyState !== WebSocket.OPEN) return;
      const now = this.timers.now();
      // idle: due `every` ms after the later of the last inbound frame and the last ping.
      const dueAt = idle ? Math.max(this.lastTrafficMs, this.lastHeartbeatMs) + every : this.lastHeartbeatMs + every;
      if (now >= dueAt) {
        try {
          ws.send(typeof hb.payload === 'function' ? hb.payload() : hb.payload);
          this.heartbeatCount += 1;
        } catch (e) {
          this.logger?.warn({ transport: this.name, err: e instanceof Error ? e.message : String(e) }, 'heartbeat send failed');
        }
        this.lastHeartbeatMs = now;
        this.heartbeatTimer = this.timers.setTimeout(tick, every);
      } else {
        this.heartbeatTimer = this.timers.setTimeout(tick, Math.max(1, dueAt - now));
      }
    };
    this.heartbeatTimer = this.timers.setTimeout(tick, every);
  }

  private clearHeartbeat(): void {
    if (this.heartbeatTimer !== undefined) this.timers.clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
  }

  private clearWatchdog(): void {
    if (this.watchdogTimer !== undefined) this.timers.clearTimeout(this.watchdogTimer);
    this.watchdogTimer = undefined;
  }

  private clearReconnectTimer(): void {
    if (this.reconnectTimer !== undefined) this.timers.clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
  }
}
