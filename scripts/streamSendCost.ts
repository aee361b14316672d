// Per-send cost of one notification written to N WebSocket clients on 127.0.0.1 (the stream hub's hot loop):
// (a) ws socket.send(shared UTF-8 payload, {binary:false}) per client, each connection corked (the hub before);
// (b) one pre-framed Buffer (RFC 6455 header + payload, built once) written to each raw net.Socket, corked.
// Only the synchronous send loop is timed (it includes the kernel's loopback copy); the clients read between rounds.
// The notification and its frame are the hub's own (src/api/stream/hub.ts notificationText, textFrame).
// Usage: npx tsx scripts/streamSendCost.ts [clients=300] [rounds=200] [bytes=8500]; figures: docs/operations.md "Streaming API".
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { WebSocketServer, WebSocket } from 'ws';
import { notificationText, textFrame } from '../src/api/stream/hub.js';

/** A server-side ws connection with its net.Socket (ws keeps it in `_socket`). */
type ServerSocket = WebSocket & { _socket: Socket };

const N = Number(process.argv[2] ?? 300), ROUNDS = Number(process.argv[3] ?? 200), BYTES = Number(process.argv[4] ?? 8500);
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await new Promise<void>((r) => wss.once('listening', () => r()));
const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
const servers: ServerSocket[] = [];
wss.on('connection', (s) => servers.push(s as ServerSocket));
let received = 0;
const clients = await Promise.all(Array.from({ length: N }, () => new Promise<WebSocket>((res) => {
  const c = new WebSocket(url, { perMessageDeflate: false });
  c.on('message', () => received++);
  c.once('open', () => res(c));
})));
while (servers.length < N) await new Promise((r) => setTimeout(r, 10));
const text = notificationText('surface.DERIBIT.BTC-USD.SVI', `{"x":"${'7'.repeat(Math.max(0, BYTES - 120))}","publishTimestamp":1}`);
const payload = Buffer.from(text);
const ways: Record<string, () => void> = {
  'ws send(shared payload)': () => { for (const s of servers) { s._socket.cork(); s.send(payload, { binary: false }); s._socket.uncork(); } },
  'raw write(pre-framed)': () => { const f = textFrame(text); for (const s of servers) { s._socket.cork(); s._socket.write(f); s._socket.uncork(); } },
};
for (const pass of [1, 2]) for (const [name, fn] of Object.entries(ways)) {
  let t = 0;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now(); fn(); t += performance.now() - t0;
    while (servers.some((s) => s.bufferedAmount > 0)) await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 2));
  }
  const cpu = process.cpuUsage(cpu0);
  if (pass === 2) console.log(`${name}: ${(t * 1000 / (ROUNDS * N)).toFixed(2)} us per send (sync loop), ${N} clients x ${ROUNDS} rounds of ${payload.length} B; process CPU incl. clients ${((cpu.user + cpu.system) / (ROUNDS * N)).toFixed(2)} us per message`);
}
console.log('received', received);
for (const c of clients) c.terminate();
wss.close();
