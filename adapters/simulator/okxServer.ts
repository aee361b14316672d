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
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { WebSocketServer, type WebSocket } from 'ws';
import type { SimulatorStats } from './deribitServer.js';
import { FaultSwitches, simulatorFaults, type SimulatorFaults } from './faults.js';
import { MarketView, OKX_VIEW, type ExchangeViewParams } from './exchangeView.js';
import { Market, type Underlying } from './market.js';
import { OkxChains, type OkxInstType, type OkxSimInstrument } from './okxChains.js';
import {
  fundingHistoryItems,
  fundingRateItem,
  indexStats,
  indexTickerItem,
  markPriceItem,
  okxPush,
  optSummaryItem,
  tickerItem,
  type IndexStats,
  type Json,
} from './okxMessages.js';
import { Rng, hashString } from './rng.js';

/** Options of {@link startOkxSimulator}. */
export interface OkxSimulatorOptions {
  /** TCP port of both REST and WebSocket; 0 (default) picks a free one. */
  readonly port?: number;
  /** Interface to bind; default 127.0.0.1. */
  readonly host?: string;
  /** Market seed (ignored when `market` is given). Default 42. */
  readonly seed?: number;
  /** Market step and publication period, ms. Default 100. */
  readonly tickMs?: number;
  /** Simulator clock, Unix ms (ignored when `market` is given). Default Date.now. */
  readonly clock?: () => number;
  /** A shared market (e.g. the Deribit simulator's) instead of a new one. */
  readonly market?: Market;
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
export interface OkxSimulator {
  /** `ws://127.0.0.1:<port>/ws/v5/public`. */
  readonly url: string;
  /** REST base `http://127.0.0.1:<port>`. */
  readonly restUrl: string;
  readonly port: number;
  readonly market: Market;
  readonly view: MarketView;
  readonly chains: OkxChains;
  readonly faults: OkxSimulatorFaults;
  stats(): OkxSimulatorStats;
  /** Stop ticking, close every socket and the server. */
  close(): Promise<void>;
}

const WS_PATH = '/ws/v5/public';
const MAX_BUFFERED = 16 * 1024 * 1024;
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

class OkxError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Start the OKX simulator.
 * @returns once listening; `url` and `restUrl` are what the OKX adapter needs.
 * @throws when the port cannot be bound.
 */
export async function startOkxSimulator(opts: OkxSimulatorOptions = {}): Promise<OkxSimulator> {
  const host = opts.host ?? '127.0.0.1';
  const tickMs = Math.max(1, opts.tickMs ?? 100);
  const market = opts.market ?? new Market({ seed: opts.seed ?? 42, ...(opts.clock ? { clock: opts.clock } : {}) });
  const stepMarket = opts.stepMarket ?? !opts.market;
  const view = new MarketView(market, opts.view ?? OKX_VIEW);
  const chains = new OkxChains(view);
  const optionP = Math.min(1, Math.max(0, ((opts.optionUpdatesPerSecond ?? 1) * tickMs) / 1000));
  const maxItems = Math.max(1, opts.maxItemsPerPush ?? 100);
  const indexEvery = opts.indexIntervalMs ?? 100;
  const markEvery = opts.markPriceIntervalMs ?? 200;
  const tickersEvery = opts.tickersIntervalMs ?? 1000;
  const fundingEvery = opts.fundingPushMs ?? 30_000;
  const idleCloseMs = opts.idleCloseMs ?? 30_000;
  const perHour = opts.requestsPerHour ?? 480;
  const quoteRng = Rng.derive(market.seed, 'okx:quotes');
  const sampleRng = Rng.derive(market.seed, 'okx:sampling');

  const conns = new Set<Conn>();
  /** subscription key `channel|selector` -> connections */
  const subs = new Map<string, Set<Conn>>();
  const lastPush = new Map<string, number>();
  const statsCache = new Map<string, { hour: number; st: IndexStats }>();
  const switches = new FaultSwitches();
  let framesSent = 0;
  let notificationsSent = 0;
  let optionItemsSent = 0;
  let restRequests = 0;
  let ticks = 0;
  let connSeq = 0;

  const silenced = () => switches.silenced();

  function send(c: Conn, text: string | Buffer): boolean {
    if (c.ws.readyState !== c.ws.OPEN || silenced()) return false;
    if (c.ws.bufferedAmount > MAX_BUFFERED) return false;
    c.ws.send(text);
    c.lastSentAt = performance.now();
    framesSent++;
    return true;
  }

  function sendJson(c: Conn, o: Json): boolean {
    return send(c, JSON.stringify(o));
  }

  function statsOf(u: Underlying, nowMs: number): IndexStats {
    const hour = Math.floor(nowMs / HOUR_MS);
    const held = statsCache.get(u);
    if (held && held.hour === hour) return held.st;
    const st = indexStats(view, u, nowMs);
    statsCache.set(u, { hour, st });
    return st;
  }

  // ---- subscriptions ---------------------------------------------------------------------------

  /** Resolve one subscription argument; throws OkxError 60018 when the channel or instrument is unknown. */
  function resolveArg(a: unknown): Arg {
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

  function addSub(c: Conn, arg: Arg): void {
    const key = `${arg.channel}|${arg.sel}`;
    if (!c.args.has(key)) {
      c.args.set(key, arg);
      let set = subs.get(key);
      if (!set) subs.set(key, (set = new Set()));
      set.add(c);
    }
    c.fresh.add(key);
  }

  function removeSub(c: Conn, key: string): boolean {
    if (!c.args.delete(key)) return false;
    c.fresh.delete(key);
    const set = subs.get(key);
    set?.delete(c);
    if (set && set.size === 0) {
      subs.delete(key);
      lastPush.delete(key);
    }
    return true;
  }

  function onMessage(c: Conn, raw: Buffer | ArrayBuffer | Buffer[]): void {
    if (silenced()) return;
    const buf = Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw as ArrayBuffer);
    const text = buf.toString('utf8');
    if (text === 'ping') {
      send(c, 'pong');
      return;
    }
    const error = (code: string, msg: string, id?: unknown) => sendJson(c, { ...(id !== undefined ? { id } : {}), event: 'error', code, msg, connId: c.connId });
    if (buf.length > MAX_REQUEST_BYTES) {
      error('60012', `Invalid request: request exceeds ${MAX_REQUEST_BYTES} bytes`);
      return;
    }
    let req: unknown;
    try {
      req = JSON.parse(text);
    } catch {
      error('60012', `Invalid request: ${text.slice(0, 100)}`);
      return;
    }
    if (typeof req !== 'object' || req === null || Array.isArray(req)) {
      error('60012', `Invalid request: ${text.slice(0, 100)}`);
      return;
    }
    const r = req as Json;
    const id = typeof r.id === 'string' ? r.id : undefined;
    if ((r.op !== 'subscribe' && r.op !== 'unsubscribe') || !Array.isArray(r.args) || r.args.length === 0) {
      error('60012', `Invalid request: ${text.slice(0, 100)}`, id);
      return;
    }
    const now = performance.now();
    c.requestTimes = c.requestTimes.filter((t) => t > now - HOUR_MS);
    if (c.requestTimes.length >= perHour) {
      error('60014', 'Requests too frequent.', id);
      return;
    }
    c.requestTimes.push(now);
    for (const a of r.args) {
      try {
        const arg = resolveArg(a);
        if (r.op === 'subscribe') {
          if (switches.rejecting) throw new OkxError('60014', 'Requests too frequent.');
          addSub(c, arg);
        } else removeSub(c, `${arg.channel}|${arg.sel}`);
        sendJson(c, { ...(id !== undefined ? { id } : {}), event: r.op, arg: arg.echo, connId: c.connId });
      } catch (e) {
        if (e instanceof OkxError) error(e.code, e.message, id);
        else error('60012', 'Invalid request', id);
      }
    }
  }

  // ---- publication -------------------------------------------------------------------------------

  function publish(key: string, arg: Json, data: readonly Json[], to: Iterable<Conn>): void {
    if (data.length === 0) return;
    const text = JSON.stringify(okxPush(arg, data));
    for (const c of to) if (send(c, text)) notificationsSent++;
    lastPush.set(key, performance.now());
  }

  function subscribers(key: string): { fresh: Conn[]; old: Conn[] } {
    const fresh: Conn[] = [];
    const old: Conn[] = [];
    for (const c of subs.get(key) ?? []) (c.fresh.has(key) ? fresh : old).push(c);
    return { fresh, old };
  }

  function dueKey(key: string, every: number, t: number): boolean {
    const last = lastPush.get(key);
    return last === undefined || t - last >= every - 1;
  }

  function pushChunks(key: string, arg: Json, items: readonly Json[], to: Conn[]): void {
    if (to.length === 0) return;
    for (let i = 0; i < items.length; i += maxItems) publish(key, arg, items.slice(i, i + maxItems), to);
    for (const c of to) if (c.ws.readyState === c.ws.OPEN && !silenced()) optionItemsSent += items.length;
  }

  function publishOptSummary(family: string, nowMs: number): void {
    const key = `opt-summary|${family}`;
    const { fresh, old } = subscribers(key);
    if (fresh.length === 0 && old.length === 0) return;
    const options = chains.list('OPTION', family);
    const sampled = options.filter(() => sampleRng.uniform() < optionP);
    const build = (list: OkxSimInstrument[]) => list.map((i) => optSummaryItem(view, i, nowMs));
    // One push per distinct echo (instFamily vs uly) so that each client sees its own arg.
    const byEcho = (cs: Conn[]) => {
      const m = new Map<string, { arg: Json; cs: Conn[] }>();
      for (const c of cs) {
        const arg = c.args.get(key)!.echo;
        const k = JSON.stringify(arg);
        if (!m.has(k)) m.set(k, { arg, cs: [] });
        m.get(k)!.cs.push(c);
      }
      return [...m.values()];
    };
    if (fresh.length > 0) {
      const all = build(options);
      for (const g of byEcho(fresh)) pushChunks(key, g.arg, all, g.cs);
      const ids = new Set(sampled.map((i) => i.instId));
      const part = all.filter((it) => ids.has(it.instId as string));
      for (const g of byEcho(old)) pushChunks(key, g.arg, part, g.cs);
      for (const c of fresh) c.fresh.delete(key);
    } else {
      const part = build(sampled);
      for (const g of byEcho(old)) pushChunks(key, g.arg, part, g.cs);
    }
  }

  function publishSimple(key: string, every: number, t: number, make: () => Json): void {
    const { fresh, old } = subscribers(key);
    if (fresh.length === 0 && old.length === 0) return;
    const to = dueKey(key, every, t) ? [...fresh, ...old] : fresh;
    if (to.length === 0) return;
    const arg = to[0]!.args.get(key)!.echo;
    publish(key, arg, [make()], to);
    for (const c of fresh) c.fresh.delete(key);
  }

  let lastClock = market.now;
  function tick(): void {
    ticks++;
    const nowMs = market.now;
    if (stepMarket) {
      const dtS = Math.max(0, (nowMs - lastClock) / 1000);
      market.step(dtS);
    }
    lastClock = nowMs;
    const changes = chains.refresh(nowMs);
    for (const inst of changes.expired) {
      for (const ch of ['mark-price', 'tickers'] as const) {
        const key = `${ch}|${inst.instId}`;
        for (const c of [...(subs.get(key) ?? [])]) removeSub(c, key);
      }
    }
    if (silenced()) return;
    const t = performance.now();
    for (const family of chains.familyNames()) {
      // the index first: a client joining the family's quotes with its index has it before the options
      const spec = chains.family(family)!;
      publishSimple(`index-tickers|${family}`, indexEvery, t, () =>
        indexTickerItem(family, spec.priceDecimals, view.spot(spec.underlying), statsOf(spec.underlying, nowMs), nowMs),
      );
      publishOptSummary(family, nowMs);
    }
    for (const inst of [...chains.list('SWAP'), ...chains.list('FUTURES')]) {
      publishSimple(`mark-price|${inst.instId}`, markEvery, t, () => markPriceItem(view, inst, nowMs));
      publishSimple(`tickers|${inst.instId}`, tickersEvery, t, () => tickerItem(view, inst, nowMs, quoteRng, statsOf(inst.underlying, nowMs)));
      if (inst.instType === 'SWAP') publishSimple(`funding-rate|${inst.instId}`, fundingEvery, t, () => fundingRateItem(view, inst, nowMs));
    }
  }

  function idleCheck(): void {
    if (silenced()) return;
    const t = performance.now();
    for (const c of conns) if (t - c.lastSentAt > idleCloseMs && c.ws.readyState === c.ws.OPEN) c.ws.close(4004, 'No data received in 30s.');
  }

  // ---- REST --------------------------------------------------------------------------------------

  function restData(path: string, q: URLSearchParams): Json[] {
    const param = (name: string, required: boolean): string | undefined => {
      const v = q.get(name);
      if (v === null || v === '') {
        if (required) throw new OkxError('50014', `Parameter ${name} can not be empty.`);
        return undefined;
      }
      return v;
    };
    const nowMs = market.now;
    switch (path) {
      case '/api/v5/public/time':
        return [{ ts: String(nowMs) }];
      case '/api/v5/public/instruments': {
        const instType = param('instType', true)!;
        if (!['SPOT', 'MARGIN', 'SWAP', 'FUTURES', 'OPTION'].includes(instType)) throw new OkxError('51000', 'Parameter instType error');
        const fam = param('instFamily', false) ?? param('uly', false);
        if (instType === 'OPTION' && fam === undefined) throw new OkxError('50014', 'Parameter instFamily can not be empty.');
        const instId = param('instId', false);
        if (instType === 'SPOT' || instType === 'MARGIN') return [];
        return chains
          .list(instType as OkxInstType, fam)
          .filter((i) => instId === undefined || i.instId === instId)
          .map((i) => i.json as Json);
      }
      case '/api/v5/public/funding-rate-history': {
        const instId = param('instId', true)!;
        const inst = chains.get(instId);
        if (!inst || inst.instType !== 'SWAP') throw new OkxError('51001', "Instrument ID doesn't exist.");
        const num = (name: string): number | null => {
          const v = param(name, false);
          if (v === undefined) return null;
          if (!/^\d+$/.test(v)) throw new OkxError('51000', `Parameter ${name} error`);
          return Number(v);
        };
        const limit = num('limit') ?? 400;
        if (limit < 1 || limit > 400) throw new OkxError('51000', 'Parameter limit error');
        return fundingHistoryItems(view, inst, nowMs, num('before'), num('after'), limit);
      }
      case '/api/v5/public/funding-rate': {
        const inst = chains.get(param('instId', true)!);
        if (!inst || inst.instType !== 'SWAP') throw new OkxError('51001', "Instrument ID doesn't exist.");
        return [fundingRateItem(view, inst, nowMs)];
      }
      case '/api/v5/public/opt-summary': {
        const fam = param('instFamily', false) ?? param('uly', false);
        if (fam === undefined) throw new OkxError('50014', 'Parameter instFamily can not be empty.');
        if (!chains.family(fam)) throw new OkxError('51000', 'Parameter instFamily error');
        return chains.list('OPTION', fam).map((i) => optSummaryItem(view, i, nowMs));
      }
      case '/api/v5/market/index-tickers': {
        const instId = param('instId', false);
        const fams = chains.familyNames().filter((f) => instId === undefined || f === instId);
        return fams.map((f) => {
          const spec = chains.family(f)!;
          return indexTickerItem(f, spec.priceDecimals, view.spot(spec.underlying), statsOf(spec.underlying, nowMs), nowMs);
        });
      }
      case '/api/v5/public/mark-price': {
        const instType = param('instType', true)!;
        const instId = param('instId', false);
        if (instType !== 'SWAP' && instType !== 'FUTURES') return [];
        return chains
          .list(instType, param('instFamily', false) ?? param('uly', false))
          .filter((i) => instId === undefined || i.instId === instId)
          .map((i) => markPriceItem(view, i, nowMs));
      }
      default:
        throw new OkxError('404', 'Not Found');
    }
  }

  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    restRequests++;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const reply = (status: number, body: Json, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET') return reply(405, { code: '405', msg: 'Method Not Allowed', data: [] });
    if (switches.takeRestFailure()) {
      return reply(429, { code: '50011', msg: 'Too Many Requests', data: [] }, { 'retry-after': '1' });
    }
    try {
      reply(200, { code: '0', msg: '', data: restData(url.pathname, url.searchParams) });
    } catch (e) {
      if (e instanceof OkxError) reply(e.code === '404' ? 404 : 400, { code: e.code, msg: e.message, data: [] });
      else reply(500, { code: '50000', msg: 'Internal error', data: [] });
    }
  }

  // ---- server ------------------------------------------------------------------------------------

  const server = createServer(onRequest);
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (path !== WS_PATH) {
      socket.write('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  wss.on('connection', (ws: WebSocket) => {
    const connId = (hashString(`okx-conn:${market.seed}:${++connSeq}`) >>> 0).toString(16).padStart(8, '0');
    const c: Conn = { ws, connId, args: new Map(), fresh: new Set(), lastSentAt: performance.now(), requestTimes: [] };
    conns.add(c);
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => onMessage(c, data));
    ws.on('error', () => ws.terminate());
    ws.on('close', () => {
      for (const key of [...c.args.keys()]) removeSub(c, key);
      conns.delete(c);
    });
  });

  const timer = setInterval(tick, tickMs);
  const idleTimer = setInterval(idleCheck, Math.min(1000, Math.max(10, idleCloseMs / 4)));

  const GARBAGE: Array<string | Buffer> = [
    '{"arg":{"channel":"opt-summary","instFamily":"BTC-USD"},"data":[{"instId":"BTC-USD-',
    'not json at all',
    Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00, 0xff]),
    '{"arg":{"channel":"mark-price","instId":"NO-SUCH-SWAP"},"data":"garbage"}',
    '[1,2,3]',
  ];

  const faults: OkxSimulatorFaults = simulatorFaults({
    switches,
    conns,
    send,
    garbage: GARBAGE,
    subscriptionsOf: (c) => c.args.size,
    // OKX's 30 s idle close counts from the end of the silence, not from before it
    onSilence: (until) => {
      for (const c of conns) c.lastSentAt = Math.max(c.lastSentAt, until);
    },
  });

  return {
    url: `ws://${host}:${port}${WS_PATH}`,
    restUrl: `http://${host}:${port}`,
    port,
    market,
    view,
    chains,
    faults,
    stats: () => ({ framesSent, notificationsSent, ticks, optionItemsSent, restRequests }),
    close: async () => {
      clearInterval(timer);
      clearInterval(idleTimer);
      for (const c of conns) c.ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
