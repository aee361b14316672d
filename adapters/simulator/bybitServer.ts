/**
 * Local simulator of Bybit's API v5 PUBLIC protocol (REST bootstrap + the option and linear WebSocket
 * streams), driven by a Bybit view ({@link MarketView}, {@link BYBIT_VIEW}) of the shared stochastic
 * {@link Market}. The service's real Bybit adapter (adapters/bybit/) connects to it unchanged: only the
 * URLs differ (`ws://127.0.0.1:<port>/v5/public/option`, `.../v5/public/linear`, REST
 * `http://127.0.0.1:<port>`).
 *
 * REST (envelope `{retCode: 0, retMsg: "OK", result, retExtInfo: {}, time}`; errors HTTP 200 with
 * retCode 10001 `params error: ...`, as Bybit answers parameter errors; pages of
 * https://bybit-exchange.github.io/docs/v5/):
 * - GET /v5/market/instruments-info?category=option|linear[&baseCoin=][&symbol=][&limit=1..1000 (500)][&cursor=]
 *   (/v5/market/instrument): `result {category, list, nextPageCursor}`, cursor-paged; `nextPageCursor`
 *   is Bybit-style URL-encoded text (`first%3DBTC-...%26last%3DBTC-...`), "" on the last page. Options
 *   without baseCoin list BTC (Bybit's default).
 * - GET /v5/market/funding/history?category=linear&symbol=&startTime=&endTime=&limit=1..200 (200)
 *   (/v5/market/history-fund-rate): newest first; startTime without endTime is an error; endTime alone
 *   gives the `limit` points up to it; neither gives the latest.
 * - GET /v5/market/time.
 *
 * WebSockets (/v5/ws/connect, /v5/websocket/public/ticker):
 * - `{req_id?, op: "subscribe"|"unsubscribe", args: ["tickers.<symbol>", ...]}`. Option stream answer
 *   `{success, conn_id, req_id?, data: {failTopics, successTopics}, type: "COMMAND_RESP"}`; linear stream
 *   `{success, ret_msg, conn_id, req_id?, op}` (`success: false`, `ret_msg: "Invalid topic :[...]"` when a
 *   topic is unknown). Per-connection argument limits ("Public channel - Args limits"): at most 21,000
 *   topic characters on a connection, and at most 2000 option topics: topics beyond fail.
 * - `{"op": "ping"}`: option stream `{req_id?, op: "pong", args: ["<ms>"], conn_id}`, linear stream
 *   `{success: true, ret_msg: "pong", conn_id, req_id?, op: "ping"}`.
 * - option `tickers.{symbol}`: a snapshot when subscribed, then each subscribed option refreshed with
 *   probability `optionUpdatesPerSecond * tickMs / 1000` per tick. Linear `tickers.{symbol}`: a snapshot
 *   when subscribed, then every `linearIntervalMs` a delta with the fields that changed (bybitMessages.ts).
 * Not simulated: the server-side idle timeout (the client pings every 20 s), orderbook/trade topics, rate
 * limits, REST tickers.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { WebSocketServer, type WebSocket } from 'ws';
import { BybitChains, type BybitCategory, type BybitSimInstrument } from './bybitChains.js';
import { fundingHistoryList, linearRecord, optionTickerData, recordDelta, type Json } from './bybitMessages.js';
import type { SimulatorStats } from './deribitServer.js';
import { FaultSwitches, simulatorFaults, type SimulatorFaults } from './faults.js';
import { BYBIT_VIEW, MarketView, type ExchangeViewParams } from './exchangeView.js';
import { Market } from './market.js';
import { Rng, hashString } from './rng.js';

/** Options of {@link startBybitSimulator}. */
export interface BybitSimulatorOptions {
  /** TCP port of REST and both WebSocket paths; 0 (default) picks a free one. */
  readonly port?: number;
  /** Interface to bind; default 127.0.0.1. */
  readonly host?: string;
  /** Market seed (ignored when `market` is given). Default 42. */
  readonly seed?: number;
  /** Market step and publication period, ms. Default 100. */
  readonly tickMs?: number;
  /** Simulator clock, Unix ms (ignored when `market` is given). Default Date.now. */
  readonly clock?: () => number;
  /** A shared market instead of a new one. */
  readonly market?: Market;
  /** Step the market every tick. Default: true for an own market, false for a given (shared) one. */
  readonly stepMarket?: boolean;
  /** Bybit's view constants. Default {@link BYBIT_VIEW}. */
  readonly view?: ExchangeViewParams;
  /** Mean refreshes per second of each subscribed option ticker. Default 1. */
  readonly optionUpdatesPerSecond?: number;
  /** Linear ticker delta period, ms. Default 100 (Bybit: 100 ms). */
  readonly linearIntervalMs?: number;
  /** Topic characters allowed per connection. Default 21 000. */
  readonly maxArgsChars?: number;
  /** Option topics allowed per connection. Default 2000. */
  readonly maxOptionArgs?: number;
}

/** Fault hooks of the Bybit simulator (the Deribit set plus REST failures). */
export interface BybitSimulatorFaults extends SimulatorFaults {
  /** The next `n` REST requests fail with HTTP 403 (Bybit's IP rate-limit answer), Retry-After 1. */
  restFailures(n: number): void;
}

/** Counters of what the Bybit simulator sent. */
export interface BybitSimulatorStats extends SimulatorStats {
  readonly optionTickersSent: number;
  readonly linearSnapshotsSent: number;
  readonly linearDeltasSent: number;
  readonly restRequests: number;
}

/** A running Bybit simulator. */
export interface BybitSimulator {
  /** `ws://127.0.0.1:<port>/v5/public/option`. */
  readonly optionUrl: string;
  /** `ws://127.0.0.1:<port>/v5/public/linear`. */
  readonly linearUrl: string;
  /** REST base `http://127.0.0.1:<port>`. */
  readonly restUrl: string;
  readonly port: number;
  readonly market: Market;
  readonly view: MarketView;
  readonly chains: BybitChains;
  readonly faults: BybitSimulatorFaults;
  stats(): BybitSimulatorStats;
  /** Stop ticking, close every socket and the server. */
  close(): Promise<void>;
}

const OPTION_PATH = '/v5/public/option';
const LINEAR_PATH = '/v5/public/linear';
const MAX_BUFFERED = 16 * 1024 * 1024;

interface Conn {
  readonly ws: WebSocket;
  readonly stream: BybitCategory;
  readonly connId: string;
  readonly topics: Set<string>;
  readonly fresh: Set<string>;
  chars: number;
}

class ParamError extends Error {}

/**
 * Start the Bybit simulator.
 * @returns once listening; `optionUrl`, `linearUrl` and `restUrl` are what the Bybit adapter needs.
 * @throws when the port cannot be bound.
 */
export async function startBybitSimulator(opts: BybitSimulatorOptions = {}): Promise<BybitSimulator> {
  const host = opts.host ?? '127.0.0.1';
  const tickMs = Math.max(1, opts.tickMs ?? 100);
  const market = opts.market ?? new Market({ seed: opts.seed ?? 42, ...(opts.clock ? { clock: opts.clock } : {}) });
  const stepMarket = opts.stepMarket ?? !opts.market;
  const view = new MarketView(market, opts.view ?? BYBIT_VIEW);
  const chains = new BybitChains(view);
  const optionP = Math.min(1, Math.max(0, ((opts.optionUpdatesPerSecond ?? 1) * tickMs) / 1000));
  const linearEvery = opts.linearIntervalMs ?? 100;
  const maxChars = opts.maxArgsChars ?? 21_000;
  const maxOptionArgs = opts.maxOptionArgs ?? 2000;
  const quoteRng = Rng.derive(market.seed, 'bybit:quotes');
  const sampleRng = Rng.derive(market.seed, 'bybit:sampling');

  const conns = new Set<Conn>();
  /** topic -> subscribed connections */
  const subs = new Map<string, Set<Conn>>();
  /** linear symbol -> last record published (for deltas) */
  const lastRecord = new Map<string, Record<string, string>>();
  let lastLinearAt = -Infinity;
  const switches = new FaultSwitches();
  let framesSent = 0;
  let notificationsSent = 0;
  let optionTickersSent = 0;
  let linearSnapshotsSent = 0;
  let linearDeltasSent = 0;
  let restRequests = 0;
  let ticks = 0;
  let connSeq = 0;
  let seq = 0;
  let cs = 1_000_000;

  const silenced = () => switches.silenced();

  function send(c: Conn, text: string | Buffer): boolean {
    if (c.ws.readyState !== c.ws.OPEN || silenced()) return false;
    if (c.ws.bufferedAmount > MAX_BUFFERED) return false;
    c.ws.send(text);
    framesSent++;
    return true;
  }

  // ---- subscriptions ---------------------------------------------------------------------------

  function topicInstrument(topic: string, stream: BybitCategory): BybitSimInstrument | null {
    if (!topic.startsWith('tickers.')) return null;
    const inst = chains.get(topic.slice('tickers.'.length));
    return inst && inst.category === stream ? inst : null;
  }

  function addTopic(c: Conn, topic: string): void {
    if (c.topics.has(topic)) return;
    c.topics.add(topic);
    c.chars += topic.length;
    let set = subs.get(topic);
    if (!set) subs.set(topic, (set = new Set()));
    set.add(c);
    c.fresh.add(topic);
  }

  function removeTopic(c: Conn, topic: string): boolean {
    if (!c.topics.delete(topic)) return false;
    c.chars -= topic.length;
    c.fresh.delete(topic);
    const set = subs.get(topic);
    set?.delete(c);
    if (set && set.size === 0) {
      subs.delete(topic);
      lastRecord.delete(topic.slice('tickers.'.length));
    }
    return true;
  }

  function onMessage(c: Conn, raw: Buffer | ArrayBuffer | Buffer[]): void {
    if (silenced()) return;
    const text = (Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw as ArrayBuffer)).toString('utf8');
    const reply = (o: Json) => send(c, JSON.stringify(o));
    let req: Json;
    try {
      const v: unknown = JSON.parse(text);
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
      req = v as Json;
    } catch {
      reply({ success: false, ret_msg: `error:request not json: ${text.slice(0, 60)}`, conn_id: c.connId, op: '' });
      return;
    }
    const reqId = typeof req.req_id === 'string' ? { req_id: req.req_id } : {};
    const op = req.op;
    if (op === 'ping') {
      if (c.stream === 'option') reply({ ...reqId, op: 'pong', args: [String(market.now)], conn_id: c.connId });
      else reply({ success: true, ret_msg: 'pong', conn_id: c.connId, ...reqId, op: 'ping' });
      return;
    }
    if (op !== 'subscribe' && op !== 'unsubscribe') {
      reply({ success: false, ret_msg: `error:invalid op ${String(op).slice(0, 40)}`, conn_id: c.connId, ...reqId, op: String(op ?? '') });
      return;
    }
    const args = Array.isArray(req.args) ? req.args.filter((a): a is string => typeof a === 'string') : [];
    const ok: string[] = [];
    const failed: string[] = [];
    for (const topic of args) {
      if (op === 'unsubscribe') {
        (removeTopic(c, topic) ? ok : failed).push(topic);
        continue;
      }
      const inst = topicInstrument(topic, c.stream);
      const overCount = c.stream === 'option' && !c.topics.has(topic) && c.topics.size >= maxOptionArgs;
      const overChars = !c.topics.has(topic) && c.chars + topic.length > maxChars;
      if (!inst || switches.rejecting || overCount || overChars) failed.push(topic);
      else {
        addTopic(c, topic);
        ok.push(topic);
      }
    }
    if (c.stream === 'option') {
      reply({ success: failed.length === 0, conn_id: c.connId, ...reqId, data: { failTopics: failed, successTopics: ok }, type: 'COMMAND_RESP' });
    } else {
      reply({ success: failed.length === 0, ret_msg: failed.length === 0 ? '' : `Invalid topic :[${failed.join(',').slice(0, 200)}]`, conn_id: c.connId, ...reqId, op });
    }
  }

  // ---- publication -------------------------------------------------------------------------------

  function publishOption(inst: BybitSimInstrument, to: Conn[], nowMs: number): void {
    const topic = `tickers.${inst.symbol}`;
    const msg = { id: `${topic}-${++seq}-${nowMs}`, topic, ts: nowMs, data: optionTickerData(view, inst, nowMs, quoteRng), type: 'snapshot' };
    const text = JSON.stringify(msg);
    for (const c of to) {
      if (send(c, text)) {
        notificationsSent++;
        optionTickersSent++;
      }
      c.fresh.delete(topic);
    }
  }

  function publishLinear(inst: BybitSimInstrument, conns: Iterable<Conn>, nowMs: number): void {
    const topic = `tickers.${inst.symbol}`;
    const record = linearRecord(view, inst, nowMs, quoteRng);
    const prev = lastRecord.get(inst.symbol);
    cs += 1 + Math.floor(quoteRng.uniform() * 20);
    let snapText: string | null = null;
    let deltaText: string | null = null;
    for (const c of conns) {
      if (c.fresh.has(topic) || !prev) {
        snapText ??= JSON.stringify({ topic, type: 'snapshot', data: record, cs, ts: nowMs });
        if (send(c, snapText)) {
          notificationsSent++;
          linearSnapshotsSent++;
        }
        c.fresh.delete(topic);
      } else {
        deltaText ??= JSON.stringify({ topic, type: 'delta', data: recordDelta(prev, record), cs, ts: nowMs });
        if (send(c, deltaText)) {
          notificationsSent++;
          linearDeltasSent++;
        }
      }
    }
    lastRecord.set(inst.symbol, record);
  }

  let lastClock = market.now;
  function tick(): void {
    ticks++;
    const nowMs = market.now;
    if (stepMarket) market.step(Math.max(0, (nowMs - lastClock) / 1000));
    lastClock = nowMs;
    const changes = chains.refresh(nowMs);
    for (const inst of changes.expired) {
      const topic = `tickers.${inst.symbol}`;
      for (const c of [...(subs.get(topic) ?? [])]) removeTopic(c, topic);
    }
    if (silenced()) return;
    const t = performance.now();
    const linearDue = t - lastLinearAt >= linearEvery - 1;
    if (linearDue) lastLinearAt = t;
    for (const [topic, set] of subs) {
      if (set.size === 0) continue;
      const inst = chains.get(topic.slice('tickers.'.length));
      if (!inst) continue;
      if (inst.category === 'option') {
        const to = sampleRng.uniform() < optionP ? [...set] : [...set].filter((c) => c.fresh.has(topic));
        if (to.length > 0) publishOption(inst, to, nowMs);
      } else if (linearDue) {
        // Every subscriber shares the last published record, so a delta is always against what it saw.
        publishLinear(inst, set, nowMs);
      }
    }
  }

  // ---- REST --------------------------------------------------------------------------------------

  function cursorOf(list: readonly BybitSimInstrument[], from: number, to: number): string {
    if (to >= list.length) return '';
    return encodeURIComponent(`first=${list[from]!.symbol}&last=${list[to - 1]!.symbol}`);
  }

  function startAfterCursor(list: readonly BybitSimInstrument[], cursor: string): number {
    let decoded: string;
    try {
      decoded = decodeURIComponent(cursor);
    } catch {
      throw new ParamError('cursor invalid');
    }
    const last = new URLSearchParams(decoded).get('last');
    const i = last === null ? -1 : list.findIndex((x) => x.symbol === last);
    if (i < 0) throw new ParamError('cursor invalid');
    return i + 1;
  }

  function intParam(q: URLSearchParams, name: string, lo: number, hi: number, dflt: number | null): number | null {
    const v = q.get(name);
    if (v === null || v === '') return dflt;
    if (!/^\d+$/.test(v)) throw new ParamError(`${name} invalid`);
    const n = Number(v);
    if (n < lo || n > hi) throw new ParamError(`${name} out of range [${lo}, ${hi}]`);
    return n;
  }

  function restResult(path: string, q: URLSearchParams): unknown {
    const nowMs = market.now;
    switch (path) {
      case '/v5/market/time':
        return { timeSecond: String(Math.floor(nowMs / 1000)), timeNano: `${nowMs}000000` };
      case '/v5/market/instruments-info': {
        const category = q.get('category');
        if (category !== 'option' && category !== 'linear' && category !== 'inverse' && category !== 'spot') throw new ParamError('category invalid');
        if (category === 'inverse' || category === 'spot') return { category, list: [], nextPageCursor: '' };
        const symbol = q.get('symbol');
        const baseCoin = q.get('baseCoin') || (category === 'option' && !symbol ? 'BTC' : undefined);
        const limit = intParam(q, 'limit', 1, 1000, 500)!;
        const all = chains.list(category, baseCoin ?? undefined).filter((i) => !symbol || i.symbol === symbol);
        const cursor = q.get('cursor');
        const from = cursor ? startAfterCursor(all, cursor) : 0;
        const to = Math.min(all.length, from + limit);
        return { category, list: all.slice(from, to).map((i) => i.json), nextPageCursor: cursorOf(all, from, to) };
      }
      case '/v5/market/funding/history': {
        const category = q.get('category');
        if (category !== 'linear' && category !== 'inverse') throw new ParamError('category invalid');
        const symbol = q.get('symbol');
        if (!symbol) throw new ParamError('symbol is required');
        const inst = chains.get(symbol);
        if (!inst || inst.kind !== 'perpetual') throw new ParamError(`symbol invalid: ${symbol}`);
        const start = intParam(q, 'startTime', 0, Number.MAX_SAFE_INTEGER, null);
        const end = intParam(q, 'endTime', 0, Number.MAX_SAFE_INTEGER, null);
        if (start !== null && end === null) throw new ParamError('endTime is required when startTime is passed');
        if (start !== null && end !== null && start > end) throw new ParamError('startTime must be <= endTime');
        const limit = intParam(q, 'limit', 1, 200, 200)!;
        return { category, list: fundingHistoryList(view, inst, nowMs, start ?? 0, end ?? nowMs, limit) };
      }
      default:
        return undefined;
    }
  }

  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    restRequests++;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (switches.takeRestFailure()) {
      return reply(403, 'access too frequent', { 'content-type': 'text/plain', 'retry-after': '1' });
    }
    const time = market.now;
    try {
      const result = restResult(url.pathname, url.searchParams);
      if (result === undefined) return reply(404, { retCode: 404, retMsg: 'Not Found', result: {}, retExtInfo: {}, time });
      reply(200, { retCode: 0, retMsg: 'OK', result, retExtInfo: {}, time });
    } catch (e) {
      const msg = e instanceof ParamError ? `params error: ${e.message}` : 'Internal System Error.';
      reply(200, { retCode: e instanceof ParamError ? 10001 : 10016, retMsg: msg, result: {}, retExtInfo: {}, time });
    }
  }

  // ---- server ------------------------------------------------------------------------------------

  const server = createServer(onRequest);
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (path !== OPTION_PATH && path !== LINEAR_PATH) {
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

  wss.on('connection', (ws: WebSocket, req: IncomingMessage) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const h = (hashString(`bybit-conn:${market.seed}:${++connSeq}`) >>> 0).toString(16).padStart(8, '0');
    const c: Conn = { ws, stream: path === OPTION_PATH ? 'option' : 'linear', connId: `${h}-${connSeq}`, topics: new Set(), fresh: new Set(), chars: 0 };
    conns.add(c);
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => onMessage(c, data));
    ws.on('error', () => ws.terminate());
    ws.on('close', () => {
      for (const t of [...c.topics]) removeTopic(c, t);
      conns.delete(c);
    });
  });

  const timer = setInterval(tick, tickMs);

  const GARBAGE: Array<string | Buffer> = [
    '{"topic":"tickers.BTCPERP","type":"delta","data":{"symbol":"BTCPERP","markPrice":',
    'not json at all',
    Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00, 0xff]),
    '{"topic":"tickers.NOPE-1JAN30-1-C","ts":1,"type":"snapshot","data":"garbage"}',
    '[1,2,3]',
  ];

  const faults: BybitSimulatorFaults = simulatorFaults({
    switches,
    conns,
    send,
    garbage: GARBAGE,
    subscriptionsOf: (c) => c.topics.size,
  });

  return {
    optionUrl: `ws://${host}:${port}${OPTION_PATH}`,
    linearUrl: `ws://${host}:${port}${LINEAR_PATH}`,
    restUrl: `http://${host}:${port}`,
    port,
    market,
    view,
    chains,
    faults,
    stats: () => ({ framesSent, notificationsSent, ticks, optionTickersSent, linearSnapshotsSent, linearDeltasSent, restRequests }),
    close: async () => {
      clearInterval(timer);
      for (const c of conns) c.ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
