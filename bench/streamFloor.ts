/**
 * The floor under the streaming goal (issue 23; part of `BENCH_ONLY=streaming`): what the kernel alone charges a
 * process for writing the simulated default's notifications to 1,000 WebSocket clients on 127.0.0.1, measured with a
 * server that does NOTHING else. The server (a child process: its CPU is its own) runs `ws` for the handshakes and
 * then, for each publication event, writes one Buffer holding two pre-framed text frames (a pair's surface and its IV
 * summary, as the service's hub frames them: src/api/stream/hub.ts textFrame) to every client's socket, corked: no
 * JSON, no queue, no conflation, no feeds, no calibration. The clients (this process, `ws`, no JSON parse) only
 * count what they receive.
 *
 * Events: `pairs` pairs each publishing `eventsPerS / pairs` times a second at its own random phase (the nine pairs
 * recalibrate independently). `windowMs` 0 writes each event at once (the latency a push API wants); a window > 0
 * writes the events of each window together (one write per client per window that had an event), the batching that
 * trades latency for fewer writes.
 *
 * On loopback the receive path (TCP/IP input, the socket wake-up) runs in the sender's system call, so the server's
 * CPU holds both ends of the kernel's work; the benchmark measures the service in the same way (its clients on
 * the same machine). Usage alone: `npx tsx bench/streamFloor.ts [clients=1000] [eventsPerS=29.75] [frameBytes=10800]
 * [windowMs=0] [durationS=20]`.
 */
import { fork } from 'node:child_process';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import WebSocket, { WebSocketServer } from 'ws';
import { notificationText, textFrame } from '../src/api/stream/hub.js';
import { nextMessage } from './lib.js';

/** What one floor run writes. */
export interface FloorLoad {
  readonly clients: number;
  /** Publication events per second over all pairs (each: one surface and one summary notification per client). */
  readonly eventsPerS: number;
  /** Bytes of each of the two notifications of an event (the JSON text). */
  readonly notificationBytes: number;
  readonly pairs: number;
  /** 0: each event written at once; > 0: one write per client per window of this many ms. */
  readonly windowMs: number;
  readonly durationS: number;
}

/** What one floor run measured. */
export interface FloorResult {
  /** The server process's CPU (user + system, every thread), cores. */
  readonly serverCores: number;
  readonly serverSystemCores: number;
  /** The server's main-thread busy fraction (event-loop utilization: where the writes run). */
  readonly serverMainBusy: number;
  readonly eventsPerS: number;
  readonly writesPerS: number;
  /** Writes skipped because a socket held more than 1 MiB unsent (a client not keeping up). */
  readonly skipped: number;
  /** Notifications received per second by all clients. */
  readonly receivedPerS: number;
}

interface StartMessage {
  readonly type: 'start';
  readonly load: FloorLoad;
}

/** The server side (the child): handshakes, then the schedule of {@link FloorLoad}, then its CPU by IPC. */
async function serve(): Promise<void> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const sockets: Socket[] = [];
  wss.on('connection', (ws) => sockets.push((ws as unknown as { _socket: Socket })._socket));
  process.send!({ type: 'url', url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}` });
  const { load } = await new Promise<StartMessage>((r) => process.once('message', (m) => r(m as StartMessage)));
  while (sockets.length < load.clients) await new Promise((r) => setTimeout(r, 20));
  const body = (channel: string) => notificationText(channel, `{"x":"${'7'.repeat(Math.max(0, load.notificationBytes - 110))}"}`);
  const frame = Buffer.concat([textFrame(body('surface.DERIBIT.BTC-USD.SVI')), textFrame(body('iv_summary.DERIBIT.BTC-USD.SVI'))]);
  let events = 0;
  let writes = 0;
  let skipped = 0;
  let pending = 0;
  const write = (k: number): void => {
    const buf = k === 1 ? frame : Buffer.concat(Array.from({ length: k }, () => frame));
    for (const s of sockets) {
      if (s.writableLength > 1 << 20) {
        skipped++;
        continue;
      }
      s.cork();
      s.write(buf);
      s.uncork();
      writes++;
    }
  };
  const periodMs = (1000 * load.pairs) / load.eventsPerS;
  const timers: NodeJS.Timeout[] = [];
  const cpu0 = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  for (let p = 0; p < load.pairs; p++) {
    timers.push(
      setTimeout(() => {
        timers.push(
          setInterval(() => {
            events++;
            if (load.windowMs > 0) pending++;
            else write(1);
          }, periodMs),
        );
      }, Math.random() * periodMs),
    );
  }
  if (load.windowMs > 0) {
    timers.push(
      setInterval(() => {
        if (pending === 0) return;
        const k = pending;
        pending = 0;
        write(k);
      }, load.windowMs),
    );
  }
  await new Promise((r) => setTimeout(r, load.durationS * 1000));
  for (const t of timers) clearInterval(t);
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  const dt = (performance.now() - t0) / 1000;
  process.send!({ type: 'result', serverCores: (cpu.user + cpu.system) / 1e6 / dt, serverSystemCores: cpu.system / 1e6 / dt, serverMainBusy: elu.utilization, eventsPerS: events / dt, writesPerS: writes / dt, skipped });
  await new Promise((r) => setTimeout(r, 500));
  process.exit(0);
}

/** One floor run: a server child with `load`, its clients in this process. */
export async function runStreamFloor(load: FloorLoad): Promise<FloorResult> {
  const child = fork(fileURLToPath(import.meta.url), ['serve'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const clients: WebSocket[] = [];
  try {
    const { url } = await nextMessage<{ url: string }>(child, (m) => m?.type === 'url', 60_000);
    let received = 0;
    let counting = false;
    for (let i = 0; i < load.clients; i += 50) {
      const batch = Array.from({ length: Math.min(50, load.clients - i) }, () => {
        const ws = new WebSocket(url, { perMessageDeflate: false });
        ws.on('message', () => {
          if (counting) received++;
        });
        clients.push(ws);
        return new Promise<void>((resolve, reject) => {
          ws.once('open', () => resolve());
          ws.once('error', reject);
        });
      });
      await Promise.all(batch);
    }
    const done = nextMessage<Omit<FloorResult, 'receivedPerS'>>(child, (m) => m?.type === 'result', (load.durationS + 60) * 1000);
    counting = true;
    const t0 = performance.now();
    child.send({ type: 'start', load } satisfies StartMessage);
    const { serverCores, serverSystemCores, serverMainBusy, eventsPerS, writesPerS, skipped } = await done;
    counting = false;
    return { serverCores, serverSystemCores, serverMainBusy, eventsPerS, writesPerS, skipped, receivedPerS: received / ((performance.now() - t0) / 1000) };
  } finally {
    for (const ws of clients) ws.terminate();
    child.kill();
  }
}

if (process.argv[2] === 'serve') {
  await serve();
} else if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [clients = 1000, eventsPerS = 29.75, notificationBytes = 10800, windowMs = 0, durationS = 20] = process.argv.slice(2).map(Number);
  const load: FloorLoad = { clients, eventsPerS, notificationBytes, pairs: 9, windowMs, durationS };
  console.log(JSON.stringify({ load, measured: await runStreamFloor(load) }));
}
