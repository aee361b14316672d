/**
 * Test helpers for the simulator tests: a minimal JSON-RPC WebSocket client (real socket on
 * 127.0.0.1) and an INDEPENDENT Black-76 reference built on @stdlib's normal CDF (not the
 * simulator's own normCdf), for checking the simulator's numbers.
 */
import normalCdf from '@stdlib/stats-base-dists-normal-cdf';
import WebSocket from 'ws';

/** Standard normal CDF from @stdlib (reference implementation). */
export function N(x: number): number {
  return normalCdf(x, 0, 1);
}

/** Undiscounted Black-76 price (reference). Source: Black (1976) eqs. (9)-(10) with r = 0. */
export function refBlack76(type: 'call' | 'put', F: number, K: number, T: number, sigma: number): number {
  const sd = sigma * Math.sqrt(T);
  const d1 = Math.log(F / K) / sd + sd / 2;
  const d2 = d1 - sd;
  return type === 'call' ? F * N(d1) - K * N(d2) : K * N(-d2) - F * N(-d1);
}

/** Forward Black d1 (reference). */
export function refD1(F: number, K: number, T: number, sigma: number): number {
  const sd = sigma * Math.sqrt(T);
  return Math.log(F / K) / sd + sd / 2;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Msg = any;

/** A JSON-RPC client over a real WebSocket. Every received frame is kept in `frames` (raw text). */
export class RpcClient {
  readonly frames: string[] = [];
  readonly notifications: Msg[] = [];
  readonly heartbeats: Msg[] = [];
  closed: { code: number; reason: string } | null = null;
  private id = 0;
  private readonly pending = new Map<number, (m: Msg) => void>();

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const text = data.toString('utf8');
      this.frames.push(text);
      let m: Msg;
      try {
        m = JSON.parse(text);
      } catch {
        return;
      }
      if (m && typeof m === 'object' && typeof m.id === 'number' && this.pending.has(m.id)) {
        this.pending.get(m.id)!(m);
        this.pending.delete(m.id);
      } else if (m?.method === 'subscription') this.notifications.push(m);
      else if (m?.method === 'heartbeat') this.heartbeats.push(m);
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
    });
  }

  /** Connect and wait for the socket to open. */
  static async connect(url: string): Promise<RpcClient> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new RpcClient(ws);
  }

  /** Send a request and wait for its response (rejects after `timeoutMs`). */
  call(method: string, params: unknown = {}, timeoutMs = 10_000): Promise<Msg> {
    const id = ++this.id;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`timeout waiting for ${method}`));
      }, timeoutMs);
      this.pending.set(id, (m) => {
        clearTimeout(t);
        resolve(m);
      });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /** Send raw text (for malformed-request tests) and wait for the next frame that is not a notification. */
  async raw(text: string, timeoutMs = 10_000): Promise<Msg> {
    const before = this.frames.length;
    this.ws.send(text);
    await waitFor(() => this.frames.slice(before).some((f) => !f.includes('"method":"subscription"')), timeoutMs);
    return JSON.parse(this.frames.slice(before).find((f) => !f.includes('"method":"subscription"'))!);
  }

  close(): void {
    this.ws.close();
  }
}

/** Poll `cond` every 10 ms until true; rejects after `timeoutMs` (a generous wait, not a timing assert). */
export async function waitFor(cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error('waitFor: condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Sleep. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
