/**
 * Local simulator of OKX's API v5 PUBLIC protocol (REST bootstrap + WebSocket), driven by an OKX view
 * ({@link MarketView}, {@link OKX_VIEW}) of the shared stochastic {@link Market}. The service's real OKX
 * adapter (adapters/okx/) connects to it unchanged: only the URLs differ
 * (`ws://127.0.0.1:<port>/ws/v5/public`, REST base `http://127.0.0.1:<port>`).
 *
 * REST (one node http server; envelope `{code: "0", msg: "", data: [...]}`, errors HTTP 400 with
 * `{code, msg, data: []}`; docs sections of https://www.okx.com/docs-v5/en/):
 * - GET /api/v5/public/instruments?instType=OPTION|FUTURES|SWAP[&instFamily=|&uly=][&instId=]
 *   (#public-data-rest-api-get-instruments; OPTION needs instFamily or uly: 50014)
 * - GET /api/v5/public/funding-rate-history?instId=&before=&after=&limit= (<= 400, default 400; newest
 *   first; `after` = records older than that fundingTime, `before` = newer)
 * - GET /api/v5/public/funding-rate?instId=, /api/v5/public/time, /api/v5/public/opt-summary?instFamily=|uly=,
 *   /api/v5/market/index-tickers?instId=, /api/v5/public/mark-price?instType=&instId=
 *
 * WebSocket /ws/v5/public (#overview-websocket-subscribe, #overview-websocket-connect):
 * - `{id?, op: subscribe|unsubscribe, args: [{channel, instId|instFamily|uly}]}`; each argument is
 *   answered `{id?, event: subscribe|unsubscribe, arg, connId}`, or `{id?, event: error, code: "60018",
 *   msg, connId}` for an unknown channel/instrument; a frame that is not such a request:
 *   `{event: error, code: "60012", msg: "Invalid request: ...", connId}`; a request over 64 KB: 60012;
 *   more than `requestsPerHour` (480) subscribe/unsubscribe requests in an hour on one connection:
 *   `{event: error, code: "60014", msg: "Requests too frequent."}`.
 * - channels: `opt-summary` (instFamily BTC-USD / ETH-USD; the old `uly` selector is accepted too),
 *   `index-tickers` (instId BTC-USD / ETH-USD), `mark-price` and `tickers` (futures and swaps),
 *   `funding-rate` (swaps). Pushes `{arg, data: [...]}` (okxMessages.ts).
 * - heartbeat: the text `ping` is answered with the text `pong`; a connection to which the server has
 *   sent nothing for `idleCloseMs` (30 s: OKX closes a connection without data for 30 s) is closed
 *   with code 4004 `No data received in 30s.`.
 *
 * Cadence: a market step every `tickMs` (when this server steps the market). Per tick, `opt-summary` of a
 * subscribed family carries the options refreshed this tick (each with probability
 * `optionUpdatesPerSecond * tickMs / 1000`; the whole family on the first tick after subscribing), in
 * pushes of at most `maxItemsPerPush` items; `index-tickers` every `indexIntervalMs`, `mark-price`
 * every `markPriceIntervalMs` (OKX: 200 ms), `tickers` every `tickersIntervalMs`, `funding-rate`
 * every `fundingPushMs` (OKX: 30-90 s), each also on the first tick after subscribing.
 */
import { performance } from 'node:perf_hooks';
import type { WebSocket } from 'ws';
import { garbageFrames, simulatorFaults, type SimulatorFaults } from './faults.js';
import { MarketView, OKX_VIEW, type ExchangeViewParams } from './exchangeView.js';
import type { Market, Underlying } from './market.js';
import { OkxChains, type OkxSimInstrument } from './okxChains.js';
import { fundingRateItem, indexStats, indexTickerItem, markPriceItem, okxPush, optSummaryItem, tickerItem, type IndexStats, type Json } from './okxMessages.js';
import { OkxError, answerOkxRest } from './okxRest.js';
import { SimulatedExchange, Subscribers, connectionHash, frameBuffer, httpWsHandle, listenHttpWs, refreshProbability, simulatorBasics, trackConnection, type RunningSimulator, type SimulatorServerOptions, type SimulatorStats } from './serverKit.js';

/** Options of {@link startOkxSimulator} (the port serves both REST and WebSocket; `market`: e.g. the Deribit simulator's, shared). */
export interface OkxSimulatorOptions extends SimulatorServerOptions {
  /** Step the market every tick. Default: true for an own market, false for a given (shared) one. */
  readonly stepMarket?: boolean;
  /** OKX's view constants. Default {@link OKX_VIEW}. */
  readonly view?: ExchangeViewParams;
  /** Mean refreshes per second of each option in `opt-summary`. Default 1. */
  readonly optionUpdatesPerSecond?: number;
  /** Most items in one `opt-summary` push. Default 100. */
  readonly maxItemsPerPush?: number;
  /** `index-tickers` period, ms. Default 100. */
  readonly indexIntervalMs?: number;
  /** `mark-price` period, ms. Default 200. */
  readonly markPriceIntervalMs?: number;
  /** `tickers` period, ms. Default 1000. */
  readonly tickersIntervalMs?: number;
  /** `funding-rate` period, ms. Default 30 000. */
  readonly fundingPushMs?: number;
  /** Close a connection the server has sent nothing to for this long, ms. Default 30 000. */
  readonly idleCloseMs?: number;
  /** subscribe/unsubscribe requests allowed per connection per rolling hour. Default 480. */
  readonly requestsPerHour?: number;
}

/** Fault hooks of the OKX simulator (the Deribit set plus REST failures). */
export interface OkxSimulatorFaults extends SimulatorFaults {
  /** The next `n` REST requests fail with HTTP 429 `{code: "50011", msg: "Too Many Requests"}`, Retry-After 1. */
  restFailures(n: number): void;
}

/** Counters of what the OKX simulator sent. */
export interface OkxSimulatorStats extends SimulatorStats {
  /** `opt-summary` items sent (all connections). */
  readonly optionItemsSent: number;
  /** REST requests answered. */
  readonly restRequests: number;
}

/** A running OKX simulator. */
export interface OkxSimulator extends RunningSimulator<OkxSimulatorStats, OkxSimulatorFaults> {
  /** `ws://127.0.0.1:<port>/ws/v5/public`. */
  readonly url: string;
  /** REST base `http://127.0.0.1:<port>`. */
  readonly restUrl: string;
  readonly view: MarketView;
  readonly chains: OkxChains;
}

const WS_PATH = '/ws/v5/public';
/** Garbage frames for malformedFrames (faults.ts garbageFrames). */
const GARBAGE = garbageFrames(
  '{"arg":{"channel":"opt-summary","instFamily":"BTC-USD"},"data":[{"instId":"BTC-USD-',
  '{"arg":{"channel":"mark-price","instId":"NO-SUCH-SWAP"},"data":"garbage"}',
);

const MAX_REQUEST_BYTES = 64 * 1024;
const HOUR_MS = 3_600_000;
const CHANNELS = ['opt-summary', 'index-tickers', 'mark-price', 'tickers', 'funding-rate'] as const;
type Channel = (typeof CHANNELS)[number];

interface Arg {
  readonly channel: Channel;
  /** The selector value (instId or instFamily/uly). */
  readonly sel: string;
  /** The argument as the client sent it (echoed in acks and pushes). */
  readonly echo: Json;
}

interface Conn {
  readonly ws: WebSocket;
  readonly connId: string;
  readonly args: Map<string, Arg>;
  /** Keys subscribed since the last tick (need their first push). */
  readonly fresh: Set<string>;
  lastSentAt: number;
  requestTimes: number[];
}

/** The resolved cadence options of the OKX simulator (see {@link OkxSimulatorOptions}); periods in ms. */
interface OkxCadence {
  readonly optionP: number;
  readonly maxItems: number;
  readonly indexEvery: number;
  readonly markEvery: number;
  readonly tickersEvery: number;
  readonly fundingEvery: number;
  readonly idleCloseMs: number;
  readonly perHour: number;
}

/** The cadence options with their defaults. */
function okxCadence(opts: OkxSimulatorOptions, tickMs: number): OkxCadence {
  return {
    optionP: refreshProbability(opts.optionUpdatesPerSecond, tickMs),
    maxItems: Math.max(1, opts.maxItemsPerPush ?? 100),
    indexEvery: opts.indexIntervalMs ?? 100,
    markEvery: opts.markPriceIntervalMs ?? 200,
    tickersEvery: opts.tickersIntervalMs ?? 1000,
    fundingEvery: opts.fundingPushMs ?? 30_000,
    idleCloseMs: opts.idleCloseMs ?? 30_000,
    perHour: opts.requestsPerHour ?? 480,
  };
}

/**
 * Resolve one subscription argument `{channel, instId|instFamily|uly}` against the chains.
 * @throws OkxError 60012 when it is not an object, 60018 when the channel or instrument is unknown
 */
function resolveArg(a: unknown, chains: OkxChains): Arg {
  if (typeof a !== 'object' || a === null || Array.isArray(a)) throw new OkxError('60012', `Invalid request: ${JSON.stringify(a)?.slice(0, 100)}`);
  const o = a as Json;
  const channel = o.channel;
  const sel = (o.instId ?? o.instFamily ?? o.uly) as unknown;
  const label = `channel:${String(channel)},${o.instId !== undefined ? 'instId' : o.instFamily !== undefined ? 'instFamily' : 'uly'}:${String(sel)}`;
  const missing = new OkxError('60018', `Wrong URL or ${label} doesn't exist. Please use the correct URL, channel and parameters referring to API document.`);
  if (typeof channel !== 'string' || typeof sel !== 'string' || !(CHANNELS as readonly string[]).includes(channel)) throw missing;
  const ch = channel as Channel;
  const echo: Json = { channel: ch };
  if (ch === 'opt-summary') {
    if (o.instFamily === undefined && o.uly === undefined) throw missing;
    if (!chains.family(sel)) throw missing;
    if (o.instFamily !== undefined) echo.instFamily = sel;
    else echo.uly = sel;
  } else {
    if (typeof o.instId !== 'string') throw missing;
    if (ch === 'index-tickers') {
      if (!chains.family(sel)) throw missing;
    } else {
      const inst = chains.get(sel);
      if (!inst || inst.instType === 'OPTION' || (ch === 'funding-rate' && inst.instType !== 'SWAP')) throw missing;
    }
    echo.instId = sel;
  }
  return { channel: ch, sel, echo };
}

/** The connections of `cs` grouped by their echo of the key's argument (instFamily vs uly): one push per group, so that each client sees its own arg. */
function byEcho(key: string, cs: readonly Conn[]): { arg: Json; cs: Conn[] }[] {
  const m = new Map<string, { arg: Json; cs: Conn[] }>();
  for (const c of cs) {
    const arg = c.args.get(key)!.echo;
    const k = JSON.stringify(arg);
    if (!m.has(k)) m.set(k, { arg, cs: [] });
    m.get(k)!.cs.push(c);
  }
  return [...m.values()];
}

/** The request a text frame carries, or the reason it is invalid (an OKX error answer's code and message). */
type ParsedRequest = { readonly ok: true; readonly op: 'subscribe' | 'unsubscribe'; readonly args: unknown[]; readonly id: string | undefined } | { readonly ok: false; readonly id: string | undefined };

/** Parse a frame's text as `{id?, op: subscribe|unsubscribe, args: [...]}` (args not empty). */
function parseRequest(text: string): ParsedRequest {
  let req: unknown;
  try {
    req = JSON.parse(text);
  } catch {
    return { ok: false, id: undefined };
  }
  if (typeof req !== 'object' || req === null || Array.isArray(req)) return { ok: false, id: undefined };
  const r = req as Json;
  const id = typeof r.id === 'string' ? r.id : undefined;
  if ((r.op !== 'subscribe' && r.op !== 'unsubscribe') || !Array.isArray(r.args) || r.args.length === 0) return { ok: false, id };
  return { ok: true, op: r.op, args: r.args, id };
}

/**
 * The OKX simulator's state and WebSocket protocol: connections, subscriptions (key `channel|selector`), the
 * publication per tick and the idle close. The REST side is okxRest.ts.
 */
class OkxExchange extends SimulatedExchange<Conn> {
  /** subscription key `channel|selector` -> connections */
  private readonly subs = new Subscribers<Conn>();
  private readonly lastPush = new Map<string, number>();
  private readonly statsCache = new Map<string, { hour: number; st: IndexStats }>();
  optionItemsSent = 0;
  private connSeq = 0;

  constructor(
    market: Market,
    readonly view: MarketView,
    readonly chains: OkxChains,
    private readonly cadence: OkxCadence,
    stepMarket: boolean,
  ) {
    super(market, 'okx', stepMarket, (c) => {
      c.lastSentAt = performance.now();
    });
  }

  private sendJson(c: Conn, o: Json): boolean {
    return this.sender.send(c, JSON.stringify(o));
  }

  /** The index's 24 h statistics, cached by the hour. */
  readonly statsOf = (u: Underlying, nowMs: number): IndexStats => {
    const hour = Math.floor(nowMs / HOUR_MS);
    const held = this.statsCache.get(u);
    if (held && held.hour === hour) return held.st;
    const st = indexStats(this.view, u, nowMs);
    this.statsCache.set(u, { hour, st });
    return st;
  };

  // ---- subscriptions ---------------------------------------------------------------------------

  private addSub(c: Conn, arg: Arg): void {
    const key = `${arg.channel}|${arg.sel}`;
    if (!c.args.has(key)) {
      c.args.set(key, arg);
      this.subs.addTo(key, c);
    }
    c.fresh.add(key);
  }

  private removeSub(c: Conn, key: string): boolean {
    if (!c.args.delete(key)) return false;
    c.fresh.delete(key);
    if (this.subs.removeFrom(key, c)) this.lastPush.delete(key);
    return true;
  }

  /** A new connection: its id, its messages, its subscriptions dropped when it closes. */
  readonly onConnection = (ws: WebSocket): void => {
    const connId = connectionHash('okx', this.market.seed, ++this.connSeq);
    const c: Conn = { ws, connId, args: new Map(), fresh: new Set(), lastSentAt: performance.now(), requestTimes: [] };
    trackConnection(
      this.conns,
      c,
      (data) => this.onMessage(c, data),
      () => {
        for (const key of [...c.args.keys()]) this.removeSub(c, key);
      },
    );
  };

  private onMessage(c: Conn, raw: Buffer | ArrayBuffer | Buffer[]): void {
    if (this.silenced()) return;
    const buf = frameBuffer(raw);
    const text = buf.toString('utf8');
    if (text === 'ping') {
      this.sender.send(c, 'pong');
      return;
    }
    const error = (code: string, msg: string, id?: unknown) => this.sendJson(c, { ...(id !== undefined ? { id } : {}), event: 'error', code, msg, connId: c.connId });
    if (buf.length > MAX_REQUEST_BYTES) {
      error('60012', `Invalid request: request exceeds ${MAX_REQUEST_BYTES} bytes`);
      return;
    }
    const r = parseRequest(text);
    if (!r.ok) {
      error('60012', `Invalid request: ${text.slice(0, 100)}`, r.id);
      return;
    }
    const now = performance.now();
    c.requestTimes = c.requestTimes.filter((t) => t > now - HOUR_MS);
    if (c.requestTimes.length >= this.cadence.perHour) {
      error('60014', 'Requests too frequent.', r.id);
      return;
    }
    c.requestTimes.push(now);
    for (const a of r.args) this.applyArg(c, r.op, a, r.id, error);
  }

  /** Subscribe or unsubscribe one argument and acknowledge it (or answer its error). */
  private applyArg(c: Conn, op: 'subscribe' | 'unsubscribe', a: unknown, id: string | undefined, error: (code: string, msg: string, id?: unknown) => boolean): void {
    try {
      const arg = resolveArg(a, this.chains);
      if (op === 'subscribe') {
        if (this.switches.rejecting) throw new OkxError('60014', 'Requests too frequent.');
        this.addSub(c, arg);
      } else this.removeSub(c, `${arg.channel}|${arg.sel}`);
      this.sendJson(c, { ...(id !== undefined ? { id } : {}), event: op, arg: arg.echo, connId: c.connId });
    } catch (e) {
      if (e instanceof OkxError) error(e.code, e.message, id);
      else error('60012', 'Invalid request', id);
    }
  }

  // ---- publication -------------------------------------------------------------------------------

  private publish(key: string, arg: Json, data: readonly Json[], to: Iterable<Conn>): void {
    if (data.length === 0) return;
    const text = JSON.stringify(okxPush(arg, data));
    for (const c of to) if (this.sender.send(c, text)) this.notificationsSent++;
    this.lastPush.set(key, performance.now());
  }

  private subscribers(key: string): { fresh: Conn[]; old: Conn[] } {
    const fresh: Conn[] = [];
    const old: Conn[] = [];
    for (const c of this.subs.get(key) ?? []) (c.fresh.has(key) ? fresh : old).push(c);
    return { fresh, old };
  }

  private dueKey(key: string, every: number, t: number): boolean {
    const last = this.lastPush.get(key);
    return last === undefined || t - last >= every - 1;
  }

  private pushChunks(key: string, arg: Json, items: readonly Json[], to: Conn[]): void {
    if (to.length === 0) return;
    const maxItems = this.cadence.maxItems;
    for (let i = 0; i < items.length; i += maxItems) this.publish(key, arg, items.slice(i, i + maxItems), to);
    for (const c of to) if (c.ws.readyState === c.ws.OPEN && !this.silenced()) this.optionItemsSent += items.length;
  }

  private publishOptSummary(family: string, nowMs: number): void {
    const key = `opt-summary|${family}`;
    const { fresh, old } = this.subscribers(key);
    if (fresh.length === 0 && old.length === 0) return;
    const options = this.chains.list('OPTION', family);
    const sampled = options.filter(() => this.sampleRng.uniform() < this.cadence.optionP);
    const build = (list: OkxSimInstrument[]) => list.map((i) => optSummaryItem(this.view, i, nowMs));
    if (fresh.length > 0) {
      const all = build(options);
      for (const g of byEcho(key, fresh)) this.pushChunks(key, g.arg, all, g.cs);
      const ids = new Set(sampled.map((i) => i.instId));
      const part = all.filter((it) => ids.has(it.instId as string));
      for (const g of byEcho(key, old)) this.pushChunks(key, g.arg, part, g.cs);
      for (const c of fresh) c.fresh.delete(key);
    } else {
      const part = build(sampled);
      for (const g of byEcho(key, old)) this.pushChunks(key, g.arg, part, g.cs);
    }
  }

  private publishSimple(key: string, every: number, t: number, make: () => Json): void {
    const { fresh, old } = this.subscribers(key);
    if (fresh.length === 0 && old.length === 0) return;
    const to = this.dueKey(key, every, t) ? [...fresh, ...old] : fresh;
    if (to.length === 0) return;
    const arg = to[0]!.args.get(key)!.echo;
    this.publish(key, arg, [make()], to);
    for (const c of fresh) c.fresh.delete(key);
  }

  /** One market step and its publication. */
  readonly tick = (): void => {
    const nowMs = this.beginTick();
    const changes = this.chains.refresh(nowMs);
    for (const inst of changes.expired) {
      for (const ch of ['mark-price', 'tickers'] as const) {
        const key = `${ch}|${inst.instId}`;
        for (const c of [...(this.subs.get(key) ?? [])]) this.removeSub(c, key);
      }
    }
    if (this.silenced()) return;
    this.publishAll(nowMs, performance.now());
  };

  /** Every channel due at t (performance.now() ms), the market at nowMs (Unix ms). */
  private publishAll(nowMs: number, t: number): void {
    const { view, chains, cadence } = this;
    for (const family of chains.familyNames()) {
      // the index first: a client joining the family's quotes with its index has it before the options
      const spec = chains.family(family)!;
      this.publishSimple(`index-tickers|${family}`, cadence.indexEvery, t, () =>
        indexTickerItem(family, spec.priceDecimals, view.spot(spec.underlying), this.statsOf(spec.underlying, nowMs), nowMs),
      );
      this.publishOptSummary(family, nowMs);
    }
    for (const inst of [...chains.list('SWAP'), ...chains.list('FUTURES')]) {
      this.publishSimple(`mark-price|${inst.instId}`, cadence.markEvery, t, () => markPriceItem(view, inst, nowMs));
      this.publishSimple(`tickers|${inst.instId}`, cadence.tickersEvery, t, () => tickerItem(view, inst, nowMs, this.quoteRng, this.statsOf(inst.underlying, nowMs)));
      if (inst.instType === 'SWAP') this.publishSimple(`funding-rate|${inst.instId}`, cadence.fundingEvery, t, () => fundingRateItem(view, inst, nowMs));
    }
  }

  /** Close (4004) every connection the server has sent nothing to for idleCloseMs. */
  readonly idleCheck = (): void => {
    if (this.silenced()) return;
    const t = performance.now();
    for (const c of this.conns) if (t - c.lastSentAt > this.cadence.idleCloseMs && c.ws.readyState === c.ws.OPEN) c.ws.close(4004, 'No data received in 30s.');
  };

}

/**
 * Start the OKX simulator.
 * @returns once listening; `url` and `restUrl` are what the OKX adapter needs.
 * @throws when the port cannot be bound.
 */
export async function startOkxSimulator(opts: OkxSimulatorOptions = {}): Promise<OkxSimulator> {
  const { host, tickMs, market } = simulatorBasics(opts);
  const view = new MarketView(market, opts.view ?? OKX_VIEW);
  const cadence = okxCadence(opts, tickMs);
  const x = new OkxExchange(market, view, new OkxChains(view), cadence, opts.stepMarket ?? !opts.market);
  const { conns, switches, sender } = x;
  const srv = await listenHttpWs(host, opts.port, [WS_PATH], (req, res) => answerOkxRest(x, x.switches, req, res));
  srv.wss.on('connection', x.onConnection);
  const timer = setInterval(x.tick, tickMs);
  const idleTimer = setInterval(x.idleCheck, Math.min(1000, Math.max(10, cadence.idleCloseMs / 4)));
  const faults: OkxSimulatorFaults = simulatorFaults({
    switches,
    conns,
    send: sender.send,
    garbage: GARBAGE,
    subscriptionsOf: (c) => c.args.size,
    // OKX's 30 s idle close counts from the end of the silence, not from before it
    onSilence: (until) => {
      for (const c of conns) c.lastSentAt = Math.max(c.lastSentAt, until);
    },
  });
  return {
    url: `ws://${host}:${srv.port}${WS_PATH}`,
    ...httpWsHandle(host, srv, conns, [timer, idleTimer]),
    market,
    view,
    chains: x.chains,
    faults,
    stats: () => ({ framesSent: sender.framesSent, notificationsSent: x.notificationsSent, ticks: x.ticks, optionItemsSent: x.optionItemsSent, restRequests: srv.restRequests() }),
  };
}
