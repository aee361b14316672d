/**
 * The pre-framed writes of the WebSocket transport (src/api/stream/rpc.ts, hub.ts `textFrame`) over real sockets on
 * 127.0.0.1: a `ws` server that negotiates permessage-deflate, one client with the extension (its notifications go
 * through `ws.send`, compressed) and one without (the shared frame written to its socket as is). Both receive the
 * same sequences and the same documents, parsed by `ws`'s own receiver (which checks the framing and the UTF-8). The
 * service itself negotiates no extension (test/integration/stream.test.ts); this covers the fallback path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { StreamHub } from '../../src/api/stream/hub.js';
import { serveWebSocket } from '../../src/api/stream/rpc.js';
import { realChainCache, type RealChainCache } from '../helpers/realChainCache.js';
import { StreamClient } from '../helpers/streamClient.js';

const CH = 'surface.DERIBIT.BTC-USD.SVI';
let market: RealChainCache;
let hub: StreamHub;
let wss: WebSocketServer;
let url: string;

beforeAll(async () => {
  market = realChainCache();
  hub = new StreamHub(market.cache, { limits: { statusCheckMs: 60_000 } });
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: { threshold: 0 } });
  await new Promise((r) => wss.once('listening', r));
  wss.on('connection', (s) => serveWebSocket(s, { hub, clock: market.cache.clock, keys: null, headerKeyId: null, ip: '127.0.0.1' }));
  url = `ws://127.0.0.1:${(wss.address() as { port: number }).port}`;
});

afterAll(async () => {
  hub.close();
  await new Promise((r) => wss.close(r));
});

describe('WebSocket framing', () => {
  it('with and without permessage-deflate: the same sequences and documents', async () => {
    // StreamClient's ws offers permessage-deflate (ws's default) and this server accepts it; the other client offers none
    const deflated = await StreamClient.connect(url);
    expect(deflated.ws.extensions).toMatch(/permessage-deflate/);
    const raw = new WebSocket(url, { perMessageDeflate: false });
    await new Promise((r) => raw.once('open', r));
    expect(raw.extensions).toBe('');
    const rawNotes: Array<{ channel: string; data: Record<string, unknown> }> = [];
    raw.on('message', (m) => {
      const x = JSON.parse(String(m));
      if (x.method === 'subscription') rawNotes.push(x.params);
    });
    raw.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'public/subscribe', params: { channels: [CH] } }));
    await deflated.request('public/subscribe', { channels: [CH] });
    const base = market.cache.getSurface('DERIBIT', market.pair, 'SVI')!;
    for (let i = 1; i <= 3; i++) market.cache.putSurface({ ...base, sequence: base.sequence + i });
    await deflated.until(() => deflated.of(CH).length >= 4, 20_000, '4 surfaces (deflate)');
    for (let i = 0; i < 200 && rawNotes.length < 4; i++) await new Promise((r) => setTimeout(r, 25));
    expect(rawNotes.map((n) => n.data.sequence)).toEqual([0, 1, 2, 3].map((i) => base.sequence + i));
    expect(deflated.of(CH).map((n) => n.data)).toEqual(rawNotes.map((n) => n.data));
    expect(rawNotes[3]!.data.spotPrice).toBe(base.forwardCurve.spot);
    raw.terminate();
    deflated.close();
  });
});
