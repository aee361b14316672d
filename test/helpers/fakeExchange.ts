/**
 * Scaffolding of the fake exchanges the feed tests run against: an HTTP server (REST) and a
 * WebSocket server on 127.0.0.1 (port 0 each), torn down after each test, plus the condition wait
 * those tests use instead of timed assertions. Each test keeps its exchange's own routes and
 * message formats.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import type { MarketFeed } from '../../src/domain/feeds.js';
import type { MarketEvent } from '../../src/domain/events.js';

/** Work to undo after the current test (run last-in first-out by {@link useCleanups}'s afterEach). */
export type Cleanup = () => Promise<void> | void;

/**
 * Registers an afterEach that runs the pushed cleanups last-in first-out; call once at a test
 * file's top level. Returns the list to push onto.
 */
export function useCleanups(): Cleanup[] {
  const cleanups: Cleanup[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()?.();
  });
  return cleanups;
}

/** Resolves once `pred()` is true, polling every 3 ms (a test's own timeout bounds the wait). */
export async function until(pred: () => boolean): Promise<void> {
  while (!pred()) await new Promise((r) => setTimeout(r, 3));
}

/** Subscribes to `feed.events$` (every event pushed to the returned array) and stops the feed after the test. */
export function collectEvents(feed: MarketFeed, cleanups: Cleanup[]): MarketEvent[] {
  const events: MarketEvent[] = [];
  feed.events$.subscribe((e) => events.push(e));
  cleanups.push(() => feed.stop());
  return events;
}

/** Writes `body` as a JSON answer (status 200). */
export function sendJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** The venue-specific parts of a fake exchange. */
export interface FakeExchangeHandlers {
  /** Answer one REST request; its URL (base http://127.0.0.1) is already in `requests`. */
  readonly http: (url: URL, res: ServerResponse, req: IncomingMessage) => void;
  /** A new WebSocket connection: numbered from 1 in arrival order, with the path it asked for. */
  readonly connection: (socket: ServerSocket, conn: number, path: string) => void;
}

/** The running servers of {@link startFakeExchange}. */
export interface FakeExchangeServers {
  /** REST base, `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** WebSocket base, `ws://127.0.0.1:<port>` (append the venue's path). */
  readonly wsBase: string;
  /** Every REST request's URL, in arrival order. */
  readonly requests: URL[];
}

/**
 * Starts the HTTP and WebSocket servers on 127.0.0.1 (port 0) and pushes their teardown onto
 * `cleanups` (sockets terminated, both servers closed).
 */
export async function startFakeExchange(h: FakeExchangeHandlers, cleanups: Cleanup[]): Promise<FakeExchangeServers> {
  const requests: URL[] = [];
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    requests.push(url);
    h.http(url, res, req);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  let n = 0;
  wss.on('connection', (s, req) => h.connection(s, ++n, req.url ?? ''));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => {
          http.close(() => r());
          http.closeAllConnections();
        });
      }),
  );
  return {
    baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    wsBase: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    requests,
  };
}
