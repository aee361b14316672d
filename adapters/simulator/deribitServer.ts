/**
 * Local simulator of the Deribit API v2 JSON-RPC WebSocket protocol, driven by the stochastic
 * {@link Market}. The service's real Deribit adapter connects to it over a real socket on
 * 127.0.0.1; only the URL differs from live Deribit (`ws://127.0.0.1:<port>/ws/api/v2`).
 *
 * Methods (docs.deribit.com, API v2.1.1): public/get_instruments, public/subscribe,
 * public/unsubscribe, public/unsubscribe_all, public/set_heartbeat, public/disable_heartbeat,
 * public/test, public/hello, public/get_time, public/get_funding_rate_history,
 * public/get_index_price, public/ticker. Channels: `ticker.{instrument}.{100ms|agg2|raw}`,
 * `deribit_price_index.{btc_usd|eth_usd|sol_usdc|xrp_usdc}`. Unknown channels are left out of
 * the subscribe result (Deribit answers `result: []` for them, adampointer/go-deribit issue 16);
 * `.raw` channels are refused on this unauthenticated session with error 13778
 * `raw_subscriptions_not_available_for_unauthorized` (Deribit since 2022-01, cryptofeed issue 768)
 * unless `rawRequiresAuth: false`. Errors use Deribit's JSON-RPC shape
 * `{code, message, data: {reason, param}}` (e.g. -32602 "Invalid params", gocryptotrader issue 2099).
 *
 * Heartbeat (public/set_heartbeat): after `{interval >= 10}` the server sends
 * `{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"test_request"}}` every interval and
 * CLOSES the connection when the previous test_request was not answered by a `public/test`
 * request within that interval (docs: "If your software fails to do so, the API server will
 * immediately close the connection").
 *
 * Cadence: a market step every `tickMs`; futures, perpetuals and indices are published every
 * tick; each subscribed option is refreshed with probability `optionUpdatesPerSecond * tickMs /
 * 1000` per tick (default: once per second on average) and on the first tick after subscribing;
 * a `100ms`/`agg2` channel sends at most once per 100 ms.
 */
import { performance } from 'node:perf_hooks';
import { WebSocketServer, type WebSocket } from 'ws';
import { DeribitChains, type SimInstrument } from './chains.js';
import {
  expiredOptionTicker,
  futureTicker,
  indexData,
  notification,
  optionTicker,
  rpcError,
  rpcResult,
  type Json,
  type RpcError,
  type SettlementMemory,
} from './deribitMessages.js';
import { ERR, INDEXES, RpcFailure, deribitMethods, invalid, type DeribitConn, type DeribitRpcTarget, type RpcMethod } from './deribitRpc.js';
import type { Market } from './market.js';
import { garbageFrames, simulatorFaults } from './faults.js';
import { SimulatedExchange, Subscribers, frameBuffer, refreshProbability, simulatorBasics, trackConnection, type RunningSimulator, type SimulatorServerOptions } from './serverKit.js';

/** Options of {@link startDeribitSimulator}. */
export interface DeribitSimulatorOptions extends SimulatorServerOptions {
  /** Mean refreshes per second of each subscribed option ticker. Default 1. */
  readonly optionUpdatesPerSecond?: number;
  /** Refuse `.raw` channels with error 13778, as Deribit does without authentication. Default true. */
  readonly rawRequiresAuth?: boolean;
  /** Milliseconds per heartbeat-interval second (tests shrink it; 1000 = real time). Default 1000. */
  readonly heartbeatMsPerS?: number;
}

/** Fault hooks for tests (adapters/simulator/faults.ts). */
export type { SimulatorFaults } from './faults.js';

/** Counters of what the simulator sent. */
export type { SimulatorStats } from './serverKit.js';

/** A running simulator. */
export interface DeribitSimulator extends RunningSimulator {
  /** `ws://127.0.0.1:<port>/ws/api/v2`. */
  readonly url: string;
  readonly chains: DeribitChains;
  /**
   * A parallel move of the marks of every option whose name starts with `instrumentPrefix` (e.g. `BTC-27NOV26-`, one
   * expiry) by `dVol` (fraction; Market.shiftMarks), and their tickers published at the next market step, all at
   * once, as a real market reprices an expiry (benchmark of freshness, bench/freshness.ts).
   * @returns the number of subscribed ticker channels that will publish
   */
  shiftMarks(instrumentPrefix: string, dVol: number): number;
}

type Channel =
  | { readonly type: 'ticker'; readonly inst: SimInstrument; readonly interval: string }
  | { readonly type: 'index'; readonly name: string };

type Conn = DeribitConn;

/** Garbage frames for malformedFrames (faults.ts garbageFrames). */
const GARBAGE = garbageFrames(
  '{"jsonrpc":"2.0","method":"subscription","params":{"channel":"ticker.BTC-PERPETUAL.100ms","data":{"timestamp":',
  '{"jsonrpc":"2.0","method":"subscription","params":{"channel":"ticker.NO-SUCH-INSTRUMENT.100ms","data":"garbage"}}',
);

const TICKER_CHANNEL = /^ticker\.(.+)\.(100ms|agg2|raw)$/;

/** A request's method and params, or the error to answer (with the id to answer it under). */
type RpcCall = { readonly id: unknown; readonly fn: RpcMethod; readonly params: Json } | { readonly id: unknown; readonly error: RpcError };

/** Parse a frame as a JSON-RPC request `{id, method, params?}` of a known method. */
function parseCall(methods: Record<string, RpcMethod>, raw: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): RpcCall {
  let req: unknown;
  try {
    const text = frameBuffer(raw).toString('utf8');
    if (isBinary && text.length === 0) throw new Error('empty');
    req = JSON.parse(text);
  } catch {
    return { id: undefined, error: ERR.parse };
  }
  if (typeof req !== 'object' || req === null || Array.isArray(req)) return { id: undefined, error: ERR.request };
  const r = req as Json;
  const id = r.id;
  if (typeof r.method !== 'string' || id === undefined || id === null) return { id: id ?? undefined, error: ERR.request };
  const method = r.method.replace(/^\/?(api\/v2\/)?/, '');
  const fn = methods[method];
  if (!fn) return { id, error: ERR.method };
  const params = r.params ?? {};
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return { id, error: invalid('params', 'must be an object') };
  return { id, fn, params: params as Json };
}

/**
 * The Deribit simulator's state and protocol: connections, channel subscriptions, heartbeats, the JSON-RPC
 * requests (methods: deribitRpc.ts) and the publication per tick.
 */
class DeribitExchange extends SimulatedExchange<Conn> implements DeribitRpcTarget {
  /** channel -> subscribed connections */
  private readonly channelSubs = new Subscribers<Conn>();
  /** instrument name -> its subscribed ticker channels */
  readonly instrumentChannels = new Map<string, Set<string>>();
  /** channels needing their first notification */
  readonly fresh = new Set<string>();
  private readonly lastSent = new Map<string, number>();
  private readonly memory: SettlementMemory = new Map();
  private readonly methods: Record<string, RpcMethod>;

  constructor(
    market: Market,
    readonly chains: DeribitChains,
    private readonly optionP: number,
    readonly rawRequiresAuth: boolean,
    private readonly hbUnit: number,
  ) {
    super(market, 'deribit', true);
    this.methods = deribitMethods(this);
  }

  private parseChannel(ch: string): Channel | null {
    if (ch.startsWith('deribit_price_index.')) {
      const name = ch.slice('deribit_price_index.'.length);
      return INDEXES[name] ? { type: 'index', name } : null;
    }
    const m = TICKER_CHANNEL.exec(ch);
    if (m) {
      const inst = this.chains.get(m[1]!);
      return inst ? { type: 'ticker', inst, interval: m[2]! } : null;
    }
    return null;
  }

  private addSub(c: Conn, ch: string, parsed: Channel): void {
    if (c.channels.has(ch)) return;
    c.channels.add(ch);
    this.channelSubs.addTo(ch, c);
    if (parsed.type === 'ticker') {
      let chs = this.instrumentChannels.get(parsed.inst.name);
      if (!chs) this.instrumentChannels.set(parsed.inst.name, (chs = new Set()));
      chs.add(ch);
    }
    this.fresh.add(ch);
  }

  subscribeChannels(c: Conn, channels: readonly string[]): string[] {
    const ok: string[] = [];
    for (const ch of channels) {
      const parsed = this.parseChannel(ch);
      if (!parsed) continue;
      this.addSub(c, ch, parsed);
      ok.push(ch);
    }
    return ok;
  }

  removeSub(c: Conn, ch: string): boolean {
    if (!c.channels.delete(ch)) return false;
    if (this.channelSubs.removeFrom(ch, c)) {
      this.lastSent.delete(ch);
      this.fresh.delete(ch);
      const m = TICKER_CHANNEL.exec(ch);
      if (m) {
        const chs = this.instrumentChannels.get(m[1]!);
        chs?.delete(ch);
        if (chs && chs.size === 0) this.instrumentChannels.delete(m[1]!);
      }
    }
    return true;
  }

  private publish(ch: string, data: unknown): void {
    const subs = this.channelSubs.get(ch);
    if (!subs || subs.size === 0) return;
    const text = JSON.stringify(notification(ch, data));
    for (const c of subs) if (this.sender.send(c, text)) this.notificationsSent++;
    this.lastSent.set(ch, performance.now());
    this.fresh.delete(ch);
  }

  /** A 100ms/agg2 channel may send when 100 ms have passed since its last notification. */
  private due(ch: string, t: number): boolean {
    if (ch.endsWith('.raw')) return true;
    const last = this.lastSent.get(ch);
    return last === undefined || t - last >= 99;
  }

  tickerData(inst: SimInstrument, nowMs: number): Json {
    const { market, quoteRng, memory } = this;
    return inst.kind === 'option' ? optionTicker(market, inst, nowMs, quoteRng, memory) : futureTicker(market, inst, nowMs, quoteRng, memory);
  }

  /** One market step: expired instruments' last tickers and unsubscription, then the publication. */
  readonly tick = (): void => {
    const nowMs = this.beginTick();
    const changes = this.chains.refresh(nowMs);
    for (const inst of changes.expired) {
      this.memory.delete(inst.name);
      const chs = this.instrumentChannels.get(inst.name);
      if (!chs) continue;
      for (const ch of [...chs]) {
        if (inst.kind === 'option') this.publish(ch, expiredOptionTicker(this.market, inst, nowMs));
        for (const c of [...(this.channelSubs.get(ch) ?? [])]) this.removeSub(c, ch);
      }
    }
    if (this.silenced()) return;
    this.publishAll(nowMs, performance.now());
  };

  /** The indexes, then the tickers due at t (performance.now() ms; options sampled), the market at nowMs. */
  private publishAll(nowMs: number, t: number): void {
    for (const [name, idx] of Object.entries(INDEXES)) {
      const ch = `deribit_price_index.${name}`;
      if (this.channelSubs.has(ch) && this.due(ch, t)) this.publish(ch, indexData(this.market, name, idx.u, idx.dp, nowMs));
    }
    for (const [name, chs] of this.instrumentChannels) {
      const inst = this.chains.get(name);
      if (!inst) continue;
      let isFresh = false;
      for (const ch of chs) if (this.fresh.has(ch)) isFresh = true;
      if (inst.kind === 'option' && !isFresh && this.sampleRng.uniform() >= this.optionP) continue;
      let data: Json | null = null;
      for (const ch of chs) {
        if (!this.fresh.has(ch) && !this.due(ch, t)) continue;
        data ??= this.tickerData(inst, nowMs);
        this.publish(ch, data);
      }
    }
  }

  startHeartbeat(c: Conn, intervalS: number): void {
    if (c.hbTimer) clearInterval(c.hbTimer);
    c.awaitingTest = false;
    c.hbTimer = setInterval(() => {
      if (this.silenced()) {
        c.awaitingTest = false;
        return;
      }
      if (c.awaitingTest) {
        c.ws.close(1000, 'heartbeat test_request not answered');
        return;
      }
      if (this.sender.send(c, JSON.stringify({ jsonrpc: '2.0', method: 'heartbeat', params: { type: 'test_request' } }))) c.awaitingTest = true;
    }, intervalS * this.hbUnit);
  }

  /** A new connection: its requests, its heartbeat and subscriptions dropped when it closes. */
  readonly onConnection = (ws: WebSocket): void => {
    const c: Conn = { ws, channels: new Set(), hbTimer: null, awaitingTest: false };
    trackConnection(
      this.conns,
      c,
      (data, isBinary) => this.onMessage(c, data, isBinary),
      () => {
        if (c.hbTimer) clearInterval(c.hbTimer);
        for (const ch of [...c.channels]) this.removeSub(c, ch);
      },
    );
  };

  /**
   * Answer one request. usIn: the simulator clock in microseconds; usOut: usIn + the measured handling time (>= 1 µs).
   */
  private onMessage(c: Conn, raw: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    if (this.silenced()) return;
    const usIn = Math.round(this.market.now * 1000);
    const t0 = performance.now();
    const usNow = () => usIn + Math.max(1, Math.round((performance.now() - t0) * 1000));
    const reply = (o: Json) => this.sender.send(c, JSON.stringify(o));
    const call = parseCall(this.methods, raw, isBinary);
    if ('error' in call) {
      reply(rpcError(call.id, call.error, usIn, usNow()));
      return;
    }
    try {
      const result = call.fn(c, call.params);
      reply(rpcResult(call.id, result, usIn, usNow()));
    } catch (e) {
      if (e instanceof RpcFailure) reply(rpcError(call.id, e.rpc, usIn, usNow()));
      else reply(rpcError(call.id, { code: 11094, message: 'internal_server_error' }, usIn, usNow()));
    }
  }

  /** Market.shiftMarks, and the prefix's subscribed ticker channels marked for publication; returns their number. */
  shiftMarks(instrumentPrefix: string, dVol: number): number {
    this.market.shiftMarks(instrumentPrefix, dVol);
    let n = 0;
    for (const [name, chs] of this.instrumentChannels) {
      if (!name.startsWith(instrumentPrefix)) continue;
      for (const ch of chs) {
        this.fresh.add(ch);
        n++;
      }
    }
    return n;
  }
}

/**
 * Start the Deribit simulator.
 * @returns once listening; `url` is the WebSocket URL to give the Deribit adapter.
 * @throws when the port cannot be bound.
 */
export async function startDeribitSimulator(opts: DeribitSimulatorOptions = {}): Promise<DeribitSimulator> {
  const { host, tickMs, market } = simulatorBasics(opts);
  const chains = new DeribitChains(market);
  const optionP = refreshProbability(opts.optionUpdatesPerSecond, tickMs);
  const x = new DeribitExchange(market, chains, optionP, opts.rawRequiresAuth ?? true, opts.heartbeatMsPerS ?? 1000);
  const { conns, switches, sender } = x;
  const wss = new WebSocketServer({ host, port: opts.port ?? 0 });
  await new Promise<void>((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', reject);
  });
  const address = wss.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  wss.on('connection', x.onConnection);
  const timer = setInterval(x.tick, tickMs);
  const faults = simulatorFaults({
    switches,
    conns,
    send: sender.send,
    garbage: GARBAGE,
    subscriptionsOf: (c) => c.channels.size,
    // a heartbeat request outstanding when the silence starts is forgotten, as Deribit would not close then
    onSilence: () => {
      for (const c of conns) c.awaitingTest = false;
    },
  });
  return {
    url: `ws://${host}:${port}/ws/api/v2`,
    port,
    market,
    chains,
    faults,
    stats: () => ({ framesSent: sender.framesSent, notificationsSent: x.notificationsSent, ticks: x.ticks }),
    shiftMarks: (instrumentPrefix: string, dVol: number): number => x.shiftMarks(instrumentPrefix, dVol),
    close: async () => {
      clearInterval(timer);
      for (const c of conns) {
        if (c.hbTimer) clearInterval(c.hbTimer);
        c.ws.terminate();
      }
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
