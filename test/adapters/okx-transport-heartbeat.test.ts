/**
 * The transport's client heartbeat (added for OKX's text `ping` and Bybit's `{"op":"ping"}`), on a
 * real socket on 127.0.0.1 with manual timers: time moves only when the test advances it, and the
 * assertions are on the frames the server received, never on durations.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import { ReconnectingTransport, type ReconnectingTransportOptions, type TransportStateChange } from '../../adapters/shared/transport.js';
import { FakeTimers } from './transport-fake-timers.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function server(): Promise<{ url: string; sockets: ServerSocket[]; received: string[] }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const sockets: ServerSocket[] = [];
  const received: string[] = [];
  wss.on('connection', (s) => {
    sockets.push(s);
    s.on('message', (d) => received.push(d.toString()));
  });
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => r());
      }),
  );
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, sockets, received };
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

async function until(pred: () => boolean): Promise<void> {
  while (!pred()) await new Promise((r) => setTimeout(r, 2));
}

/** Let queued socket I/O settle (a round trip through the event loop several times). */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

describe('client heartbeat', () => {
  it('idle mode (OKX): `ping` only after intervalMs of silence; inbound traffic postpones it; no pong -> watchdog reconnect', async () => {
    const timers = new FakeTimers();
    const srv = await server();
    const { t, states, frames } = transport({ url: srv.url, timers, random: () => 1, silenceTimeoutMs: 30_000, heartbeat: { intervalMs: 25_000, payload: 'ping' } });
    t.start();
    await until(() => t.connected && srv.sockets.length === 1);
    // traffic every 20 s (fake): never 25 s of silence, never a ping
    for (let i = 0; i < 3; i++) {
      timers.advance(20_000);
      srv.sockets[0]?.send('{"arg":{"channel":"index-tickers","instId":"BTC-USD"},"data":[]}');
      await until(() => frames.length === i + 1);
    }
    await settle();
    expect(srv.received).toEqual([]);
    expect(t.heartbeatsSent).toBe(0);
    // 25 s of silence -> exactly one ping
    timers.advance(25_000);
    await until(() => srv.received.length === 1);
    expect(srv.received).toEqual(['ping']);
    srv.sockets[0]?.send('pong');
    await until(() => frames.includes('pong'));
    expect(states.filter((s) => s.state === 'closed')).toEqual([]);
    // silence again, and the server never answers: ping at +25 s, watchdog past +30 s (checked every 1 s)
    timers.advance(25_000);
    await until(() => srv.received.length === 2);
    timers.advance(4_000);
    await settle();
    expect(states.filter((s) => s.state === 'closed')).toEqual([]);
    timers.advance(2_000);
    await until(() => states.some((s) => s.state === 'closed'));
    expect(states.find((s) => s.state === 'closed')?.reason).toMatch(/^watchdog/);
    expect(t.heartbeatsSent).toBe(2);
  });

  it('fixed mode (Bybit): a fresh payload every intervalMs whatever the traffic, stopped with the socket', async () => {
    const timers = new FakeTimers();
    const srv = await server();
    let n = 0;
    const { t } = transport({
      url: srv.url,
      timers,
      random: () => 1,
      silenceTimeoutMs: 0,
      heartbeat: { intervalMs: 20_000, payload: () => JSON.stringify({ req_id: String(++n), op: 'ping' }), mode: 'fixed' },
    });
    t.start();
    await until(() => t.connected && srv.sockets.length === 1);
    for (let i = 1; i <= 3; i++) {
      timers.advance(10_000);
      srv.sockets[0]?.send('{"topic":"tickers.BTCPERP"}');
      timers.advance(10_000);
      await until(() => srv.received.length === i);
    }
    expect(srv.received).toEqual(['{"req_id":"1","op":"ping"}', '{"req_id":"2","op":"ping"}', '{"req_id":"3","op":"ping"}']);
    await t.stop();
    expect(timers.pending).toBe(0);
  });
});
