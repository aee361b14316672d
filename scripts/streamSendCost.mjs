// Per-send cost of one notification written to N WebSocket clients on 127.0.0.1 (the stream hub's hot loop):
// (a) ws socket.send(shared UTF-8 payload, {binary:false}) per client, each connection corked (the hub before);
// (b) one pre-framed Buffer (RFC 6455 header + payload, built once) written to each raw net.Socket, corked.
// Only the synchronous send loop is timed (it includes the kernel's loopback copy); the clients read between rounds.
// Usage: node scripts/streamSendCost.mjs [clients=300] [rounds=200] [bytes=8500]; figures: docs/operations.md "Streaming API".
import { WebSocketServer, WebSocket } from 'ws';
import { performance } from 'node:perf_hooks';

const N = Number(process.argv[2] ?? 300), ROUNDS = Number(process.argv[3] ?? 200), BYTES = Number(process.argv[4] ?? 8500);
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await new Promise((r) => wss.once('listening', r));
const url = `ws://127.0.0.1:${wss.address().port}`;
const servers = [];
wss.on('connection', (s) => servers.push(s));
let received = 0;
const clients = await Promise.all(Array.from({ length: N }, () => new Promise((res) => {
  const c = new WebSocket(url, { perMessageDeflate: false });
  c.on('message', () => received++);
  c.once('open', () => res(c));
})));
while (servers.length < N) await new Promise((r) => setTimeout(r, 10));
const json = `{"jsonrpc":"2.0","method":"subscription","params":{"channel":"surface.DERIBIT.BTC-USD.SVI","data":{"x":"${'7'.repeat(BYTES - 120)}","publishTimestamp":1}}}`;
const payload = Buffer.from(json);
function frame(p) {
  const h = p.length > 65535 ? 10 : p.length > 125 ? 4 : 2;
  const b = Buffer.allocUnsafe(h + p.length);
  b[0] = 0x81;
  if (h === 2) b[1] = p.length; else if (h === 4) { b[1] = 126; b.writeUInt16BE(p.length, 2); } else { b[1] = 127; b.writeUInt32BE(0, 2); b.writeUInt32BE(p.length, 6); }
  p.copy(b, h);
  return b;
}
const ways = {
  'ws send(shared payload)': () => { for (const s of servers) { s._socket.cork(); s.send(payload, { binary: false }); s._socket.uncork(); } },
  'raw write(pre-framed)': () => { const f = frame(payload); for (const s of servers) { s._socket.cork(); s._socket.write(f); s._socket.uncork(); } },
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
