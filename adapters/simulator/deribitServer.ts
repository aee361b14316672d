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
  roundTo,
  rpcResult,
  type Json,
  type RpcError,
  type SettlementMemory,
} from './deribitMessages.js';
import { Market, type Underlying } from './market.js';
import { Rng } from './rng.js';
import { FaultSwitches, simulatorFaults, type SimulatorFaults } from './faults.js';

/** Options of {@link startDeribitSimulator}. */
export interface DeribitSimulatorOptions {
  /** TCP port; 0 (default) picks a free one. */
  readonly port?: number;
  /** Interface to bind; default 127.0.0.1. */
  readonly host?: string;
  /** Market seed (ignored when `market` is given). Default 42. */
  readonly seed?: number;
  /** Market step and publication period, ms. Default 100. */
  readonly tickMs?: number;
  /** Simulator clock, Unix ms (ignored when `market` is given). Default Date.now. */
  readonly clock?: () => number;
  /** A market to use instead of a new one. */
  readonly market?: Market;
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
export interface SimulatorStats {
  /** Frames sent (notifications, responses, heartbeats), all connections. */
  readonly framesSent: number;
  /** Subscription notifications sent, all connections. */
  readonly notificationsSent: number;
  /** Market ticks run. */
  readonly ticks: number;
}

/** A running simulator. */
export interface DeribitSimulator {
  /** `ws://127.0.0.1:<port>/ws/api/v2`. */
  readonly url: string;
  readonly port: number;
  readonly market: Market;
  readonly chains: DeribitChains;
  readonly faults: SimulatorFaults;
  stats(): SimulatorStats;
  /**
   * A parallel move of the marks of every option whose name starts with `instrumentPrefix` (e.g. `BTC-27NOV26-`, one
   * expiry) by `dVol` (fraction; Market.shiftMarks), and their tickers published at the next market step, all at
   * once, as a real market reprices an expiry (benchmark of freshness, bench/freshness.ts).
   * @returns the number of subscribed ticker channels that will publish
   */
  shiftMarks(instrumentPrefix: string, dVol: number): number;
  /** Stop ticking, close every socket and the server. */
  close(): Promise<void>;
}

const INDEXES: Readonly<Record<string, { readonly u: Underlying; readonly dp: number }>> = {
  btc_usd: { u: 'BTC', dp: 2 },
  eth_usd: { u: 'ETH', dp: 2 },
  sol_usdc: { u: 'SOL', dp: 4 },
  xrp_usdc: { u: 'XRP', dp: 4 },
};
const CURRENCIES = ['BTC', 'ETH', 'USDC', 'USDT', 'EURR', 'any'];
const KINDS = ['future', 'option', 'spot', 'future_combo', 'option_combo'];
const VERSION = '1.2.26';
const MAX_BUFFERED = 16 * 1024 * 1024;

const ERR = {
  parse: { code: -32700, message: 'Parse error' },
  request: { code: -32600, message: 'Invalid Request' },
  method: { code: -32601, message: 'Method not found' },
  rejected: { code: 10028, message: 'too_many_requests' },
  raw: { code: 13778, message: 'raw_subscriptions_not_available_for_unauthorized' },
} as const satisfies Record<string, RpcError>;

function invalid(param: string, reason: string): RpcError {
  return { code: -32602, message: 'Invalid params', data: { reason, param } };
}

class RpcFailure extends Error {
  constructor(readonly rpc: RpcError) {
    super(rpc.message);
  }
}

interface Conn {
  readonly ws: WebSocket;
  readonly channels: Set<string>;
  hbTimer: NodeJS.Timeout | null;
  awaitingTest: boolean;
}

type Channel =
  | { readonly type: 'ticker'; readonly inst: SimInstrument; readonly interval: string }
  | { readonly type: 'index'; readonly name: string };

/**
 * Start the Deribit simulator.
 * @returns once listening; `url` is the WebSocket URL to give the Deribit adapter.
 * @throws when the port cannot be bound.
 */
export async function startDeribitSimulator(opts: DeribitSimulatorOptions = {}): Promise<DeribitSimulator> {
  const host = opts.host ?? '127.0.0.1';
  const tickMs = Math.max(1, opts.tickMs ?? 100);
  const market = opts.market ?? new Market({ seed: opts.seed ?? 42, ...(opts.clock ? { clock: opts.clock } : {}) });
  const seed = market.seed;
  const chains = new DeribitChains(market);
  const optionP = Math.min(1, Math.max(0, ((opts.optionUpdatesPerSecond ?? 1) * tickMs) / 1000));
  const rawRequiresAuth = opts.rawRequiresAuth ?? true;
  const hbUnit = opts.heartbeatMsPerS ?? 1000;
  const quoteRng = Rng.derive(seed, 'deribit:quotes');
  const sampleRng = Rng.derive(seed, 'deribit:sampling');
  const memory: SettlementMemory = new Map();

  const conns = new Set<Conn>();
  /** channel -> subscribed connections */
  const channelSubs = new Map<string, Set<Conn>>();
  /** instrument name -> its subscribed ticker channels */
  const instrumentChannels = new Map<string, Set<string>>();
  /** channels needing their first notification */
  const fresh = new Set<string>();
  const lastSent = new Map<string, number>();
  const switches = new FaultSwitches();
  let framesSent = 0;
  let notificationsSent = 0;
  let ticks = 0;

  const silenced = () => switches.silenced();
  /** usIn: the simulator clock in microseconds; usOut: usIn + the measured handling time (>= 1 µs). */
  const usStamp = () => ({ us: Math.round(market.now * 1000), t0: performance.now() });
  const usAfter = (s: { us: number; t0: number }) => s.us + Math.max(1, Math.round((performance.now() - s.t0) * 1000));

  function send(c: Conn, text: string | Buffer): boolean {
    if (c.ws.readyState !== c.ws.OPEN || silenced()) return false;
    if (c.ws.bufferedAmount > MAX_BUFFERED) return false;
    c.ws.send(text);
    framesSent++;
    return true;
  }

  function parseChannel(ch: string): Channel | null {
    if (ch.startsWith('deribit_price_index.')) {
      const name = ch.slice('deribit_price_index.'.length);
      return INDEXES[name] ? { type: 'index', name } : null;
    }
    const m = /^ticker\.(.+)\.(100ms|agg2|raw)$/.exec(ch);
    if (m) {
      const inst = chains.get(m[1]!);
      return inst ? { type: 'ticker', inst, interval: m[2]! } : null;
    }
    return null;
  }

  function addSub(c: Conn, ch: string, parsed: Channel): void {
    if (c.channels.has(ch)) return;
    c.channels.add(ch);
    let set = channelSubs.get(ch);
    if (!set) channelSubs.set(ch, (set = new Set()));
    set.add(c);
    if (parsed.type === 'ticker') {
      let chs = instrumentChannels.get(parsed.inst.name);
      if (!chs) instrumentChannels.set(parsed.inst.name, (chs = new Set()));
      chs.add(ch);
    }
    fresh.add(ch);
  }

  function removeSub(c: Conn, ch: string): boolean {
    if (!c.channels.delete(ch)) return false;
    const set = channelSubs.get(ch);
    set?.delete(c);
    if (set && set.size === 0) {
      channelSubs.delete(ch);
      lastSent.delete(ch);
      fresh.delete(ch);
      const m = /^ticker\.(.+)\.(100ms|agg2|raw)$/.exec(ch);
      if (m) {
        const chs = instrumentChannels.get(m[1]!);
        chs?.delete(ch);
        if (chs && chs.size === 0) instrumentChannels.delete(m[1]!);
      }
    }
    return true;
  }

  function publish(ch: string, data: unknown): void {
    const subs = channelSubs.get(ch);
    if (!subs || subs.size === 0) return;
    const text = JSON.stringify(notification(ch, data));
    for (const c of subs) if (send(c, text)) notificationsSent++;
    lastSent.set(ch, performance.now());
    fresh.delete(ch);
  }

  /** A 100ms/agg2 channel may send when 100 ms have passed since its last notification. */
  function due(ch: string, t: number): boolean {
    if (ch.endsWith('.raw')) return true;
    const last = lastSent.get(ch);
    return last === undefined || t - last >= 99;
  }

  function tickerData(inst: SimInstrument, nowMs: number): Json {
    return inst.kind === 'option' ? optionTicker(market, inst, nowMs, quoteRng, memory) : futureTicker(market, inst, nowMs, quoteRng, memory);
  }

  let lastClock = market.now;
  function tick(): void {
    ticks++;
    const nowMs = market.now;
    const dtS = Math.max(0, (nowMs - lastClock) / 1000);
    lastClock = nowMs;
    market.step(dtS);
    const changes = chains.refresh(nowMs);
    for (const inst of changes.expired) {
      memory.delete(inst.name);
      const chs = instrumentChannels.get(inst.name);
      if (!chs) continue;
      for (const ch of [...chs]) {
        if (inst.kind === 'option') publish(ch, expiredOptionTicker(market, inst, nowMs));
        for (const c of [...(channelSubs.get(ch) ?? [])]) removeSub(c, ch);
      }
    }
    if (silenced()) return;
    const t = performance.now();
    for (const [name, idx] of Object.entries(INDEXES)) {
      const ch = `deribit_price_index.${name}`;
      if (channelSubs.has(ch) && due(ch, t)) publish(ch, indexData(market, name, idx.u, idx.dp, nowMs));
    }
    for (const [name, chs] of instrumentChannels) {
      const inst = chains.get(name);
      if (!inst) continue;
      let isFresh = false;
      for (const ch of chs) if (fresh.has(ch)) isFresh = true;
      if (inst.kind === 'option' && !isFresh && sampleRng.uniform() >= optionP) continue;
      let data: Json | null = null;
      for (const ch of chs) {
        if (!fresh.has(ch) && !due(ch, t)) continue;
        data ??= tickerData(inst, nowMs);
        publish(ch, data);
      }
    }
  }

  // ---- JSON-RPC methods -------------------------------------------------------------------

  function str(params: Json, name: string, required: boolean): string | undefined {
    const v = params[name];
    if (v === undefined) {
      if (required) throw new RpcFailure(invalid(name, 'required'));
      return undefined;
    }
    if (typeof v !== 'string') throw new RpcFailure(invalid(name, 'must be a string'));
    return v;
  }

  function num(params: Json, name: string): number {
    const v = params[name];
    if (v === undefined) throw new RpcFailure(invalid(name, 'required'));
    const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isFinite(n)) throw new RpcFailure(invalid(name, 'must be a number'));
    return n;
  }

  function channelList(params: Json): string[] {
    const v = params.channels;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new RpcFailure(invalid('channels', 'value must be a list'));
    return v as string[];
  }

  function startHeartbeat(c: Conn, intervalS: number): void {
    if (c.hbTimer) clearInterval(c.hbTimer);
    c.awaitingTest = false;
    c.hbTimer = setInterval(() => {
      if (silenced()) {
        c.awaitingTest = false;
        return;
      }
      if (c.awaitingTest) {
        c.ws.close(1000, 'heartbeat test_request not answered');
        return;
      }
      if (send(c, JSON.stringify({ jsonrpc: '2.0', method: 'heartbeat', params: { type: 'test_request' } }))) c.awaitingTest = true;
    }, intervalS * hbUnit);
  }

  const methods: Record<string, (c: Conn, params: Json) => unknown> = {
    'public/test': (c) => {
      c.awaitingTest = false;
      return { version: VERSION };
    },
    'public/hello': () => ({ version: VERSION }),
    'public/get_time': () => market.now,
    'public/set_heartbeat': (c, params) => {
      const interval = num(params, 'interval');
      if (interval < 10) throw new RpcFailure(invalid('interval', 'must be greater than or equal to 10'));
      startHeartbeat(c, interval);
      return 'ok';
    },
    'public/disable_heartbeat': (c) => {
      if (c.hbTimer) clearInterval(c.hbTimer);
      c.hbTimer = null;
      c.awaitingTest = false;
      return 'ok';
    },
    'public/get_instruments': (_c, params) => {
      const currency = str(params, 'currency', true)!;
      if (!CURRENCIES.includes(currency)) throw new RpcFailure(invalid('currency', `must be one of the following: ${CURRENCIES.join(', ')}`));
      const kind = str(params, 'kind', false);
      if (kind !== undefined && !KINDS.includes(kind)) throw new RpcFailure(invalid('kind', `must be one of the following: ${KINDS.join(', ')}`));
      const expired = params.expired;
      if (expired !== undefined && typeof expired !== 'boolean' && expired !== 'true' && expired !== 'false') {
        throw new RpcFailure(invalid('expired', 'must be a boolean'));
      }
      const wantExpired = expired === true || expired === 'true';
      const list = wantExpired
        ? chains.expired().map((i) => ({ ...i, json: { ...i.json, is_active: false, state: 'closed' } }))
        : chains.all();
      return list
        .filter((i) => (currency === 'any' || i.product.currency === currency) && (kind === undefined || i.kind === kind))
        .map((i) => i.json);
    },
    'public/get_index_price': (_c, params) => {
      const name = str(params, 'index_name', true)!;
      const idx = INDEXES[name];
      if (!idx) throw new RpcFailure(invalid('index_name', 'wrong format'));
      const price = indexData(market, name, idx.u, idx.dp, market.now).price;
      return { index_price: price, estimated_delivery_price: price };
    },
    'public/ticker': (_c, params) => {
      const name = str(params, 'instrument_name', true)!;
      const inst = chains.get(name);
      if (!inst) throw new RpcFailure(invalid('instrument_name', 'instrument not found'));
      return tickerData(inst, market.now);
    },
    'public/get_funding_rate_history': (_c, params) => {
      const name = str(params, 'instrument_name', true)!;
      const inst = chains.get(name);
      if (!inst || !inst.perpetual) throw new RpcFailure(invalid('instrument_name', 'must be a perpetual instrument'));
      const start = num(params, 'start_timestamp');
      const end = num(params, 'end_timestamp');
      if (start > end) throw new RpcFailure(invalid('start_timestamp', 'must be less than end_timestamp'));
      const dp = inst.product.priceDecimals;
      return market.fundingHistory(inst.underlying, start, end).map((p) => ({
        timestamp: p.timestamp,
        index_price: roundTo(p.index_price, dp),
        prev_index_price: roundTo(p.prev_index_price, dp),
        interest_8h: p.interest_8h,
        interest_1h: p.interest_1h,
      }));
    },
    'public/subscribe': (c, params) => {
      const channels = channelList(params);
      if (switches.rejecting) throw new RpcFailure(ERR.rejected);
      if (rawRequiresAuth && channels.some((ch) => ch.endsWith('.raw'))) throw new RpcFailure(ERR.raw);
      const ok: string[] = [];
      for (const ch of channels) {
        const parsed = parseChannel(ch);
        if (!parsed) continue;
        addSub(c, ch, parsed);
        ok.push(ch);
      }
      return ok;
    },
    'public/unsubscribe': (c, params) => channelList(params).filter((ch) => removeSub(c, ch)),
    'public/unsubscribe_all': (c) => {
      for (const ch of [...c.channels]) removeSub(c, ch);
      return 'ok';
    },
  };

  function onMessage(c: Conn, raw: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    if (silenced()) return;
    const stamp = usStamp();
    const usIn = stamp.us;
    const usNow = () => usAfter(stamp);
    const reply = (o: Json) => send(c, JSON.stringify(o));
    let req: unknown;
    try {
      const text = Array.isArray(raw) ? Buffer.concat(raw).toString('utf8') : Buffer.from(raw as ArrayBuffer).toString('utf8');
      if (isBinary && text.length === 0) throw new Error('empty');
      req = JSON.parse(text);
    } catch {
      reply(rpcError(undefined, ERR.parse, usIn, usNow()));
      return;
    }
    if (typeof req !== 'object' || req === null || Array.isArray(req)) {
      reply(rpcError(undefined, ERR.request, usIn, usNow()));
      return;
    }
    const r = req as Json;
    const id = r.id;
    if (typeof r.method !== 'string' || id === undefined || id === null) {
      reply(rpcError(id ?? undefined, ERR.request, usIn, usNow()));
      return;
    }
    const method = r.method.replace(/^\/?(api\/v2\/)?/, '');
    const fn = methods[method];
    if (!fn) {
      reply(rpcError(id, ERR.method, usIn, usNow()));
      return;
    }
    const params = r.params ?? {};
    if (typeof params !== 'object' || params === null || Array.isArray(params)) {
      reply(rpcError(id, invalid('params', 'must be an object'), usIn, usNow()));
      return;
    }
    try {
      const result = fn(c, params as Json);
      reply(rpcResult(id, result, usIn, usNow()));
    } catch (e) {
      if (e instanceof RpcFailure) reply(rpcError(id, e.rpc, usIn, usNow()));
      else reply(rpcError(id, { code: 11094, message: 'internal_server_error' }, usIn, usNow()));
    }
  }

  // ---- server ------------------------------------------------------------------------------

  const wss = new WebSocketServer({ host, port: opts.port ?? 0 });
  await new Promise<void>((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', reject);
  });
  const address = wss.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  wss.on('connection', (ws) => {
    const c: Conn = { ws, channels: new Set(), hbTimer: null, awaitingTest: false };
    conns.add(c);
    ws.on('message', (data, isBinary) => onMessage(c, data, isBinary));
    ws.on('error', () => ws.terminate());
    ws.on('close', () => {
      if (c.hbTimer) clearInterval(c.hbTimer);
      for (const ch of [...c.channels]) removeSub(c, ch);
      conns.delete(c);
    });
  });

  const timer = setInterval(tick, tickMs);

  const GARBAGE: Array<string | Buffer> = [
    '{"jsonrpc":"2.0","method":"subscription","params":{"channel":"ticker.BTC-PERPETUAL.100ms","data":{"timestamp":',
    'not json at all',
    Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00, 0xff]),
    '{"jsonrpc":"2.0","method":"subscription","params":{"channel":"ticker.NO-SUCH-INSTRUMENT.100ms","data":"garbage"}}',
    '[1,2,3]',
  ];

  const faults = simulatorFaults({
    switches,
    conns,
    send,
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
    stats: () => ({ framesSent, notificationsSent, ticks }),
    shiftMarks: (instrumentPrefix: string, dVol: number): number => {
      market.shiftMarks(instrumentPrefix, dVol);
      let n = 0;
      for (const [name, chs] of instrumentChannels) {
        if (!name.startsWith(instrumentPrefix)) continue;
        for (const ch of chs) {
          fresh.add(ch);
          n++;
        }
      }
      return n;
    },
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
