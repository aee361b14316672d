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
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { WebSocket } from 'ws';
import { BybitChains, type BybitCategory, type BybitSimInstrument } from './bybitChains.js';
import { linearRecord, optionTickerData, recordDelta, type Json } from './bybitMessages.js';
import { answerBybitRest } from './bybitRest.js';
import { garbageFrames, simulatorFaults, type SimulatorFaults } from './faults.js';
import { BYBIT_VIEW, MarketView, type ExchangeViewParams } from './exchangeView.js';
import type { Market } from './market.js';
import { SimulatedExchange, Subscribers, connectionHash, frameBuffer, httpWsHandle, listenHttpWs, refreshProbability, requestPath, simulatorBasics, trackConnection, type RunningSimulator, type SimulatorServerOptions, type SimulatorStats } from './serverKit.js';

/** Options of {@link startBybitSimulator} (the port serves REST and both WebSocket paths; `market`: a shared one). */
export interface BybitSimulatorOptions extends SimulatorServerOptions {
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
export interface BybitSimulator extends RunningSimulator<BybitSimulatorStats, BybitSimulatorFaults> {
  /** `ws://127.0.0.1:<port>/v5/public/option`. */
  readonly optionUrl: string;
  /** `ws://127.0.0.1:<port>/v5/public/linear`. */
  readonly linearUrl: string;
  /** REST base `http://127.0.0.1:<port>`. */
  readonly restUrl: string;
  readonly view: MarketView;
  readonly chains: BybitChains;
}

const OPTION_PATH = '/v5/public/option';
const LINEAR_PATH = '/v5/public/linear';

/** Garbage frames for malformedFrames (faults.ts garbageFrames). */
const GARBAGE = garbageFrames(
  '{"topic":"tickers.BTCPERP","type":"delta","data":{"symbol":"BTCPERP","markPrice":',
  '{"topic":"tickers.NOPE-1JAN30-1-C","ts":1,"type":"snapshot","data":"garbage"}',
);

interface Conn {
  readonly ws: WebSocket;
  readonly stream: BybitCategory;
  readonly connId: string;
  readonly topics: Set<string>;
  readonly fresh: Set<string>;
  chars: number;
}

/** The resolved cadence and limit options of the Bybit simulator (see {@link BybitSimulatorOptions}). */
interface BybitLimits {
  readonly optionP: number;
  readonly linearEvery: number;
  readonly maxChars: number;
  readonly maxOptionArgs: number;
}

/** The request parsed from a frame's text, or null when it is not a JSON object. */
function parseObject(text: string): Json | null {
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
    return v as Json;
  } catch {
    return null;
  }
}

/**
 * The Bybit simulator's state and WebSocket protocol (option and linear streams): connections, topic subscriptions,
 * the publication per tick. The REST side is bybitRest.ts.
 */
class BybitExchange extends SimulatedExchange<Conn> {
  /** topic -> subscribed connections */
  private readonly subs = new Subscribers<Conn>();
  /** linear symbol -> last record published (for deltas) */
  private readonly lastRecord = new Map<string, Record<string, string>>();
  private lastLinearAt = -Infinity;
  optionTickersSent = 0;
  linearSnapshotsSent = 0;
  linearDeltasSent = 0;
  private connSeq = 0;
  private seq = 0;
  private cs = 1_000_000;

  constructor(
    market: Market,
    readonly view: MarketView,
    readonly chains: BybitChains,
    private readonly limits: BybitLimits,
    stepMarket: boolean,
  ) {
    super(market, 'bybit', stepMarket);
  }

  // ---- subscriptions ---------------------------------------------------------------------------

  private topicInstrument(topic: string, stream: BybitCategory): BybitSimInstrument | null {
    if (!topic.startsWith('tickers.')) return null;
    const inst = this.chains.get(topic.slice('tickers.'.length));
    return inst && inst.category === stream ? inst : null;
  }

  private addTopic(c: Conn, topic: string): void {
    if (c.topics.has(topic)) return;
    c.topics.add(topic);
    c.chars += topic.length;
    this.subs.addTo(topic, c);
    c.fresh.add(topic);
  }

  private removeTopic(c: Conn, topic: string): boolean {
    if (!c.topics.delete(topic)) return false;
    c.chars -= topic.length;
    c.fresh.delete(topic);
    if (this.subs.removeFrom(topic, c)) this.lastRecord.delete(topic.slice('tickers.'.length));
    return true;
  }

  /** A new connection on the option or linear path: its id, its messages, its topics dropped when it closes. */
  readonly onConnection = (ws: WebSocket, req: IncomingMessage): void => {
    const path = requestPath(req);
    const n = ++this.connSeq;
    const h = connectionHash('bybit', this.market.seed, n);
    const c: Conn = { ws, stream: path === OPTION_PATH ? 'option' : 'linear', connId: `${h}-${n}`, topics: new Set(), fresh: new Set(), chars: 0 };
    trackConnection(
      this.conns,
      c,
      (data) => this.onMessage(c, data),
      () => {
        for (const t of [...c.topics]) this.removeTopic(c, t);
      },
    );
  };

  private onMessage(c: Conn, raw: Buffer | ArrayBuffer | Buffer[]): void {
    if (this.silenced()) return;
    const text = frameBuffer(raw).toString('utf8');
    const reply = (o: Json) => this.sender.send(c, JSON.stringify(o));
    const req = parseObject(text);
    if (req === null) {
      reply({ success: false, ret_msg: `error:request not json: ${text.slice(0, 60)}`, conn_id: c.connId, op: '' });
      return;
    }
    const reqId = typeof req.req_id === 'string' ? { req_id: req.req_id } : {};
    const op = req.op;
    if (op === 'ping') {
      if (c.stream === 'option') reply({ ...reqId, op: 'pong', args: [String(this.market.now)], conn_id: c.connId });
      else reply({ success: true, ret_msg: 'pong', conn_id: c.connId, ...reqId, op: 'ping' });
      return;
    }
    if (op !== 'subscribe' && op !== 'unsubscribe') {
      reply({ success: false, ret_msg: `error:invalid op ${String(op).slice(0, 40)}`, conn_id: c.connId, ...reqId, op: String(op ?? '') });
      return;
    }
    const args = Array.isArray(req.args) ? req.args.filter((a): a is string => typeof a === 'string') : [];
    const { ok, failed } = this.applyTopics(c, op, args);
    if (c.stream === 'option') {
      reply({ success: failed.length === 0, conn_id: c.connId, ...reqId, data: { failTopics: failed, successTopics: ok }, type: 'COMMAND_RESP' });
    } else {
      reply({ success: failed.length === 0, ret_msg: failed.length === 0 ? '' : `Invalid topic :[${failed.join(',').slice(0, 200)}]`, conn_id: c.connId, ...reqId, op });
    }
  }

  /** Subscribe or unsubscribe each topic in turn (a topic over the connection's limits, or any while rejecting, fails). */
  private applyTopics(c: Conn, op: 'subscribe' | 'unsubscribe', args: readonly string[]): { ok: string[]; failed: string[] } {
    const ok: string[] = [];
    const failed: string[] = [];
    for (const topic of args) {
      if (op === 'unsubscribe') {
        (this.removeTopic(c, topic) ? ok : failed).push(topic);
        continue;
      }
      const inst = this.topicInstrument(topic, c.stream);
      const overCount = c.stream === 'option' && !c.topics.has(topic) && c.topics.size >= this.limits.maxOptionArgs;
      const overChars = !c.topics.has(topic) && c.chars + topic.length > this.limits.maxChars;
      if (!inst || this.switches.rejecting || overCount || overChars) failed.push(topic);
      else {
        this.addTopic(c, topic);
        ok.push(topic);
      }
    }
    return { ok, failed };
  }

  // ---- publication -------------------------------------------------------------------------------

  private publishOption(inst: BybitSimInstrument, to: Conn[], nowMs: number): void {
    const topic = `tickers.${inst.symbol}`;
    const msg = { id: `${topic}-${++this.seq}-${nowMs}`, topic, ts: nowMs, data: optionTickerData(this.view, inst, nowMs, this.quoteRng), type: 'snapshot' };
    const text = JSON.stringify(msg);
    for (const c of to) {
      if (this.sender.send(c, text)) {
        this.notificationsSent++;
        this.optionTickersSent++;
      }
      c.fresh.delete(topic);
    }
  }

  private publishLinear(inst: BybitSimInstrument, conns: Iterable<Conn>, nowMs: number): void {
    const topic = `tickers.${inst.symbol}`;
    const record = linearRecord(this.view, inst, nowMs, this.quoteRng);
    const prev = this.lastRecord.get(inst.symbol);
    this.cs += 1 + Math.floor(this.quoteRng.uniform() * 20);
    const cs = this.cs;
    let snapText: string | null = null;
    let deltaText: string | null = null;
    for (const c of conns) {
      if (c.fresh.has(topic) || !prev) {
        snapText ??= JSON.stringify({ topic, type: 'snapshot', data: record, cs, ts: nowMs });
        if (this.sender.send(c, snapText)) {
          this.notificationsSent++;
          this.linearSnapshotsSent++;
        }
        c.fresh.delete(topic);
      } else {
        deltaText ??= JSON.stringify({ topic, type: 'delta', data: recordDelta(prev, record), cs, ts: nowMs });
        if (this.sender.send(c, deltaText)) {
          this.notificationsSent++;
          this.linearDeltasSent++;
        }
      }
    }
    this.lastRecord.set(inst.symbol, record);
  }

  /** One market step and its publication. */
  readonly tick = (): void => {
    const nowMs = this.beginTick();
    const changes = this.chains.refresh(nowMs);
    for (const inst of changes.expired) {
      const topic = `tickers.${inst.symbol}`;
      for (const c of [...(this.subs.get(topic) ?? [])]) this.removeTopic(c, topic);
    }
    if (this.silenced()) return;
    const t = performance.now();
    const linearDue = t - this.lastLinearAt >= this.limits.linearEvery - 1;
    if (linearDue) this.lastLinearAt = t;
    for (const [topic, set] of this.subs) {
      if (set.size === 0) continue;
      const inst = this.chains.get(topic.slice('tickers.'.length));
      if (!inst) continue;
      if (inst.category === 'option') {
        const to = this.sampleRng.uniform() < this.limits.optionP ? [...set] : [...set].filter((c) => c.fresh.has(topic));
        if (to.length > 0) this.publishOption(inst, to, nowMs);
      } else if (linearDue) {
        // Every subscriber shares the last published record, so a delta is always against what it saw.
        this.publishLinear(inst, set, nowMs);
      }
    }
  };

}

/**
 * Start the Bybit simulator.
 * @returns once listening; `optionUrl`, `linearUrl` and `restUrl` are what the Bybit adapter needs.
 * @throws when the port cannot be bound.
 */
export async function startBybitSimulator(opts: BybitSimulatorOptions = {}): Promise<BybitSimulator> {
  const { host, tickMs, market } = simulatorBasics(opts);
  const view = new MarketView(market, opts.view ?? BYBIT_VIEW);
  const limits: BybitLimits = {
    optionP: refreshProbability(opts.optionUpdatesPerSecond, tickMs),
    linearEvery: opts.linearIntervalMs ?? 100,
    maxChars: opts.maxArgsChars ?? 21_000,
    maxOptionArgs: opts.maxOptionArgs ?? 2000,
  };
  const x = new BybitExchange(market, view, new BybitChains(view), limits, opts.stepMarket ?? !opts.market);
  const { conns, switches, sender } = x;
  const srv = await listenHttpWs(host, opts.port, [OPTION_PATH, LINEAR_PATH], (req, res) => answerBybitRest(x, x.switches, req, res));
  srv.wss.on('connection', x.onConnection);
  const timer = setInterval(x.tick, tickMs);
  const faults: BybitSimulatorFaults = simulatorFaults({ switches, conns, send: sender.send, garbage: GARBAGE, subscriptionsOf: (c) => c.topics.size });
  return {
    optionUrl: `ws://${host}:${srv.port}${OPTION_PATH}`,
    linearUrl: `ws://${host}:${srv.port}${LINEAR_PATH}`,
    ...httpWsHandle(host, srv, conns, [timer]),
    market,
    view,
    chains: x.chains,
    faults,
    stats: () => ({
      framesSent: sender.framesSent,
      notificationsSent: x.notificationsSent,
      ticks: x.ticks,
      optionTickersSent: x.optionTickersSent,
      linearSnapshotsSent: x.linearSnapshotsSent,
      linearDeltasSent: x.linearDeltasSent,
      restRequests: srv.restRequests(),
    }),
  };
}
