/**
 * A WebSocket JSON-RPC client of the streaming API for tests (the `ws` package, a real socket on 127.0.0.1):
 * requests with ids, every notification kept in arrival order, the close code and reason.
 */
import WebSocket from 'ws';

/** A notification `params` as received. */
export interface Note {
  readonly channel: string;
  readonly data: Record<string, any>;
}

export class StreamClient {
  readonly notes: Note[] = [];
  readonly other: any[] = [];
  private readonly waiting = new Map<number | string, (m: any) => void>();
  private nextId = 1;
  closed: { code: number; reason: string } | null = null;
  private listeners: Array<() => void> = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (raw) => {
      const m = JSON.parse(String(raw));
      if (m.method === 'subscription') this.notes.push(m.params);
      else if (m.id !== undefined && m.id !== null && this.waiting.has(m.id)) {
        this.waiting.get(m.id)!(m);
        this.waiting.delete(m.id);
      } else this.other.push(m);
      for (const l of this.listeners) l();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: String(reason) };
      for (const l of this.listeners) l();
    });
  }

  /** Connect to `url` (ws://...), optionally with headers. */
  static async connect(url: string, headers: Record<string, string> = {}): Promise<StreamClient> {
    const ws = new WebSocket(url, { headers });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`handshake refused: HTTP ${res.statusCode}`)));
    });
    return new StreamClient(ws);
  }

  /** Send a request and wait for its response (the whole JSON-RPC object). */
  request(method: string, params?: unknown, timeoutMs = 20_000): Promise<any> {
    const id = this.nextId++;
    return this.requestRaw(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }), id, timeoutMs);
  }

  /** Send raw text expecting a response with `id` (null-id errors are awaited in `other`). */
  requestRaw(text: string | Buffer, id: number | string | null, timeoutMs = 20_000): Promise<any> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no response to ${String(text).slice(0, 100)}`)), timeoutMs);
      if (id === null) {
        const before = this.other.length;
        const check = () => {
          if (this.other.length > before) {
            clearTimeout(t);
            this.listeners = this.listeners.filter((l) => l !== check);
            resolve(this.other[before]);
          }
        };
        this.listeners.push(check);
      } else {
        this.waiting.set(id, (m) => {
          clearTimeout(t);
          resolve(m);
        });
      }
      this.ws.send(text);
    });
  }

  /** Notifications of `channel`. */
  of(channel: string): Note[] {
    return this.notes.filter((n) => n.channel === channel);
  }

  /** Wait until `check()` is truthy (re-checked at every message), or fail after `timeoutMs`. */
  until<T>(check: () => T, timeoutMs: number, what: string): Promise<NonNullable<T>> {
    return new Promise((resolve, reject) => {
      const done = () => {
        const v = check();
        if (v) {
          clearTimeout(t);
          this.listeners = this.listeners.filter((l) => l !== done);
          resolve(v as NonNullable<T>);
        }
      };
      const t = setTimeout(() => {
        this.listeners = this.listeners.filter((l) => l !== done);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.listeners.push(done);
      done();
    });
  }

  close(): void {
    this.ws.terminate();
  }
}
