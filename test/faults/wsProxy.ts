/**
 * A fault-injecting TCP proxy for WebSocket feeds, on 127.0.0.1 (test helper).
 *
 * Sits between the service's exchange adapter and an exchange simulator. Client -> server bytes
 * pass through untouched. Server -> client: the HTTP handshake passes through, then the byte stream
 * is cut into complete WebSocket frames (RFC 6455 sec. 5.2: server frames are unmasked; the
 * simulator does not negotiate permessage-deflate), so that the proxy can, at frame boundaries:
 * - `inject(text)`: send an extra text frame to every client (unknown channels, out-of-order or
 *   crossed ticks, ...);
 * - `rewrite`: transform (or drop, by returning null) every server text frame;
 * - `tap`: observe every server text frame.
 * `mode = 'http429'` answers every new connection's handshake with `HTTP/1.1 429 Too Many
 * Requests` and `Retry-After: retryAfterS` (RFC 9110 sec. 10.2.3; RFC 6585 sec. 4), as an exchange
 * that rate-limits connections does. `attempts` records when each connection arrived (ms).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

/** Encode one unmasked, final text frame (server -> client). */
export function textFrame(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const n = payload.length;
  let header: Buffer;
  if (n < 126) header = Buffer.from([0x81, n]);
  else if (n < 65536) {
    header = Buffer.alloc(4);
    header[0] = 0x81;
    header[1] = 126;
    header.writeUInt16BE(n, 2);
  } else {
    header = Buffer.alloc(10);
    header[0] = 0x81;
    header[1] = 127;
    header.writeBigUInt64BE(BigInt(n), 2);
  }
  return Buffer.concat([header, payload]);
}

interface Session {
  readonly client: Socket;
  readonly upstream: Socket;
  /** Bytes from the server not yet forwarded. */
  buf: Buffer;
  handshakeDone: boolean;
}

export class WsProxy {
  mode: 'pass' | 'http429' = 'pass';
  retryAfterS = 1;
  rewrite: ((text: string) => string | null) | null = null;
  tap: ((text: string) => void) | null = null;
  /** Arrival times (Date.now ms) of every client connection. */
  readonly attempts: number[] = [];
  private readonly sessions = new Set<Session>();
  private readonly rejected = new Set<Socket>();
  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly targetPort: number,
  ) {}

  /** Start a proxy to `127.0.0.1:targetPort` on a free port. */
  static async start(targetPort: number): Promise<WsProxy> {
    let proxy: WsProxy | null = null;
    const server = createServer((client) => proxy!.accept(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new WsProxy(server, (server.address() as { port: number }).port, targetPort);
    return proxy;
  }

  /** The WebSocket URL the adapter should use (path of Deribit's API). */
  url(path = '/ws/api/v2'): string {
    return `ws://127.0.0.1:${this.port}${path}`;
  }

  /** Open proxied sessions (handshake done). */
  sessionCount(): number {
    let n = 0;
    for (const s of this.sessions) if (s.handshakeDone && !s.client.destroyed) n++;
    return n;
  }

  /** Send a text frame to every client whose handshake is done. */
  inject(text: string): number {
    let n = 0;
    for (const s of this.sessions) {
      if (s.handshakeDone && !s.client.destroyed) {
        s.client.write(textFrame(text));
        n++;
      }
    }
    return n;
  }

  /** Cut every connection abruptly. */
  dropAll(): void {
    for (const s of this.sessions) {
      s.client.destroy();
      s.upstream.destroy();
    }
    this.sessions.clear();
  }

  async close(): Promise<void> {
    this.dropAll();
    for (const c of this.rejected) c.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    this.attempts.push(Date.now());
    client.on('error', () => undefined);
    if (this.mode === 'http429') {
      this.rejected.add(client);
      let head = '';
      client.on('data', (d) => {
        head += String(d);
        if (head.includes('\r\n\r\n') && client.writable) {
          client.end(`HTTP/1.1 429 Too Many Requests\r\nRetry-After: ${this.retryAfterS}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
        }
      });
      client.on('close', () => this.rejected.delete(client));
      return;
    }
    const upstream = connect(this.targetPort, '127.0.0.1');
    const s: Session = { client, upstream, buf: Buffer.alloc(0), handshakeDone: false };
    this.sessions.add(s);
    upstream.on('error', () => client.destroy());
    const end = () => {
      this.sessions.delete(s);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => this.fromServer(s, d));
  }

  private fromServer(s: Session, chunk: Buffer): void {
    s.buf = s.buf.length === 0 ? chunk : Buffer.concat([s.buf, chunk]);
    if (!s.handshakeDone) {
      const i = s.buf.indexOf('\r\n\r\n');
      if (i < 0) return;
      s.client.write(s.buf.subarray(0, i + 4));
      s.buf = s.buf.subarray(i + 4);
      s.handshakeDone = true;
    }
    for (;;) {
      if (s.buf.length < 2) return;
      const b0 = s.buf[0]!;
      const b1 = s.buf[1]!;
      let len = b1 & 0x7f;
      let off = 2;
      if (len === 126) {
        if (s.buf.length < 4) return;
        len = s.buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (s.buf.length < 10) return;
        len = Number(s.buf.readBigUInt64BE(2));
        off = 10;
      }
      if (b1 & 0x80) off += 4; // masked (not expected from a server)
      if (s.buf.length < off + len) return;
      const frame = s.buf.subarray(0, off + len);
      s.buf = s.buf.subarray(off + len);
      const opcode = b0 & 0x0f;
      const fin = (b0 & 0x80) !== 0;
      if (opcode === 1 && fin && !(b1 & 0x80)) {
        const text = frame.subarray(off).toString('utf8');
        this.tap?.(text);
        const out = this.rewrite ? this.rewrite(text) : text;
        if (out === null) continue;
        s.client.write(out === text ? frame : textFrame(out));
      } else {
        s.client.write(frame);
      }
    }
  }
}

/** A free TCP port on 127.0.0.1 (bound and released). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
