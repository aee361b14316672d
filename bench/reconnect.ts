/**
 * Benchmark 6, reconnect to fresh (issue 12 item 4): after the Deribit socket drops and comes back, how long
 * until REST serves data observed after the socket is back.
 *
 * Method. This process runs the Deribit simulator behind the frame-aware proxy of the fault tests
 * (test/faults/wsProxy.ts); the service runs in a child process as `npm start` runs it (simulated mode, all three
 * exchanges, its Deribit feed pointed at the proxy). Once every pair is ready, the proxy cuts the socket
 * (`dropAll`); the feed reconnects after its backoff. "Socket back" = the instant the proxy accepts the new
 * connection (before the WebSocket handshake: the figure errs long). This process then polls GET /surface
 * (DERIBIT BTC/USD SVI) every 5 ms; "fresh" = the first answer whose observationTimestamp (the newest exchange
 * timestamp in the calibrated chain; the simulator's clock is this machine's) is after the socket was back.
 * Repeated BENCH_RECONNECTS times (default 5; 2 with BENCH_QUICK=1), 5 s apart; median and max reported.
 * Limit: the REST poll round trip (median). Target: < 1 s.
 */
import { join } from 'node:path';
import { startDeribitSimulator } from '../adapters/simulator/deribitServer.js';
import { WsProxy, freePort } from '../test/faults/wsProxy.js';
import { QUICK, forkBuilt, median, nextMessage, sleep, stopChild, waitReady, type BenchRow } from './lib.js';


/** Run the reconnect benchmark; rows for the table. */
export async function runReconnect(): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const times = Number(process.env.BENCH_RECONNECTS ?? (QUICK ? 2 : 5));
  const simPort = await freePort();
  const sim = await startDeribitSimulator({ port: simPort, host: '127.0.0.1' });
  const proxy = await WsProxy.start(simPort);
  const notes: string[] = [];
  const child = forkBuilt('bench/serviceChild.ts', {
    MARKET_SOURCE: 'simulated',
    SOURCES: 'DERIBIT,OKX,BYBIT',
    SIM_HISTORY_HOURS: '0',
    BENCH_DERIBIT_URL: proxy.url(),
    RATE_LIMIT_MAX: '0',
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
  });
  try {
    const { url } = await nextMessage<{ url: string }>(child, (m) => m?.type === 'ready', 120_000);
    const surfaceUrl = `${url}/api/v1/global/data/surface?source=DERIBIT&baseCurrency=BTC&quoteCurrency=USD&volatilityModel=SVI`;
    await waitReady(url);
    const latencies: number[] = [];
    const rtts: number[] = [];
    for (let i = 0; i < times; i++) {
      await sleep(5_000);
      const attemptsBefore = proxy.attempts.length;
      proxy.dropAll();
      const backBy = Date.now() + 60_000;
      while (proxy.attempts.length === attemptsBefore) {
        if (Date.now() > backBy) throw new Error('the feed did not reconnect within 60 s');
        await sleep(1);
      }
      const backAt = proxy.attempts[attemptsBefore]!;
      for (;;) {
        const sentAt = Date.now();
        const r = await fetch(surfaceUrl);
        const text = await r.text();
        const at = Date.now();
        rtts.push(at - sentAt);
        const m = /"observationTimestamp":([0-9.e+]+)/.exec(text);
        if (r.status === 200 && m && Number(m[1]) * 1000 > backAt) {
          latencies.push(at - backAt);
          break;
        }
        if (at - backAt > 60_000) {
          notes.push(`reconnect ${i + 1}: no fresh surface within 60 s`);
          break;
        }
        await sleep(5);
      }
    }
    const med = median(latencies);
    const floor = median(rtts);
    return {
      notes,
      rows: [
        {
          section: 'reconnect',
          name: 'socket back -> fresh data via REST (Deribit BTC/USD SVI): median',
          value: med,
          unit: 'ms',
          limit: floor,
          limitName: 'REST poll round trip p50',
          ratio: floor / med,
          target: '< 1000 ms',
          met: Math.max(...latencies) < 1000,
          extra: { maxMs: Math.max(...latencies), reconnects: latencies.length, all: latencies.map((x) => Math.round(x)).join('/') },
        },
      ],
    };
  } finally {
    await stopChild(child);
    await proxy.close();
    await sim.close();
  }
}
