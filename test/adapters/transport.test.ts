/**
 * ReconnectingTransport against real sockets on 127.0.0.1 (ws server on port 0), with manual
 * timers: backoff delays are read from the `closed` state changes, never measured.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import {
  ReconnectingTransport,
  backoffDelayMs,
  parseRetryAfterMs,
  type ReconnectingTransportOptions,
  type TransportStateChange,
} from '../../adapters/shared/transport.js';
import { FakeTimers } from './transport-fake-timers.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function wsServer(onConnection: (s: ServerSocket, n: number) => void): Promise<{ url: string; wss: WebSocketServer; count: () => number }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  let n = 0;
  wss.on('connection', (s) => onConnection(s, ++n));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => r());
      }),
  );
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, wss, count: () => n };
}

/** A port on 127.0.0.1 with nothing listening (connections are refused). */
async function closedPortUrl(): Promise<string> {
  const s: Server = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return `ws://127.0.0.1:${port}`;
}

function transport(opts: ReconnectingTransportOptions): { t: ReconnectingTransport; states: TransportStateChange[]; frames: string[] } {
  const t = new ReconnectingTransport(opts);
  const states: TransportStateChange[] = [];
  const frames: string[] = [];
  t.states$.subscribe((s) => states.push(s));
  t.messages$.subscribe((f) => frames.push(f));
  cleanups.push(() => t.stop());
  return { t, states, frames };
}

/** Resolve when `pred` holds (polled on the event loop; the test's own timeout bounds it). */
async function until(pred: () => boolean): Promise<void> {
  while (!pred()) await new Promise((r) => setTimeout(r, 2));
}

const closedDelays = (states: TransportStateChange[]): number[] => states.filter((s) => s.state === 'closed').map((s) => s.retryInMs as number);

describe('backoff and Retry-After helpers', () => {
  it('full jitter over a doubling cap of 1 s .. 30 s', () => {
    const top = (n: number): number => backoffDelayMs(n, 1000, 30_000, () => 1);
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(top)).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    expect(backoffDelayMs(3, 1000, 30_000, () => 0.25)).toBe(1000);
    expect(backoffDelayMs(0, 1000, 30_000, () => 1)).toBe(0);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfterMs('7', now)).toBe(7000);
    expect(parseRetryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfterMs('soon', now)).toBeNull();
    expect(parseRetryAfterMs(undefined, now)).toBeNull();
  });
});

describe('ReconnectingTransport on 127.0.0.1', () => {
  it('emits frames, reconnects after the server drops the socket, and calls onOpen each time', async () => {
    const timers = new FakeTimers();
    const srv = await wsServer((s, n) => {
      s.send(`hello ${n}`);
      if (n === 1) setTimeout(() => s.terminate(), 5);
    });
    const opens: number[] = [];
    const { t, states, frames } = transport({ url: srv.url, timers, random: () => 1, silenceTimeoutMs: 0, onOpen: (ctx) => opens.push(ctx.connectionId) });
    t.start();
    await until(() => states.some((s) => s.state === 'closed'));
    expect(frames).toEqual(['hello 1']);
    // the first message reset the failure count: the retry waits min(2^0 * 1 s, 30 s) * 1
    expect(closedDelays(states)).toEqual([1000]);
    timers.advance(1000);
    await until(() => frames.length === 2);
    expect(frames).toEqual(['hello 1', 'hello 2']);
    expect(opens).toEqual([1, 2]);
    expect(t.reconnects).toBe(1);
    expect(t.connected).toBe(true);
  });

  it('grows the delay 1, 2, 4, 8, 16 s then caps at 30 s while connections fail', async () => {
    const timers = new FakeTimers();
    const { t, states } = transport({ url: await closedPortUrl(), timers, random: () => 1, silenceTimeoutMs: 0 });
    t.start();
    for (let i = 1; i <= 8; i++) {
      await until(() => closedDelays(states).length === i);
      timers.advance(closedDelays(states)[i - 1] as number);
    }
    expect(closedDelays(states)).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    expect(states.filter((s) => s.state === 'connecting').map((s) => s.attempt)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(t.reconnects).toBe(0);
    // attempts after the first are counted even though none succeeded (the dashboard shows them climbing)
    expect(t.reconnectAttempts).toBe(8);
    await until(() => closedDelays(states).length === 9);
    // the next attempt is scheduled 30 s after the ninth failure, on the transport's clock
    expect(t.nextAttemptAtMs).toBe(timers.now() + 30000);
  });

  it('applies the jitter factor from the injected random source', async () => {
    const timers = new FakeTimers();
    const r = [0.5, 0.25, 0.1];
    const { t, states } = transport({ url: await closedPortUrl(), timers, random: () => r.shift() ?? 1, silenceTimeoutMs: 0 });
    t.start();
    for (let i = 1; i <= 3; i++) {
      await until(() => closedDelays(states).length === i);
      timers.advance(closedDelays(states)[i - 1] as number);
    }
    expect(closedDelays(states)).toEqual([500, 500, 400]);
  });

  it('keeps growing while connections open without a message, or drop soon after their first; a stable connection resets it', async () => {
    const timers = new FakeTimers();
    const sockets: ServerSocket[] = [];
    const srv = await wsServer((s, n) => {
      sockets.push(s);
      if (n === 1) setTimeout(() => s.terminate(), 5); // no message at all
      else s.send(`hello ${n}`); // answered once (as a handshake RPC), then dropped by the test below
    });
    const { t, states, frames } = transport({ url: srv.url, timers, random: () => 1, silenceTimeoutMs: 0 });
    t.start();
    await until(() => closedDelays(states).length === 1);
    for (let i = 2; i <= 3; i++) {
      timers.advance(closedDelays(states)[i - 2] as number);
      await until(() => frames.length === i - 1);
      timers.advance(1_000); // up for a second after its message: not stable
      sockets[i - 1]!.terminate();
      await until(() => closedDelays(states).length === i);
    }
    timers.advance(closedDelays(states)[2] as number);
    await until(() => frames.length === 3);
    timers.advance(30_000); // carried messages for stableAfterMs: the next failure counts from 1 again
    sockets[3]!.terminate();
    await until(() => closedDelays(states).length === 4);
    expect(closedDelays(states)).toEqual([1000, 2000, 4000, 1000]);
    expect(t.reconnects).toBe(3);
  });

  it('honours Retry-After on a 429 handshake answer', async () => {
    const http = createServer();
    http.on('upgrade', (_req, socket) => {
      socket.end('HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => http.close(() => r())));
    const timers = new FakeTimers();
    const { t, states } = transport({ url: `ws://127.0.0.1:${(http.address() as AddressInfo).port}`, timers, random: () => 1, silenceTimeoutMs: 0 });
    t.start();
    await until(() => closedDelays(states).length === 1);
    expect(closedDelays(states)).toEqual([7000]);
    expect(states.find((s) => s.state === 'closed')?.reason).toContain('429');
  });

  it('watchdog: traffic keeps the socket; silence longer than silenceTimeoutMs reconnects', async () => {
    const timers = new FakeTimers();
    const sockets: ServerSocket[] = [];
    const srv = await wsServer((s) => sockets.push(s));
    const { t, states, frames } = transport({ url: srv.url, timers, random: () => 1, silenceTimeoutMs: 100 });
    t.start();
    await until(() => t.connected && sockets.length === 1);
    // a heartbeat every 50 ms (fake time) for 500 ms: never silent for more than 100 ms
    for (let i = 0; i < 10; i++) {
      timers.advance(50);
      sockets[0]?.send(`{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"heartbeat"}}`);
      await until(() => frames.length === i + 1);
    }
    expect(states.filter((s) => s.state === 'closed')).toEqual([]);
    // then the server goes silent
    timers.advance(150);
    await until(() => states.some((s) => s.state === 'closed'));
    expect(states.find((s) => s.state === 'closed')?.reason).toMatch(/^watchdog: no traffic for \d+ ms$/);
    timers.advance(closedDelays(states)[0] as number);
    await until(() => t.connected && sockets.length === 2);
    expect(t.reconnects).toBe(1);
  });

  it('stop() closes for good: no reconnect is scheduled and start() does nothing', async () => {
    const timers = new FakeTimers();
    const srv = await wsServer(() => {});
    const { t, states } = transport({ url: srv.url, timers, random: () => 1, silenceTimeoutMs: 0 });
    t.start();
    await until(() => t.connected);
    await t.stop();
    expect(t.state).toBe('stopped');
    expect(states.at(-1)?.state).toBe('stopped');
    expect(timers.pending).toBe(0);
    timers.advance(120_000);
    t.start();
    await new Promise((r) => setTimeout(r, 20));
    expect(srv.count()).toBe(1);
    expect(t.send('x')).toBe(false);
  });

  it('stop() during a backoff wait cancels the pending retry', async () => {
    const timers = new FakeTimers();
    const { t, states } = transport({ url: await closedPortUrl(), timers, random: () => 1, silenceTimeoutMs: 0 });
    t.start();
    await until(() => closedDelays(states).length === 1);
    expect(timers.pending).toBe(1);
    await t.stop();
    expect(timers.pending).toBe(0);
    timers.advance(60_000);
    expect(states.filter((s) => s.state === 'connecting')).toHaveLength(1);
  });
});
