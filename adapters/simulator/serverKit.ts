/**
 * The skeleton the three exchange simulators (deribitServer.ts, okxServer.ts, bybitServer.ts) share: their common
 * options and counters, the state every exchange keeps ({@link SimulatedExchange}: connections, fault switches, the
 * market they drive and its stepping clock, the frame sender, which sends nothing while silenced or backed up and
 * counts frames), subscribers by key, the connection bookkeeping, and, for the REST-and-WebSocket servers (OKX, Bybit), one
 * node http server whose upgrade requests on the protocol's paths go to a WebSocket server. Each server keeps its own
 * protocol: requests, answers, channels and their cadence.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { FaultSwitches, type SimulatorFaults } from './faults.js';
import { Market } from './market.js';
import { Rng, hashString } from './rng.js';

/** Options every simulator takes. */
export interface SimulatorServerOptions {
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
  /** A market to use (e.g. another simulator's, shared) instead of a new one. */
  readonly market?: Market;
}

/** Counters of what a simulator sent. */
export interface SimulatorStats {
  /** Frames sent (notifications, responses, heartbeats), all connections. */
  readonly framesSent: number;
  /** Subscription notifications sent, all connections. */
  readonly notificationsSent: number;
  /** Market ticks run. */
  readonly ticks: number;
}

/** What every running simulator offers (each adds its URLs and listing). */
export interface RunningSimulator<S extends SimulatorStats = SimulatorStats, F extends SimulatorFaults = SimulatorFaults> {
  /** The bound port. */
  readonly port: number;
  readonly market: Market;
  readonly faults: F;
  stats(): S;
  /** Stop ticking, close every socket and the server. */
  close(): Promise<void>;
}

/** A frame over this many bytes buffered on a socket is dropped (a slow client loses frames, the server goes on). */
export const MAX_BUFFERED = 16 * 1024 * 1024;

/** The resolved common options: host (default 127.0.0.1), tick period (ms, at least 1; default 100) and the market. */
export function simulatorBasics(opts: SimulatorServerOptions): { host: string; tickMs: number; market: Market } {
  const host = opts.host ?? '127.0.0.1';
  const tickMs = Math.max(1, opts.tickMs ?? 100);
  const market = opts.market ?? new Market({ seed: opts.seed ?? 42, ...(opts.clock ? { clock: opts.clock } : {}) });
  return { host, tickMs, market };
}

/** Probability per tick that an option is refreshed: `perSecond` (default 1) times the tick in seconds, in [0, 1]. */
export function refreshProbability(perSecond: number | undefined, tickMs: number): number {
  return Math.min(1, Math.max(0, ((perSecond ?? 1) * tickMs) / 1000));
}

/** A connection's id: the hash of `<exchange>-conn:<seed>:<n>` as 8 hex digits. */
export function connectionHash(exchange: string, seed: number, n: number): string {
  return (hashString(`${exchange}-conn:${seed}:${n}`) >>> 0).toString(16).padStart(8, '0');
}

/** The bytes of a received WebSocket frame, however ws delivered it (one buffer, fragments or an ArrayBuffer). */
export function frameBuffer(raw: Buffer | ArrayBuffer | Buffer[]): Buffer {
  return Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw as ArrayBuffer);
}

/** The simulator's clock of market steps: each tick steps the market by the simulator time since the last tick. */
export class MarketStepper {
  private lastClock: number;

  /** @param stepping false: the market is someone else's to step (shared), only its clock is read */
  constructor(
    private readonly market: Market,
    private readonly stepping: boolean,
  ) {
    this.lastClock = market.now;
  }

  /** Step the market (when stepping) by the time since the last call, seconds (>= 0); returns the clock, Unix ms. */
  advance(): number {
    const nowMs = this.market.now;
    if (this.stepping) this.market.step(Math.max(0, (nowMs - this.lastClock) / 1000));
    this.lastClock = nowMs;
    return nowMs;
  }
}

/**
 * The frame sender of one simulator: sends nothing while silenced, to a closed socket or to one with more than
 * {@link MAX_BUFFERED} bytes buffered; counts the frames sent.
 */
export class FrameSender<C extends { readonly ws: WebSocket }> {
  /** Frames sent, all connections. */
  framesSent = 0;

  /** @param onSent called after each frame sent (e.g. to note when the connection last had data) */
  constructor(
    private readonly switches: FaultSwitches,
    private readonly onSent?: (c: C) => void,
  ) {}

  /** Send one frame; returns whether it was sent. */
  readonly send = (c: C, text: string | Buffer): boolean => {
    if (c.ws.readyState !== c.ws.OPEN || this.switches.silenced()) return false;
    if (c.ws.bufferedAmount > MAX_BUFFERED) return false;
    c.ws.send(text);
    this.onSent?.(c);
    this.framesSent++;
    return true;
  };
}

/**
 * Keep one connection in `conns` while it is open: its messages go to `onMessage`, an error terminates it, and when it
 * closes `onClose` runs (e.g. to drop its subscriptions) before it leaves `conns`.
 */
export function trackConnection<C extends { readonly ws: WebSocket }>(
  conns: Set<C>,
  c: C,
  onMessage: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void,
  onClose: () => void,
): void {
  conns.add(c);
  c.ws.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => onMessage(data, isBinary));
  c.ws.on('error', () => c.ws.terminate());
  c.ws.on('close', () => {
    onClose();
    conns.delete(c);
  });
}

/** Answer a REST request: status, `content-type: application/json` (unless `headers` say otherwise), the body as JSON (a string as is). */
export function replyRest(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** The path of a request's URL. */
export function requestPath(req: IncomingMessage): string {
  return new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
}

/** A listening REST-and-WebSocket server. */
export interface HttpWsServer {
  readonly server: Server;
  /** Emits `connection` (ws, req) for each upgrade on one of the paths. */
  readonly wss: WebSocketServer;
  /** The bound port. */
  readonly port: number;
  /** REST requests received (each counted before it is answered). */
  readonly restRequests: () => number;
}

/**
 * Listen with one node http server answering REST with `onRequest` (requests counted), its WebSocket upgrades on `wsPaths` handed to a
 * WebSocket server (`connection` events), upgrades elsewhere refused with 404.
 * @throws when the port cannot be bound
 */
export async function listenHttpWs(
  host: string,
  port: number | undefined,
  wsPaths: readonly string[],
  onRequest: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<HttpWsServer> {
  let restRequests = 0;
  const server = createServer((req, res) => {
    restRequests++;
    onRequest(req, res);
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!wsPaths.includes(requestPath(req))) {
      socket.write('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port ?? 0, host, () => resolve());
  });
  const address = server.address();
  return { server, wss, port: typeof address === 'object' && address ? address.port : 0, restRequests: () => restRequests };
}

/** Terminate every connection, then close the WebSocket server and the http server (open keep-alive sockets too). */
export async function closeHttpWs(s: HttpWsServer, conns: Iterable<{ readonly ws: WebSocket }>): Promise<void> {
  for (const c of conns) c.ws.terminate();
  await new Promise<void>((resolve) => s.wss.close(() => resolve()));
  s.server.closeAllConnections();
  await new Promise<void>((resolve) => s.server.close(() => resolve()));
}

/**
 * The part of a REST-and-WebSocket simulator's handle (OKX, Bybit) that comes from its server: the REST base
 * `restUrl` (`http://host:port`), the bound `port`, and `close`, which clears the simulator's interval `timers` (its
 * market tick and any other), then terminates `conns` and closes the servers ({@link closeHttpWs}).
 */
export function httpWsHandle(
  host: string,
  srv: HttpWsServer,
  conns: Iterable<{ readonly ws: WebSocket }>,
  timers: readonly NodeJS.Timeout[],
): { readonly restUrl: string; readonly port: number; close(): Promise<void> } {
  return {
    restUrl: `http://${host}:${srv.port}`,
    port: srv.port,
    close: async () => {
      for (const t of timers) clearInterval(t);
      await closeHttpWs(srv, conns);
    },
  };
}

/**
 * The state every exchange simulator keeps: its connections, fault switches and frame sender, the quote and sampling
 * generators (`<exchange>:quotes`, `<exchange>:sampling`, derived from the market's seed), the market stepping and
 * the counters of notifications and ticks. Each server extends it with its protocol.
 */
export abstract class SimulatedExchange<C extends { readonly ws: WebSocket }> {
  readonly conns = new Set<C>();
  readonly switches = new FaultSwitches();
  readonly sender: FrameSender<C>;
  protected readonly quoteRng: Rng;
  protected readonly sampleRng: Rng;
  private readonly stepper: MarketStepper;
  /** Subscription notifications sent, all connections. */
  notificationsSent = 0;
  /** Market ticks run. */
  ticks = 0;

  /**
   * @param exchange the generators' label prefix (`deribit`, `okx`, `bybit`)
   * @param stepMarket step the market every tick (false: a shared market someone else steps)
   * @param onSent called after each frame sent
   */
  constructor(
    readonly market: Market,
    exchange: string,
    stepMarket: boolean,
    onSent?: (c: C) => void,
  ) {
    this.sender = new FrameSender<C>(this.switches, onSent);
    this.quoteRng = Rng.derive(market.seed, `${exchange}:quotes`);
    this.sampleRng = Rng.derive(market.seed, `${exchange}:sampling`);
    this.stepper = new MarketStepper(market, stepMarket);
  }

  /** True inside a fault silence: send nothing, ignore requests. */
  protected silenced(): boolean {
    return this.switches.silenced();
  }

  /** Count a tick and step the market; returns the simulator clock, Unix ms. */
  protected beginTick(): number {
    this.ticks++;
    return this.stepper.advance();
  }
}

/** The connections subscribed to each key (topic, channel or `channel|selector`), keys in first-subscription order. */
export class Subscribers<C> extends Map<string, Set<C>> {
  /** Add c to the key's subscribers. */
  addTo(key: string, c: C): void {
    let set = this.get(key);
    if (!set) this.set(key, (set = new Set()));
    set.add(c);
  }

  /** Remove c from the key's subscribers; true when that left the key without any (the key is then gone). */
  removeFrom(key: string, c: C): boolean {
    const set = this.get(key);
    set?.delete(c);
    if (set && set.size === 0) {
      this.delete(key);
      return true;
    }
    return false;
  }
}
