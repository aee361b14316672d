/**
 * The stream hub: from the cache's updates (MarketCache.updates$) to every subscribed connection of the
 * streaming API (WebSocket /api/v1/ws and SSE /api/v1/stream; docs/streaming.md).
 *
 * - Each channel (./channels.ts) has one state: its newest document (an {@link Entry}, rendered ONCE per update
 *   and shared by every subscriber, its complete WebSocket frame too: {@link textFrame}) and, for the surface, iv_summary and forward_curve
 *   channels, a ring of the last `resumeDepth` entries for resume. A channel records only while it has
 *   subscribers and for `resumeWindowS` after its last one left: the cost is that of the channels in use.
 * - Sequences are the snapshots' own (`SurfaceSnapshot.sequence`, `ForwardCurveSnapshot.sequence`: what the REST
 *   `surface` answer and the Kafka documents carry); a funding point's sequence is its settlement time (Unix s);
 *   `status` and `iv` count their own changes / use the surface's sequence.
 * - Delivery never waits on a socket: an update is queued per subscription (latest wins while a queued one is
 *   not written yet: "conflated"), and one flush (at the next turn of the event loop, or at the end of the write
 *   window `flushMs`: the updates of a window reach a connection in one socket write) writes what each connection's
 *   socket accepts, up to
 *   `maxBufferedBytes` queued in the socket. A connection that stays above that for `stallMs` is closed with code
 *   4008 ("slow consumer"). The cache's subscriber (the pipeline) only marks connections dirty.
 * Metrics: `volsurf_stream_*` in {@link StreamHub.registry} (docs/monitoring.md).
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { Subscription as RxSubscription } from 'rxjs';
import type { MarketCache, CacheUpdate } from '../../cache/marketCache.js';
import type { SurfaceSnapshot, ForwardCurveSnapshot } from '../../cache/snapshot.js';
import { expiryPoint, MIN_T_YEARS } from '../../cache/expiryPoint.js';
import { strikeFromDelta } from '../../quant/strikeFromDelta.js';
import type { FundingRate } from '../../domain/events.js';
import { forwardCurveDocument, ivSummaryDocument, surfaceDocument } from '../documents.js';
import { surfaceChannelName, type Channel, type ChannelKind } from './channels.js';
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from './config.js';

/** One update of one channel: the `data` of a notification, rendered once and shared. */
export interface Entry {
  readonly channel: string;
  readonly sequence: number;
  readonly observationTimestamp: number;
  /** `data` as JSON (no `reset` member). */
  readonly json: string;
  /** `data` as an object while it may still be filtered live (dropped once superseded); else parsed from `json`. */
  data: Record<string, unknown> | null;
  /** The implied vols of an `iv` entry, one per point of the channel (its threshold test), else null. */
  readonly vols: readonly number[] | null;
  /**
   * The unfiltered WebSocket notification as one complete text frame (RFC 6455 header + UTF-8 payload, see
   * {@link textFrame}), built on first use and written as is to every subscriber's socket.
   */
  frame: Buffer | null;
  /** Filtered renderings of `data` by filter key (the JSON, and its WebSocket frame once built), built on first use. */
  variants: Map<string, { readonly json: string; frame: Buffer | null }> | null;
  /** The live (not reset, not replay) queue item of this entry, shared by every subscription that queues it. */
  live: Item | null;
}

/** Options of one subscription (public/subscribe params, or the SSE query). */
export interface SubscribeOptions {
  /** At most one message per this many ms per channel (latest wins); 0 = every update. */
  readonly intervalMs?: number;
  /** Top-level members of `data` to send (`sequence`, `observationTimestamp` and the identity members always are). */
  readonly fields?: readonly string[];
  /** Expiries (Unix s) to keep in `expiries` / `volatilityListed`; absent = all. */
  readonly expiries?: readonly number[];
  /** `iv` channels: send only when a point's vol moved by more than this (fraction) since the last one sent. Default 0. */
  readonly threshold?: number;
}

/** One queued message of a subscription. */
export interface Item {
  readonly entry: Entry;
  /** The gap asked for is older than what is kept: this is the current document. */
  readonly reset: boolean;
  /** Part of a resume replay (never conflated). */
  readonly replay: boolean;
}

/** How a session writes: the WebSocket or SSE specifics. */
export interface StreamTransport {
  readonly kind: 'ws' | 'sse';
  /** Bytes queued in the socket and not yet written to the kernel. */
  buffered(): number;
  /**
   * Write one message of `sub`: for WebSocket a complete text frame ({@link textFrame}, often shared by every
   * subscriber: write it as is, never modify it); for SSE the `data` JSON. Returns the bytes written.
   */
  write(sub: Subscription, item: Item, text: string | Buffer): number;
  /** Close with a code (RFC 6455 7.4; 4008 = slow consumer) and a reason. */
  close(code: number, reason: string): void;
  /** Hold the writes of one flush in the socket and send them in one system call (net.Socket cork/uncork). */
  cork?(): void;
  uncork?(): void;
}

/** Outcome of a resume (`since`) on subscribe. */
export type ResumeOutcome = 'replayed' | 'reset' | 'current' | 'up-to-date' | 'none';

const IDENTITY = new Set(['source', 'baseCurrency', 'quoteCurrency', 'volatilityModel', 'sequence', 'observationTimestamp', 'publishTimestamp', 'instrumentId', 'reset']);
/** Granularity of the interval_ms releases, ms: a held update goes out within this after its interval. */
export const RELEASE_STEP_MS = 50;
/** Messages a subscription queues before live updates replace each other even on a writable socket. */
export const MAX_LIVE_QUEUE = 256;
const CONFLATABLE: ReadonlySet<ChannelKind> = new Set(['surface', 'iv_summary', 'iv', 'forward_curve', 'status']);
const RECORDED: ReadonlySet<ChannelKind> = new Set(['surface', 'iv_summary', 'forward_curve']);

/** The WebSocket notification of `channel` with `dataJson` (Deribit's shape). */
export function notificationText(channel: string, dataJson: string): string {
  return `{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(channel)},"data":${dataJson}}}`;
}

/**
 * One unmasked, unfragmented WebSocket text frame holding `text` (RFC 6455 section 5.2: FIN + opcode 1, payload
 * length in 7, 7+16 or 7+64 bits, no mask from a server): built once per update and written to every subscriber's
 * socket as it is, so that no per-client framing, encoding or copy happens (permessage-deflate is not offered by the
 * service; a connection that negotiated an extension is sent the payload through `ws` instead).
 */
export function textFrame(text: string): Buffer {
  const len = Buffer.byteLength(text, 'utf8');
  const head = len > 0xffff ? 10 : len > 125 ? 4 : 2;
  const buf = Buffer.allocUnsafe(head + len);
  buf[0] = 0x81;
  if (head === 2) buf[1] = len;
  else if (head === 4) {
    buf[1] = 126;
    buf.writeUInt16BE(len, 2);
  } else {
    buf[1] = 127;
    buf.writeUInt32BE(Math.floor(len / 2 ** 32), 2);
    buf.writeUInt32BE(len >>> 0, 6);
  }
  buf.write(text, head, 'utf8');
  return buf;
}

/** The payload (UTF-8 bytes, no copy) of a frame built by {@link textFrame}. */
export function framePayload(frame: Buffer): Buffer {
  const l = frame[1]! & 0x7f;
  return frame.subarray(l === 127 ? 10 : l === 126 ? 4 : 2);
}

/** The shared live queue item of `e` (one object per update, not one per subscriber). */
function liveItem(e: Entry): Item {
  return (e.live ??= { entry: e, reset: false, replay: false });
}

/** Filter key of options (null: unfiltered). */
function filterKey(o: SubscribeOptions): string | null {
  if (!o.fields?.length && !o.expiries?.length) return null;
  return JSON.stringify([o.fields ?? null, o.expiries ?? null]);
}

/** `data` with only `fields` (and the identity members) and only the `expiries` listed. */
export function filterData(data: Record<string, unknown>, o: SubscribeOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const keep = o.fields?.length ? new Set(o.fields) : null;
  const exp = o.expiries?.length ? new Set(o.expiries) : null;
  for (const [k, v] of Object.entries(data)) {
    if (keep && !keep.has(k) && !IDENTITY.has(k)) continue;
    if (exp && Array.isArray(v) && (k === 'expiries' || k === 'volatilityListed' || k === 'fixedYields')) {
      out[k] = v.filter((e) => exp.has((e as { expirationTimestamp?: number }).expirationTimestamp ?? NaN));
    } else out[k] = v;
  }
  return out;
}

/** Whether any vol of `now` differs from the same point of `last` by more than `threshold` (or the lists differ in length). */
function movedBeyond(now: readonly number[], last: readonly number[], threshold: number): boolean {
  if (now.length !== last.length) return true;
  for (let i = 0; i < now.length; i++) if (Math.abs(now[i]! - last[i]!) > threshold) return true;
  return false;
}

/** One point of an `iv` notification: the strike (given, or solved from the delta), the delta asked for, the vol there. */
interface IvPoint {
  readonly delta?: number;
  /** Quote currency. */
  readonly strike: number;
  /** Fraction (0.55 = 55 %). */
  readonly impliedVolatility: number;
}

/**
 * The points of an iv channel on one expiry's smile, in the channel's order: the vol at each strike, or at the
 * strike of each forward Black call delta (src/quant/strikeFromDelta.ts, as REST byDelta). Null when any point has
 * no strike for its delta or no finite vol (nothing is sent for that surface).
 */
function ivPoints(c: Extract<Channel, { kind: 'iv' }>, p: ReturnType<typeof expiryPoint>): IvPoint[] | null {
  const out: IvPoint[] = [];
  for (const value of c.values) {
    let strike = value;
    if (c.by === 'delta') {
      try {
        strike = strikeFromDelta(value, p.forward, Math.max(p.T, MIN_T_YEARS), p.vol);
      } catch {
        return null;
      }
    }
    const vol = p.vol(strike);
    if (!Number.isFinite(vol)) return null;
    out.push(c.by === 'delta' ? { delta: value, strike, impliedVolatility: vol } : { strike, impliedVolatility: vol });
  }
  return out;
}

/** One channel of one session. */
export class Subscription {
  readonly queue: Item[] = [];
  /** Newest entry held back by interval_ms. */
  held: Entry | null = null;
  /** A release of `held` is scheduled with the hub. */
  private heldScheduled = false;
  private disposed = false;
  /** Wall ms of the last message sent. */
  lastSentAt = -Infinity;
  /** Sequence of the newest message queued or sent. */
  lastSequence: number | null = null;
  /** The vols of the last `iv` message queued (threshold reference). */
  private lastVols: readonly number[] | null = null;
  readonly key: string | null;

  constructor(
    readonly session: Session,
    readonly state: ChannelState,
    readonly options: SubscribeOptions,
  ) {
    this.key = filterKey(options);
  }

  /**
   * The message of `item` for this subscription's filters (`reset` added when set): the SSE `data` JSON, or the
   * complete WebSocket frame ({@link textFrame}; unfiltered: one Buffer shared by every subscriber, built once;
   * filtered: one per distinct filter, cached on the entry).
   */
  render(item: Item, ws: boolean): string | Buffer {
    const e = item.entry;
    if (!this.key && !item.reset) {
      if (!ws) return e.json;
      return (e.frame ??= textFrame(notificationText(e.channel, e.json)));
    }
    let variant: { readonly json: string; frame: Buffer | null } | null = null;
    if (this.key) {
      const variants = (e.variants ??= new Map());
      variant = variants.get(this.key) ?? null;
      if (!variant) {
        variant = { json: JSON.stringify(filterData(e.data ?? (JSON.parse(e.json) as Record<string, unknown>), this.options)), frame: null };
        variants.set(this.key, variant);
      }
      if (!item.reset) return ws ? (variant.frame ??= textFrame(notificationText(e.channel, variant.json))) : variant.json;
    }
    let json = variant ? variant.json : e.json;
    json = `${json.slice(0, -1)}${json.length > 2 ? ',' : ''}"reset":true}`;
    return ws ? textFrame(notificationText(e.channel, json)) : json;
  }

  /** A live update: threshold (iv), interval (held back, latest wins), then queued. */
  deliver(entry: Entry): void {
    if (entry.vols !== null && this.lastVols !== null && !movedBeyond(entry.vols, this.lastVols, this.options.threshold ?? 0)) return;
    const interval = this.options.intervalMs ?? 0;
    if (interval > 0) {
      const due = this.lastSentAt + interval;
      if (due > Date.now() || this.heldScheduled) {
        if (this.held) this.session.hub.countConflation(this.state.channel.kind);
        this.held = entry;
        if (!this.heldScheduled) {
          this.heldScheduled = true;
          this.session.hub.releaseAt(this, due);
        }
        return;
      }
      this.lastSentAt = Date.now(); // the interval runs from this one (not from its write)
    }
    this.enqueue(liveItem(entry));
  }

  /** The interval is over ({@link StreamHub.releaseAt}): queue the newest update held back, if any. */
  release(): void {
    this.heldScheduled = false;
    const h = this.held;
    this.held = null;
    if (!h || this.disposed) return;
    this.lastSentAt = Date.now();
    this.enqueue(liveItem(h));
  }

  /**
   * Queue one message. While the connection's socket is blocked (or this queue already holds
   * {@link MAX_LIVE_QUEUE} messages), a live update replaces the live one not written yet (conflation, latest wins); otherwise every
   * update is queued, so a client that keeps up misses none.
   */
  enqueue(item: Item): void {
    const last = this.queue[this.queue.length - 1];
    const squeeze = this.session.blocked() || this.queue.length >= MAX_LIVE_QUEUE;
    if (squeeze && last && !last.replay && !item.replay && CONFLATABLE.has(this.state.channel.kind)) {
      this.queue[this.queue.length - 1] = item;
      this.session.hub.countConflation(this.state.channel.kind);
    } else this.queue.push(item);
    this.lastSequence = item.entry.sequence;
    if (item.entry.vols !== null) this.lastVols = item.entry.vols;
    this.session.markDirty();
  }

  /** Forget what is queued or held (unsubscribed, or the connection is gone). */
  dispose(): void {
    this.disposed = true;
    this.held = null;
    this.queue.length = 0;
  }
}

/** One channel's state in the hub. */
export class ChannelState {
  readonly subscribers = new Set<Subscription>();
  readonly ring: Entry[] = [];
  latest: Entry | null = null;
  /** Wall ms since which it has no subscriber (null: it has some). */
  idleSince: number | null = null;
  constructor(readonly channel: Channel) {}
}

/** One connection (WebSocket or SSE) and its subscriptions. */
export class Session {
  readonly subs = new Map<string, Subscription>();
  private blockedSince: number | null = null;
  private retry: NodeJS.Timeout | null = null;
  closed = false;
  /** Key id (12 hex digits) or `ip:<address>`: what the connection counts against. */
  owner: string | null = null;

  constructor(
    readonly hub: StreamHub,
    readonly transport: StreamTransport,
  ) {}

  /** Whether the socket was found full at the last flush (and has not drained since). */
  blocked(): boolean {
    return this.blockedSince !== null;
  }

  /** Ask the hub to flush this session soon. */
  markDirty(): void {
    if (!this.closed) this.hub.markDirty(this);
  }

  /**
   * Write what the socket accepts, oldest first per channel, channels in turn. Never waits: what does not fit
   * stays queued (conflated by later updates); a socket blocked past the stall limit is closed.
   */
  flush(): void {
    if (this.closed) return;
    const limits = this.hub.limits;
    const ws = this.transport.kind === 'ws';
    const now = Date.now();
    let pending = false;
    this.transport.cork?.();
    try {
      for (const sub of this.subs.values()) {
        while (sub.queue.length > 0) {
          if (this.transport.buffered() >= limits.maxBufferedBytes) {
            pending = true;
            break;
          }
          const item = sub.queue.shift()!;
          const bytes = this.transport.write(sub, item, sub.render(item, ws));
          sub.lastSentAt = now;
          this.hub.countMessage(sub.state.channel.kind, bytes);
        }
      }
    } finally {
      this.transport.uncork?.();
    }
    if (!pending) {
      this.blockedSince = null;
      return;
    }
    this.blockedSince ??= now;
    if (now - this.blockedSince >= limits.stallMs) {
      this.hub.countSlowClose(this.transport.kind);
      this.close(4008, `slow consumer: socket blocked for more than ${limits.stallMs} ms with ${this.transport.buffered()} bytes queued`);
      return;
    }
    if (!this.retry) {
      this.retry = setTimeout(() => {
        this.retry = null;
        this.flush();
      }, Math.min(100, limits.stallMs));
      this.retry.unref?.();
    }
  }

  /** Close the connection (the transport's close) and forget it. */
  close(code: number, reason: string): void {
    if (this.closed) return;
    this.transport.close(code, reason);
    this.dispose();
  }

  /** Drop every subscription and timer (the connection is gone). */
  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    for (const sub of this.subs.values()) this.hub.detach(sub);
    this.subs.clear();
    this.hub.removeSession(this);
  }
}

/** Metrics of the streaming API. */
class StreamMetrics {
  readonly connections: Gauge<'transport'>;
  readonly subscriptions: Gauge<'kind'>;
  readonly messages: Counter<'kind'>;
  readonly bytes: Counter;
  readonly conflated: Counter<'kind'>;
  readonly slowCloses: Counter<'transport'>;
  readonly resumes: Counter<'outcome'>;
  readonly rpcErrors: Counter<'code'>;
  readonly rejected: Counter<'reason'>;
  readonly renderErrors: Counter;
  constructor(registry: Registry, hub: StreamHub) {
    this.renderErrors = new Counter({ name: 'volsurf_stream_render_errors_total', help: 'Cache updates the stream hub could not render (skipped; never thrown into the pipeline)', registers: [registry] });
    this.connections = new Gauge({
      name: 'volsurf_stream_connections',
      help: 'Open streaming connections (WebSocket /api/v1/ws, SSE /api/v1/stream)',
      labelNames: ['transport'],
      registers: [registry],
      collect() {
        const n = { ws: 0, sse: 0 };
        for (const s of hub.sessions()) n[s.transport.kind]++;
        this.set({ transport: 'ws' }, n.ws);
        this.set({ transport: 'sse' }, n.sse);
      },
    });
    this.subscriptions = new Gauge({
      name: 'volsurf_stream_subscriptions',
      help: 'Channel subscriptions held by the open streaming connections, by channel kind',
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [kind, n] of hub.subscriptionCounts()) this.set({ kind }, n);
      },
    });
    // counted in plain numbers on the hot path (one per message written), handed to prom-client at scrape time
    this.messages = new Counter({
      name: 'volsurf_stream_messages_total',
      help: 'Notifications written to streaming connections, by channel kind',
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [kind, n] of hub.sent) this.inc({ kind }, n);
      },
    });
    this.bytes = new Counter({
      name: 'volsurf_stream_bytes_total',
      help: 'Bytes of notifications written to streaming connections',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(hub.sentBytes);
      },
    });
    this.conflated = new Counter({
      name: 'volsurf_stream_conflated_total',
      help: 'Updates replaced by a newer one before being written (interval_ms, or a socket slower than the updates), by channel kind',
      labelNames: ['kind'],
      registers: [registry],
    });
    this.slowCloses = new Counter({ name: 'volsurf_stream_slow_closes_total', help: 'Connections closed because their socket stayed blocked past STREAM_STALL_MS (code 4008)', labelNames: ['transport'], registers: [registry] });
    this.resumes = new Counter({ name: 'volsurf_stream_resumes_total', help: 'Subscriptions with `since` (or Last-Event-ID), by outcome: replayed, reset, up-to-date, current', labelNames: ['outcome'], registers: [registry] });
    this.rpcErrors = new Counter({ name: 'volsurf_stream_rpc_errors_total', help: 'JSON-RPC errors answered on the WebSocket API, by code', labelNames: ['code'], registers: [registry] });
    this.rejected = new Counter({ name: 'volsurf_stream_rejected_total', help: 'Streaming connections refused or closed for a limit or a credential, by reason', labelNames: ['reason'], registers: [registry] });
  }
}

/** What {@link StreamHub.stats} answers (counts since the service started). */
export interface StreamStats {
  readonly connections: { readonly ws: number; readonly sse: number };
  readonly subscriptions: Readonly<Record<string, number>>;
  readonly messages: number;
  readonly bytes: number;
  readonly conflated: number;
  readonly slowCloses: number;
  readonly resumes: Readonly<Record<string, number>>;
  readonly rpcErrors: number;
  readonly rejected: number;
}

/** Options of {@link StreamHub}. */
export interface StreamHubOptions {
  readonly limits?: Partial<StreamLimits>;
}

/** See the module docstring. */
export class StreamHub {
  readonly limits: StreamLimits;
  /** The `volsurf_stream_*` series (exposed on /metrics by src/service.ts). */
  readonly registry = new Registry();
  readonly metrics: StreamMetrics;
  private readonly states = new Map<string, ChannelState>();
  /** Active iv channel states per surface key `SOURCE:BASE-QUOTE:MODEL`. */
  private readonly ivBySurface = new Map<string, Set<ChannelState>>();
  private readonly open = new Set<Session>();
  private readonly dirty = new Set<Session>();
  private flushScheduled = false;
  private readonly owners = new Map<string, number>();
  private sub: RxSubscription | null = null;
  private statusTimer: NodeJS.Timeout | null = null;
  private statusSeq = 0;
  private statusKey = '';
  /** Wall ms of the last status published (a change, or a repeat). */
  private statusSentAt = Date.now();

  constructor(
    readonly cache: MarketCache,
    opts: StreamHubOptions = {},
  ) {
    this.limits = { ...DEFAULT_STREAM_LIMITS, ...opts.limits };
    this.metrics = new StreamMetrics(this.registry, this);
    // never throws into the cache's Subject (the pipeline, the publisher and the dashboard share it): a document that
    // cannot be rendered is skipped and counted (volsurf_stream_render_errors_total)
    this.sub = cache.updates$.subscribe({
      next: (u) => {
        try {
          this.onUpdate(u);
        } catch {
          this.metrics.renderErrors.inc();
        }
      },
    });
    this.checkStatus();
    this.statusTimer = setInterval(() => this.tick(), this.limits.statusCheckMs);
    this.statusTimer.unref?.();
  }

  /** Stop listening to the cache; close every connection (code 1001, going away). */
  close(): void {
    this.sub?.unsubscribe();
    this.sub = null;
    if (this.statusTimer) clearInterval(this.statusTimer);
    for (const s of [...this.open]) s.close(1001, 'service stopping');
  }

  /** The open sessions. */
  sessions(): Iterable<Session> {
    return this.open;
  }

  /**
   * The dashboard's streaming panel: open connections per transport, subscriptions per channel kind, and the
   * counters since start (messages and bytes written, conflated updates, slow-consumer closes, resumes by outcome,
   * JSON-RPC errors, refused connections).
   */
  async stats(): Promise<StreamStats> {
    const sum = async (c: Counter<string> | Counter) => (await c.get()).values.reduce((a, v) => a + v.value, 0);
    const by = async (c: Counter<string>, label: string) => Object.fromEntries((await c.get()).values.map((v) => [String(v.labels[label]), v.value]));
    const connections = { ws: 0, sse: 0 };
    for (const s of this.open) connections[s.transport.kind]++;
    return {
      connections,
      subscriptions: Object.fromEntries(this.subscriptionCounts()),
      messages: [...this.sent.values()].reduce((a, n) => a + n, 0),
      bytes: this.sentBytes,
      conflated: await sum(this.metrics.conflated),
      slowCloses: await sum(this.metrics.slowCloses),
      resumes: await by(this.metrics.resumes, 'outcome'),
      rpcErrors: await sum(this.metrics.rpcErrors),
      rejected: await sum(this.metrics.rejected),
    };
  }

  /** Subscriptions per channel kind. */
  subscriptionCounts(): Map<ChannelKind, number> {
    const out = new Map<ChannelKind, number>();
    for (const st of this.states.values()) if (st.subscribers.size) out.set(st.channel.kind, (out.get(st.channel.kind) ?? 0) + st.subscribers.size);
    return out;
  }

  /**
   * Register a new connection for `owner` (API key id, or `ip:<address>`); null when that owner already holds
   * `maxConnectionsPerKey` connections (counted in volsurf_stream_rejected_total{reason="connections"}).
   */
  openSession(transport: StreamTransport, owner: string): Session | null {
    const n = this.owners.get(owner) ?? 0;
    if (n >= this.limits.maxConnectionsPerKey) {
      this.metrics.rejected.inc({ reason: 'connections' });
      return null;
    }
    this.owners.set(owner, n + 1);
    const s = new Session(this, transport);
    s.owner = owner;
    this.open.add(s);
    return s;
  }

  /** Whether `owner` may open one more connection now. */
  canOpen(owner: string): boolean {
    return (this.owners.get(owner) ?? 0) < this.limits.maxConnectionsPerKey;
  }

  /** Forget a closed session (Session.dispose calls it). */
  removeSession(s: Session): void {
    if (!this.open.delete(s)) return;
    this.dirty.delete(s);
    if (s.owner) {
      const n = (this.owners.get(s.owner) ?? 1) - 1;
      if (n <= 0) this.owners.delete(s.owner);
      else this.owners.set(s.owner, n);
    }
  }

  /**
   * Schedule a flush of `s`: one flush of every dirty session at the end of the current write window (the next wall
   * clock multiple of `limits.flushMs`: what was published within a window reaches a connection in one socket write),
   * or at the next turn of the event loop when flushMs is 0.
   */
  markDirty(s: Session): void {
    this.dirty.add(s);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    const w = this.limits.flushMs;
    if (w > 0) setTimeout(() => this.flushDirty(), w - (Date.now() % w)).unref?.();
    else setImmediate(() => this.flushDirty());
  }

  /** Flush every dirty session (markDirty's timer). */
  private flushDirty(): void {
    this.flushScheduled = false;
    const batch = [...this.dirty];
    this.dirty.clear();
    for (const x of batch) {
      try {
        x.flush();
      } catch {
        x.close(1011, 'internal error');
      }
    }
  }

  /** Release slots of interval_ms: subscriptions to release per 50 ms step, one timer per step (not one per subscription). */
  private readonly releases = new Map<number, Set<Subscription>>();

  /**
   * Call `sub.release()` at wall time `dueMs`, rounded up to the next 50 ms step: every held subscription due in a
   * step shares one timer, so thousands of interval_ms subscribers cost a few timers a second.
   */
  releaseAt(sub: Subscription, dueMs: number): void {
    const step = Math.ceil(dueMs / RELEASE_STEP_MS) * RELEASE_STEP_MS;
    let set = this.releases.get(step);
    if (!set) {
      this.releases.set(step, (set = new Set()));
      const t = setTimeout(() => {
        this.releases.delete(step);
        for (const s of set!) {
          try {
            s.release();
          } catch {
            /* a subscription that cannot be released is dropped with its connection's next flush */
          }
        }
      }, Math.max(step - Date.now(), 0));
      t.unref?.();
    }
    set.add(sub);
  }

  /** Count a conflated update. */
  countConflation(kind: ChannelKind): void {
    this.metrics.conflated.inc({ kind });
  }

  /** Messages written per channel kind, and their bytes, since start (volsurf_stream_messages_total, _bytes_total). */
  readonly sent = new Map<ChannelKind, number>();
  sentBytes = 0;

  /** Count a written message. */
  countMessage(kind: ChannelKind, bytes: number): void {
    this.sent.set(kind, (this.sent.get(kind) ?? 0) + 1);
    this.sentBytes += bytes;
  }

  /** Count a slow-consumer close. */
  countSlowClose(transport: 'ws' | 'sse'): void {
    this.metrics.slowCloses.inc({ transport });
  }

  /**
   * Subscribe `session` to `channel` (a parsed, canonical channel), replacing an existing subscription of it.
   * With `since` (the last sequence the client holds): the updates after it, in order, when they are all kept;
   * else the current document with `reset: true`; nothing when the client is up to date. Without: the current
   * document (when there is one). Synchronous: no update can come in between.
   */
  subscribe(session: Session, channel: Channel, options: SubscribeOptions, since?: number): ResumeOutcome {
    const old = session.subs.get(channel.name);
    if (old) this.detach(old);
    const st = this.activate(channel);
    const sub = new Subscription(session, st, options);
    session.subs.set(channel.name, sub);
    st.subscribers.add(sub);
    st.idleSince = null;
    const outcome = this.resume(sub, st, since);
    if (since !== undefined) this.metrics.resumes.inc({ outcome });
    return outcome;
  }

  /** Remove one subscription (unsubscribe, or its session closed). */
  detach(sub: Subscription): void {
    sub.dispose();
    sub.session.subs.delete(sub.state.channel.name);
    const st = sub.state;
    st.subscribers.delete(sub);
    if (st.subscribers.size === 0) st.idleSince = Date.now();
  }

  private resume(sub: Subscription, st: ChannelState, since: number | undefined): ResumeOutcome {
    const kind = st.channel.kind;
    if (kind === 'funding') return this.resumeFunding(sub, st, since);
    const latest = st.latest;
    if (!latest) return 'none';
    if (since === undefined) {
      sub.enqueue(liveItem(latest));
      return 'current';
    }
    if (since === latest.sequence) return 'up-to-date';
    if (since < latest.sequence && RECORDED.has(kind) && st.ring.length > 0 && st.ring[0]!.sequence <= since) {
      for (const e of st.ring) if (e.sequence > since) sub.enqueue({ entry: e, reset: false, replay: true });
      return 'replayed';
    }
    sub.enqueue({ entry: latest, reset: true, replay: true });
    return 'reset';
  }

  private resumeFunding(sub: Subscription, st: ChannelState, since: number | undefined): ResumeOutcome {
    const ch = st.channel as Extract<Channel, { kind: 'funding' }>;
    const info = this.cache.funding.instruments(ch.source).find((i) => i.instrumentId === ch.instrumentId);
    if (!info || info.lastTimestamp === null) return 'none';
    const entryOf = (p: { interest: number; timestamp: number }) => this.fundingEntry(ch, info.pair, p.timestamp, p.interest, info.intervalHours);
    if (since === undefined || since > info.lastTimestamp || (info.firstTimestamp !== null && since < info.firstTimestamp - info.intervalHours * 3600)) {
      const last = this.cache.fundingRange(ch.source, ch.instrumentId, info.lastTimestamp, info.lastTimestamp, 1)[0]!;
      sub.enqueue({ entry: entryOf(last), reset: since !== undefined, replay: true });
      return since === undefined ? 'current' : 'reset';
    }
    if (since === info.lastTimestamp) return 'up-to-date';
    const points = this.cache.fundingRange(ch.source, ch.instrumentId, since + 1e-6, info.lastTimestamp, 10_000).reverse();
    for (const p of points) sub.enqueue({ entry: entryOf(p), reset: false, replay: true });
    return 'replayed';
  }

  /** The state of `channel`, created (and filled with the current document) when not recording yet. */
  private activate(channel: Channel): ChannelState {
    let st = this.states.get(channel.name);
    if (st) return st;
    st = new ChannelState(channel);
    this.states.set(channel.name, st);
    const c = channel;
    if (c.kind === 'surface' || c.kind === 'iv_summary' || c.kind === 'iv') {
      const snap = this.cache.getSurface(c.source, c.pair, c.model);
      if (c.kind === 'iv') {
        const key = `${c.source}:${c.pair.base}-${c.pair.quote}:${c.model}`;
        let set = this.ivBySurface.get(key);
        if (!set) this.ivBySurface.set(key, (set = new Set()));
        set.add(st);
      }
      if (snap) this.record(st, this.render(c, snap));
    } else if (c.kind === 'forward_curve') {
      const fc = this.cache.getForwardCurve(c.source, c.pair);
      if (fc) this.record(st, this.renderCurve(c.name, fc));
    } else if (c.kind === 'status') {
      st.latest = this.statusEntry(this.statusDoc());
    }
    return st;
  }

  private record(st: ChannelState, e: Entry | null): void {
    if (!e) return;
    const old = st.latest;
    if (old) {
      // a superseded entry keeps only its JSON (for resume); a queued copy rebuilds its frame if it needs it
      old.data = null;
      old.frame = null;
      old.variants = null;
      old.live = null;
    }
    st.latest = e;
    if (RECORDED.has(st.channel.kind)) {
      st.ring.push(e);
      if (st.ring.length > this.limits.resumeDepth) st.ring.shift();
    }
  }

  private publish(st: ChannelState, e: Entry | null): void {
    if (!e) return;
    this.record(st, e);
    for (const sub of st.subscribers) sub.deliver(e);
  }

  private entry(channel: string, sequence: number, observationTimestamp: number, data: Record<string, unknown>, vols: readonly number[] | null = null): Entry {
    const full = { ...data, sequence, observationTimestamp, publishTimestamp: this.cache.clock.now() };
    return { channel, sequence, observationTimestamp, json: JSON.stringify(full), data: full, vols, frame: null, variants: null, live: null };
  }

  private render(c: Extract<Channel, { kind: 'surface' | 'iv_summary' | 'iv' }>, snap: SurfaceSnapshot): Entry | null {
    if (c.kind !== 'iv') {
      const doc = c.kind === 'surface' ? surfaceDocument(snap) : ivSummaryDocument(this.cache.history, snap);
      return this.entry(c.name, snap.sequence, snap.observationTimestamp, doc);
    }
    const p = expiryPoint(snap, c.expirationTimestamp);
    const points = ivPoints(c, p);
    if (!points) return null;
    const at = points.length === 1 ? { ...(c.by === 'delta' ? { delta: c.value } : {}), strike: points[0]!.strike, impliedVolatility: points[0]!.impliedVolatility } : { points };
    const doc = { source: c.source, baseCurrency: c.pair.base, quoteCurrency: c.pair.quote, volatilityModel: c.model, expirationTimestamp: c.expirationTimestamp, ...at, forwardPrice: p.forward, spotPrice: p.spot };
    return this.entry(c.name, snap.sequence, snap.observationTimestamp, doc, points.map((x) => x.impliedVolatility));
  }

  private renderCurve(name: string, fc: ForwardCurveSnapshot): Entry {
    return this.entry(name, fc.sequence, fc.observationTimestamp, { ...forwardCurveDocument(fc), spotPrice: fc.spot });
  }

  private fundingEntry(ch: Extract<Channel, { kind: 'funding' }>, pair: { base: string; quote: string }, timestamp: number, interest: number, intervalHours: number): Entry {
    return this.entry(ch.name, timestamp, timestamp, { source: ch.source, instrumentId: ch.instrumentId, baseCurrency: pair.base, quoteCurrency: pair.quote, timestamp, interest, intervalHours });
  }

  private onUpdate(u: CacheUpdate): void {
    if (u.type === 'surface') {
      const s = u.snapshot;
      for (const kind of ['surface', 'iv_summary'] as const) {
        const st = this.states.get(surfaceChannelName(kind, s.source, s.pair, s.model));
        if (st) this.publish(st, this.render(st.channel as Extract<Channel, { kind: typeof kind }>, s));
      }
      const ivs = this.ivBySurface.get(`${s.source}:${s.pair.base}-${s.pair.quote}:${s.model}`);
      if (ivs) for (const st of ivs) this.publish(st, this.render(st.channel as Extract<Channel, { kind: 'iv' }>, s));
    } else if (u.type === 'forwardCurve') {
      const c = u.snapshot;
      const name = `forward_curve.${c.source}.${c.pair.base}-${c.pair.quote}`;
      const st = this.states.get(name);
      if (st) this.publish(st, this.renderCurve(name, c));
    } else {
      const p: FundingRate = u.point;
      const st = this.states.get(`funding.${p.source}.${p.instrumentId}`);
      if (st) this.publish(st, this.fundingEntry(st.channel as Extract<Channel, { kind: 'funding' }>, { base: p.base, quote: p.quote }, p.timestamp, p.interest, p.intervalHours));
    }
  }

  /** The status document (without sequence and times of the check). */
  statusDoc(): Record<string, unknown> {
    const expected = this.cache.expected();
    const sources = [...new Set(expected.map((p) => p.source))];
    const held = this.cache.held();
    return {
      held: held ? held.message : null,
      feeds: sources.map((source) => {
        const f = this.cache.feedState(source);
        return { source, connected: f?.connected ?? false, since: f?.since ?? null };
      }),
      pairs: expected.map(({ source, pair }) => {
        const u = this.cache.unavailable(source, pair, 'SVI');
        return {
          source,
          baseCurrency: pair.base,
          quoteCurrency: pair.quote,
          state: u ? u.reason : 'ok',
          since: u && u.reason === 'stale' ? u.sinceS : null,
          message: u ? u.message : null,
        };
      }),
    };
  }

  private statusEntry(doc: Record<string, unknown>): Entry {
    return this.entry('status', this.statusSeq, this.cache.clock.now(), doc);
  }

  /**
   * Check the status: a change is published on the `status` channel with the next sequence; an unchanged status is
   * published again (same sequence, the check's time as observationTimestamp) once `statusRepeatMs` passed since the
   * last one, so that the channel is never silent for longer than that while the service runs.
   */
  checkStatus(): void {
    const doc = this.statusDoc();
    const key = JSON.stringify(doc);
    const now = Date.now();
    if (key === this.statusKey && now - this.statusSentAt < this.limits.statusRepeatMs) return;
    if (key !== this.statusKey) this.statusSeq++;
    this.statusKey = key;
    this.statusSentAt = now;
    const st = this.states.get('status');
    if (st) this.publish(st, this.statusEntry(doc));
  }

  private tick(): void {
    try {
      this.checkStatus();
    } catch {
      /* a status that cannot be built now is tried again at the next tick */
    }
    const now = Date.now();
    for (const [name, st] of this.states) {
      if (st.idleSince !== null && now - st.idleSince > this.limits.resumeWindowS * 1000) {
        this.states.delete(name);
        if (st.channel.kind === 'iv') {
          const c = st.channel;
          this.ivBySurface.get(`${c.source}:${c.pair.base}-${c.pair.quote}:${c.model}`)?.delete(st);
        }
      }
    }
  }
}
