/**
 * A minimal WebSocket test client for the OKX and Bybit simulators (real socket on 127.0.0.1): keeps
 * every frame received (raw text and parsed JSON), sends text or JSON, waits for a frame matching a
 * predicate. Plus a JSON GET helper for their REST servers.
 */
import WebSocket from 'ws';
import { waitFor } from './helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Msg = any;

export class WsClient {
  readonly texts: string[] = [];
  readonly msgs: Msg[] = [];
  closed: { code: number; reason: string } | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const text = data.toString('utf8');
      this.texts.push(text);
      try {
        this.msgs.push(JSON.parse(text));
      } catch {
        /* text frames such as `pong` */
      }
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
    });
  }

  /** Connect and wait for the socket to open. */
  static async connect(url: string): Promise<WsClient> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new WsClient(ws);
  }

  send(o: unknown): void {
    this.ws.send(typeof o === 'string' ? o : JSON.stringify(o));
  }

  /** Wait until a message received after index `from` satisfies `pred`; returns it. */
  async next(pred: (m: Msg) => boolean, from = 0, timeoutMs = 10_000): Promise<Msg> {
    let found: Msg;
    await waitFor(() => {
      found = this.msgs.slice(from).find(pred);
      return found !== undefined;
    }, timeoutMs);
    return found;
  }

  /** Messages received so far matching `pred`. */
  all(pred: (m: Msg) => boolean): Msg[] {
    return this.msgs.filter(pred);
  }

  close(): void {
    this.ws.close();
  }
}

/** GET a URL and parse the JSON body. */
export async function getJson(url: string): Promise<{ status: number; body: Msg; headers: Headers }> {
  const res = await fetch(url);
  const text = await res.text();
  let body: Msg = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body, headers: res.headers };
}
