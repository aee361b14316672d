/**
 * The WebSocket JSON-RPC 2.0 session of GET /api/v1/ws (docs/streaming.md), Deribit-style methods:
 *
 * | method                  | params                                                              | result                         |
 * |-------------------------|---------------------------------------------------------------------|--------------------------------|
 * | `public/auth`           | `{api_key}`                                                         | `{authenticated, key_id}`      |
 * | `public/subscribe`      | `{channels[], interval_ms?, fields?, expiries?, threshold?, since?}`| the canonical channel names    |
 * | `public/unsubscribe`    | `{channels[]}`                                                      | the channels unsubscribed      |
 * | `public/unsubscribe_all`| -                                                                   | `"ok"`                         |
 * | `public/get_time`       | -                                                                   | service clock, Unix SECONDS    |
 * | `public/test`           | -                                                                   | `{version}` (answers a test_request) |
 * | `public/set_heartbeat`  | `{interval}` seconds, 10..3600                                      | `"ok"`                         |
 * | `public/disable_heartbeat` | -                                                                | `"ok"`                         |
 *
 * Errors (JSON-RPC 2.0 section 5.1 codes, and Deribit's for the rest): -32700 parse error (bad JSON),
 * -32600 invalid request (not an object, no method, a batch, a message over STREAM_MAX_MESSAGE_BYTES),
 * -32601 method not found, -32602 invalid params (an unknown channel: `data.channels` names each with the reason;
 * nothing is subscribed then), 10028 too_many_requests (STREAM_MAX_REQUESTS_PER_S), 10029 too many subscriptions
 * (STREAM_MAX_SUBSCRIPTIONS), 10030 too many connections for the key, 13004 invalid_credentials, 13009
 * unauthorized (API keys configured and no key yet). A malformed message never closes the socket; only a frame
 * over four times the message limit does (ws, 1009), a missed heartbeat (4000), no public/auth within
 * STREAM_AUTH_TIMEOUT_MS (4001), three wrong keys (4003) and a slow consumer (4008).
 */
import type { WebSocket } from 'ws';
import type { Clock } from '../../domain/clock.js';
import type { KeyRing } from '../plugins/security.js';
import { parseChannel, type Channel } from './channels.js';
import { framePayload, type Session, type StreamHub, type StreamTransport, type SubscribeOptions } from './hub.js';

/** JSON-RPC error codes of the WebSocket API (module docstring). */
export const RPC_ERRORS = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  tooManyRequests: 10028,
  tooManySubscriptions: 10029,
  tooManyConnections: 10030,
  invalidCredentials: 13004,
  unauthorized: 13009,
} as const;

/** Version answered by public/test. */
export const STREAM_API_VERSION = '1.0.0';

/** What a WebSocket session needs. */
export interface RpcContext {
  readonly hub: StreamHub;
  readonly clock: Clock;
  /** The API keys when configured (then a key is needed: header at the handshake, or public/auth). */
  readonly keys: KeyRing | null;
  /** Key id of a valid X-API-Key header at the handshake, else null. */
  readonly headerKeyId: string | null;
  /** The client's address (connections are counted per address without keys). */
  readonly ip: string;
}

type Id = string | number | null;

/** A parsed subscribe request (validated). */
interface SubscribeParams {
  readonly channels: Channel[];
  readonly options: SubscribeOptions;
  readonly since: Map<string, number>;
}

/** Validate public/subscribe params; an error message names every bad member. */
export function parseSubscribe(params: unknown): SubscribeParams | { error: string; data?: unknown } {
  if (!params || typeof params !== 'object' || Array.isArray(params)) return { error: 'params must be an object with channels' };
  const p = params as Record<string, unknown>;
  if (!Array.isArray(p.channels) || p.channels.length === 0) return { error: 'params.channels must be a non-empty array of channel names' };
  const bad: Array<{ channel: unknown; reason: string }> = [];
  const channels: Channel[] = [];
  for (const c of p.channels) {
    const r = parseChannel(c);
    if ('error' in r) bad.push({ channel: typeof c === 'string' ? c.slice(0, 200) : c === null ? null : typeof c, reason: r.error });
    else if (!channels.some((x) => x.name === r.channel.name)) channels.push(r.channel);
  }
  if (bad.length) return { error: `unknown or malformed channel${bad.length > 1 ? 's' : ''}: ${bad.map((b) => `${String(b.channel)} (${b.reason})`).join('; ')}`, data: { channels: bad } };
  const interval = p.interval_ms ?? 0;
  if (typeof interval !== 'number' || !Number.isInteger(interval) || interval < 0 || interval > 3_600_000) return { error: 'params.interval_ms must be an integer from 0 to 3600000 (ms)' };
  let fields: string[] | undefined;
  if (p.fields !== undefined) {
    if (!Array.isArray(p.fields) || p.fields.length > 64 || !p.fields.every((f) => typeof f === 'string' && f.length > 0 && f.length <= 64)) return { error: 'params.fields must be an array of up to 64 member names' };
    fields = p.fields as string[];
  }
  let expiries: number[] | undefined;
  if (p.expiries !== undefined) {
    if (!Array.isArray(p.expiries) || p.expiries.length > 200 || !p.expiries.every((e) => Number.isSafeInteger(e) && (e as number) > 0)) return { error: 'params.expiries must be an array of up to 200 expiries (Unix seconds)' };
    expiries = p.expiries as number[];
  }
  const threshold = p.threshold ?? 0;
  if (typeof threshold !== 'number' || !Number.isFinite(threshold) || threshold < 0 || threshold > 10) return { error: 'params.threshold must be a vol change (fraction) from 0 to 10' };
  const since = new Map<string, number>();
  if (p.since !== undefined) {
    if (!p.since || typeof p.since !== 'object' || Array.isArray(p.since)) return { error: 'params.since must be an object {channel: sequence}' };
    for (const [name, seq] of Object.entries(p.since as Record<string, unknown>)) {
      const r = parseChannel(name);
      if ('error' in r) return { error: `params.since names an unknown channel ${name.slice(0, 200)}: ${r.error}` };
      if (typeof seq !== 'number' || !Number.isFinite(seq) || seq < 0) return { error: `params.since.${name.slice(0, 200)} must be a sequence number >= 0` };
      since.set(r.channel.name, seq);
    }
  }
  return { channels, options: { intervalMs: interval, ...(fields ? { fields } : {}), ...(expiries ? { expiries } : {}), threshold }, since };
}

/**
 * Serve one accepted WebSocket until it closes. Never throws on client input; every reply is written at once
 * (small), notifications go through the hub's per-connection queue.
 */
export function serveWebSocket(socket: WebSocket, ctx: RpcContext): void {
  new RpcConnection(socket, ctx).serve();
}

/** The methods `method not found` lists. */
const RPC_METHODS = 'public/subscribe, public/unsubscribe, public/unsubscribe_all, public/auth, public/get_time, public/test, public/set_heartbeat, public/disable_heartbeat';

/** One WebSocket's JSON-RPC session: its authentication, request rate limit, heartbeat and hub session. */
class RpcConnection {
  private readonly hub: StreamHub;
  private readonly keys: KeyRing | null;
  private readonly limits: StreamHub['limits'];
  private session: Session | null = null;
  private keyId: string | null;
  private failedAuth = 0;
  /** The request rate limit's token bucket (STREAM_MAX_REQUESTS_PER_S, bursts of twice that). */
  private tokens: number;
  private refilledAt = Date.now();
  private heartbeat: NodeJS.Timeout | null = null;
  private awaitingTest = false;
  private graceTimer: NodeJS.Timeout | null = null;
  private authTimer: NodeJS.Timeout | null = null;
  /** The hub's transport over this socket. */
  private readonly transport: StreamTransport;

  constructor(
    private readonly socket: WebSocket,
    private readonly ctx: RpcContext,
  ) {
    this.hub = ctx.hub;
    this.keys = ctx.keys;
    this.limits = ctx.hub.limits;
    this.keyId = ctx.headerKeyId;
    this.tokens = this.limits.maxRequestsPerS * 2;
    /** The ws socket's net.Socket (ws keeps it in `_socket`), for cork/uncork around a flush and the pre-framed writes. */
    const raw = () => (socket as unknown as { _socket?: { cork(): void; uncork(): void; write(b: Buffer): boolean } })._socket;
    // no extension negotiated (the service offers no permessage-deflate): ws's Sender writes every frame at once and
    // holds none back, so a complete frame may go to the socket directly, between any two of ws's own frames
    const plain = socket.extensions === '';
    this.transport = {
      kind: 'ws',
      buffered: () => socket.bufferedAmount,
      write: (_sub, _item, msg) => {
        if (typeof msg === 'string') socket.send(msg);
        else {
          // a Buffer is a complete text frame, usually shared by every subscriber: written as is (no framing, no copy)
          const r = raw();
          if (plain && r && socket.readyState === socket.OPEN) r.write(msg);
          else socket.send(framePayload(msg), { binary: false });
        }
        return msg.length;
      },
      close: (code, reason) => this.close(code, reason),
      cork: () => raw()?.cork(),
      uncork: () => raw()?.uncork(),
    };
  }

  /** Opens the hub session at once (no keys, or a key in the header), else waits for public/auth; then listens to the socket. */
  serve(): void {
    const { keys, keyId, limits } = this;
    if (!keys) this.openSession(`ip:${this.ctx.ip}`, null);
    else if (keyId) this.openSession(`key:${keyId}`, null);
    else {
      this.authTimer = setTimeout(() => {
        this.hub.metrics.rejected.inc({ reason: 'auth-timeout' });
        this.close(4001, `not authenticated within ${limits.authTimeoutMs} ms: send public/auth {api_key} first, or header X-API-Key`);
      }, limits.authTimeoutMs);
      this.authTimer.unref?.();
    }
    this.socket.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => this.onMessage(data, isBinary));
    this.socket.on('close', () => this.cleanup());
    this.socket.on('error', () => this.socket.terminate());
  }

  private send(obj: unknown): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(JSON.stringify(obj));
  }

  private reply(id: Id, result: unknown): void {
    this.send({ jsonrpc: '2.0', id, result });
  }

  /** A JSON-RPC error answer, counted by code. */
  private fail(id: Id, code: number, message: string, data?: unknown): void {
    this.hub.metrics.rpcErrors.inc({ code: String(code) });
    this.send({ jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined ? { data } : {}) } });
  }

  /** Closes the socket with `code` and `reason`, and terminates it if it is still open after the grace period. */
  private close(code: number, reason: string): void {
    const socket = this.socket;
    if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING) socket.close(code, reason.slice(0, 120));
    if (!this.graceTimer) {
      this.graceTimer = setTimeout(() => socket.terminate(), this.limits.closeGraceMs);
      this.graceTimer.unref?.();
    }
  }

  /** Open the hub session for `owner`; false (and the socket closing) when the owner is at its limit. */
  private openSession(owner: string, id: Id): boolean {
    this.session = this.hub.openSession(this.transport, owner);
    if (this.session) return true;
    this.fail(id, RPC_ERRORS.tooManyConnections, `too many stream connections for this ${owner.startsWith('ip:') ? 'address' : 'API key'} (limit ${this.limits.maxConnectionsPerKey}, STREAM_MAX_CONNECTIONS_PER_KEY)`);
    this.close(1008, 'too many connections');
    return false;
  }

  private authorized(): boolean {
    return !this.keys || this.keyId !== null;
  }

  /**
   * One frame: the rate limit, the size limit, text only, one JSON-RPC request object (no batch), then its method.
   * Never throws: an unexpected error is answered as an internal error.
   */
  private onMessage(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    const limits = this.limits;
    try {
      const now = Date.now();
      this.tokens = Math.min(limits.maxRequestsPerS * 2, this.tokens + ((now - this.refilledAt) / 1000) * limits.maxRequestsPerS);
      this.refilledAt = now;
      if (this.tokens < 1) return this.fail(null, RPC_ERRORS.tooManyRequests, `too_many_requests: at most ${limits.maxRequestsPerS} messages per second (STREAM_MAX_REQUESTS_PER_S)`);
      this.tokens -= 1;
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
      if (buf.length > limits.maxMessageBytes) {
        return this.fail(null, RPC_ERRORS.invalidRequest, `invalid request: message of ${buf.length} bytes is over the limit of ${limits.maxMessageBytes} (STREAM_MAX_MESSAGE_BYTES)`);
      }
      if (isBinary) return this.fail(null, RPC_ERRORS.invalidRequest, 'invalid request: send JSON text frames, not binary');
      let msg: unknown;
      try {
        msg = JSON.parse(buf.toString('utf8'));
      } catch (err) {
        return this.fail(null, RPC_ERRORS.parse, `parse error: ${(err as Error).message.slice(0, 200)}`);
      }
      if (Array.isArray(msg)) return this.fail(null, RPC_ERRORS.invalidRequest, 'invalid request: batches are not supported; send one request per message');
      if (!msg || typeof msg !== 'object') return this.fail(null, RPC_ERRORS.invalidRequest, 'invalid request: a message is a JSON-RPC 2.0 request object');
      this.handle(msg as Record<string, unknown>);
    } catch {
      this.fail(null, -32603, 'internal error');
    }
  }

  /** One request: its method, answered by id. */
  private handle(msg: Record<string, unknown>): void {
    const id: Id = typeof msg.id === 'number' || typeof msg.id === 'string' ? msg.id : null;
    const method = msg.method;
    if (typeof method !== 'string') return this.fail(id, RPC_ERRORS.invalidRequest, 'invalid request: "method" must be a string (JSON-RPC 2.0)');
    const params = msg.params;
    switch (method) {
      case 'public/auth':
        return this.auth(id, params);
      case 'public/get_time':
        return this.reply(id, this.ctx.clock.now());
      case 'public/test':
        this.awaitingTest = false;
        return this.reply(id, { version: STREAM_API_VERSION });
      case 'public/set_heartbeat':
        return this.setHeartbeat(id, params);
      case 'public/disable_heartbeat':
        if (this.heartbeat) clearInterval(this.heartbeat);
        this.heartbeat = null;
        this.awaitingTest = false;
        return this.reply(id, 'ok');
      case 'public/subscribe':
        return this.subscribe(id, params);
      case 'public/unsubscribe':
        return this.unsubscribe(id, params);
      case 'public/unsubscribe_all': {
        const s = this.session;
        if (s) for (const sub of [...s.subs.values()]) this.hub.detach(sub);
        return this.reply(id, 'ok');
      }
      default:
        return this.fail(id, RPC_ERRORS.methodNotFound, `method not found: ${method.slice(0, 100)} (${RPC_METHODS})`);
    }
  }

  /** public/auth: a valid key opens the session (the first one; later ones are answered with the key id held); three invalid keys close the socket. */
  private auth(id: Id, params: unknown): void {
    const keys = this.keys;
    if (!keys) return this.reply(id, { authenticated: true, key_id: null, note: 'no API keys are configured: none is needed' });
    const p = (params ?? {}) as Record<string, unknown>;
    const presented = typeof params === 'object' && params !== null ? (p.api_key ?? p.client_secret) : undefined;
    const match = keys.match(presented);
    if (!match) {
      this.failedAuth++;
      this.hub.metrics.rejected.inc({ reason: 'invalid-key' });
      this.fail(id, RPC_ERRORS.invalidCredentials, presented === undefined ? 'invalid_credentials: params.api_key is required' : 'invalid_credentials: invalid API key');
      if (this.failedAuth >= 3) this.close(4003, 'three invalid API keys');
      return;
    }
    if (this.keyId === null) {
      if (!this.openSession(`key:${match}`, id)) return;
      if (this.authTimer) clearTimeout(this.authTimer);
    }
    this.keyId = this.keyId ?? match;
    return this.reply(id, { authenticated: true, key_id: this.keyId });
  }

  /** public/set_heartbeat: a test_request every `interval` seconds; one left unanswered by the next closes the socket (4000). */
  private setHeartbeat(id: Id, params: unknown): void {
    const interval = (params as Record<string, unknown> | undefined)?.interval;
    if (typeof interval !== 'number' || !Number.isFinite(interval) || interval < 10 || interval > 3600) {
      return this.fail(id, RPC_ERRORS.invalidParams, 'params.interval must be a number of seconds from 10 to 3600');
    }
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.awaitingTest = false;
    this.heartbeat = setInterval(() => {
      if (this.awaitingTest) {
        this.close(4000, 'heartbeat: no public/test answered the last test_request');
        return;
      }
      this.awaitingTest = true;
      this.send({ jsonrpc: '2.0', method: 'heartbeat', params: { type: 'test_request' } });
    }, interval * 1000);
    this.heartbeat.unref?.();
    return this.reply(id, 'ok');
  }

  /** public/subscribe: all the channels or none (invalid params, too many subscriptions); the answer first, then the documents. */
  private subscribe(id: Id, params: unknown): void {
    const limits = this.limits;
    if (!this.authorized() || !this.session) return this.fail(id, RPC_ERRORS.unauthorized, 'unauthorized: API keys are configured; send public/auth {api_key} first (or header X-API-Key at the handshake)');
    const parsed = parseSubscribe(params);
    if ('error' in parsed) return this.fail(id, RPC_ERRORS.invalidParams, `invalid params: ${parsed.error}`, parsed.data);
    const s = this.session;
    const added = parsed.channels.filter((c) => !s.subs.has(c.name)).length;
    if (s.subs.size + added > limits.maxSubscriptions) {
      return this.fail(id, RPC_ERRORS.tooManySubscriptions, `too many subscriptions: ${s.subs.size} held + ${added} asked > ${limits.maxSubscriptions} (STREAM_MAX_SUBSCRIPTIONS); nothing subscribed`);
    }
    // the answer first, then (from the next turn of the event loop) the documents
    this.reply(id, parsed.channels.map((c) => c.name));
    for (const c of parsed.channels) this.hub.subscribe(s, c, parsed.options, parsed.since.get(c.name));
  }

  /** public/unsubscribe: the named channels held (unknown names are passed over); answers those unsubscribed. */
  private unsubscribe(id: Id, params: unknown): void {
    if (!this.session) return this.fail(id, RPC_ERRORS.unauthorized, 'unauthorized: send public/auth {api_key} first');
    const list = (params as Record<string, unknown> | undefined)?.channels;
    if (!Array.isArray(list)) return this.fail(id, RPC_ERRORS.invalidParams, 'invalid params: params.channels must be an array of channel names');
    const s = this.session;
    const done: string[] = [];
    for (const name of list) {
      const r = parseChannel(name);
      if ('error' in r) continue;
      const sub = s.subs.get(r.channel.name);
      if (sub) {
        this.hub.detach(sub);
        done.push(r.channel.name);
      }
    }
    return this.reply(id, done);
  }

  /** The socket closed: timers stopped, the hub session disposed of. */
  private cleanup(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.authTimer) clearTimeout(this.authTimer);
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.session?.dispose();
  }
}
