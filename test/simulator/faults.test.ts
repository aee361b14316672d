/**
 * Fault hooks of the Deribit simulator, over a real WebSocket on 127.0.0.1: connection and
 * subscription counts, dropped connections, silence, rejected subscriptions, garbage frames.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startDeribitSimulator, type DeribitSimulator } from '../../adapters/simulator/deribitServer.js';
import { RpcClient, sleep, waitFor } from './helpers.js';
import { testClockMs } from '../helpers/simClock.js';

let sim: DeribitSimulator | null = null;
let clients: RpcClient[] = [];
afterEach(async () => {
  for (const c of clients) c.close();
  clients = [];
  await sim?.close();
  sim = null;
});

async function setup(n = 1, opts: Parameters<typeof startDeribitSimulator>[0] = {}): Promise<{ sim: DeribitSimulator; cs: RpcClient[] }> {
  sim = await startDeribitSimulator({ port: 0, clock: testClockMs, ...opts });
  const cs: RpcClient[] = [];
  for (let i = 0; i < n; i++) cs.push(await RpcClient.connect(sim.url));
  clients.push(...cs);
  return { sim, cs };
}

describe('Deribit simulator faults', () => {
  it('counts connections and subscriptions', async () => {
    const { sim, cs } = await setup(2);
    await waitFor(() => sim.faults.connections() === 2);
    expect(sim.faults.subscriptions()).toBe(0);
    await cs[0]!.call('public/subscribe', { channels: ['ticker.BTC-PERPETUAL.100ms', 'deribit_price_index.btc_usd', 'ticker.NOPE.100ms'] });
    await cs[1]!.call('public/subscribe', { channels: ['ticker.BTC-PERPETUAL.100ms'] });
    expect(sim.faults.subscriptions()).toBe(3);
    await cs[0]!.call('public/unsubscribe', { channels: ['deribit_price_index.btc_usd'] });
    expect(sim.faults.subscriptions()).toBe(2);
    cs[1]!.close();
    await waitFor(() => sim.faults.connections() === 1);
    expect(sim.faults.subscriptions()).toBe(1);
    expect((await cs[0]!.call('public/unsubscribe_all')).result).toBe('ok');
    expect(sim.faults.subscriptions()).toBe(0);
  });

  it('dropAllConnections closes every socket abruptly (1006); new connections are accepted afterwards', async () => {
    const { sim, cs } = await setup(2);
    await cs[0]!.call('public/subscribe', { channels: ['ticker.ETH-PERPETUAL.100ms'] });
    sim.faults.dropAllConnections();
    await waitFor(() => cs.every((c) => c.closed !== null));
    for (const c of cs) expect(c.closed!.code).toBe(1006);
    await waitFor(() => sim.faults.connections() === 0);
    expect(sim.faults.subscriptions()).toBe(0);
    const again = await RpcClient.connect(sim.url);
    clients.push(again);
    expect((await again.call('public/test')).result.version).toEqual(expect.any(String));
  });

  it('silence(ms) sends nothing and ignores requests without closing, then resumes', async () => {
    const { sim, cs } = await setup(1, { heartbeatMsPerS: 20 });
    const c = cs[0]!;
    c.ws.on('message', (data: Buffer) => {
      if (data.toString().includes('"test_request"')) void c.call('public/test').catch(() => undefined);
    });
    await c.call('public/set_heartbeat', { interval: 10 });
    await c.call('public/subscribe', { channels: ['ticker.BTC-PERPETUAL.100ms', 'deribit_price_index.btc_usd'] });
    await waitFor(() => c.notifications.length >= 4);
    sim.faults.silence(1500);
    await sleep(150); // let frames already in flight arrive
    const frames = c.frames.length;
    const ignored = c.call('public/test', {}, 3000).then(
      () => 'answered',
      () => 'ignored',
    );
    await sleep(1000);
    expect(c.frames.length).toBe(frames); // nothing at all: no notifications, responses or heartbeats
    expect(c.closed).toBeNull();
    expect(await ignored).toBe('ignored');
    await waitFor(() => c.notifications.length > 0 && c.frames.length > frames);
    expect((await c.call('public/test')).result.version).toEqual(expect.any(String));
    expect(c.closed).toBeNull();
  });

  it('rejectSubscriptions answers public/subscribe with a JSON-RPC error while on', async () => {
    const { sim, cs } = await setup(1);
    sim.faults.rejectSubscriptions(true);
    const r = await cs[0]!.call('public/subscribe', { channels: ['ticker.BTC-PERPETUAL.100ms'] });
    expect(r).toMatchObject({ jsonrpc: '2.0', id: expect.any(Number), error: { code: 10028, message: 'too_many_requests' }, testnet: false });
    expect(r).not.toHaveProperty('result');
    expect(sim.faults.subscriptions()).toBe(0);
    sim.faults.rejectSubscriptions(false);
    expect((await cs[0]!.call('public/subscribe', { channels: ['ticker.BTC-PERPETUAL.100ms'] })).result).toEqual(['ticker.BTC-PERPETUAL.100ms']);
  });

  it('malformedFrames(n) sends n frames that are not valid JSON-RPC messages to every connection', async () => {
    const { sim, cs } = await setup(2);
    const before = cs.map((c) => c.frames.length);
    sim.faults.malformedFrames(7);
    await waitFor(() => cs.every((c, i) => c.frames.length >= before[i]! + 7));
    for (const [i, c] of cs.entries()) {
      const got = c.frames.slice(before[i]!, before[i]! + 7);
      let unparsable = 0;
      for (const f of got) {
        let m: unknown;
        try {
          m = JSON.parse(f);
        } catch {
          unparsable++;
          continue;
        }
        // Parsable ones are not usable messages: not an object with a known channel's data object.
        const ok = typeof m === 'object' && m !== null && !Array.isArray(m) && typeof (m as { params?: { data?: unknown } }).params?.data === 'object';
        expect(ok).toBe(false);
      }
      expect(unparsable).toBeGreaterThanOrEqual(4);
    }
    // The connection still works.
    expect((await cs[0]!.call('public/test')).result.version).toEqual(expect.any(String));
  });
});
