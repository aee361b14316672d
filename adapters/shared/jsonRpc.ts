/**
 * A JSON-RPC 2.0 client over one socket of a feed (Deribit API v2 speaks it over its WebSocket): requests
 * correlated by numeric id, a timeout per request, answers routed back by {@link JsonRpcClient.onResponse},
 * every pending request rejected when the socket goes ({@link JsonRpcClient.rejectAll}), and a paced variant
 * that retries on the server's "too many requests" error code.
 *
 * Source: JSON-RPC 2.0 specification (request `{jsonrpc, id, method, params}`, answer `{id, result}` or
 * `{id, error: {code, message}}`); docs.deribit.com "JSON-RPC" and "Rate limits" (error 10028).
 */
import { z } from 'zod';
import type { TrackedTimers } from './feedKit.js';

/** An error answer (`error: {code, message}`) to a JSON-RPC request. */
export class JsonRpcError extends Error {
  constructor(
    /** The request's method, e.g. `public/subscribe`. */
    readonly method: string,
    /** The server's error code (-1 for a malformed error object). */
    readonly code: number,
    message: string,
  ) {
    super(`${method}: ${code} ${message}`);
    this.name = 'JsonRpcError';
  }
}

const ErrorObjectSchema = z.looseObject({ code: z.number(), message: z.string() });

interface Pending {
  readonly method: string;
  readonly resolve: (result: unknown) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/** Options of {@link JsonRpcClient}. */
export interface JsonRpcClientOptions {
  /** Sends one text frame; false when the socket is not open. */
  readonly send: (text: string) => boolean;
  /** Reject a request without an answer after this long, ms. */
  readonly timeoutMs: number;
  /** The owner's timers (the rate-limit waits are tracked there). */
  readonly timers: TrackedTimers;
  /** The server's "too many requests" error code (Deribit: 10028); {@link JsonRpcClient.callPaced} retries it. */
  readonly rateLimitCode?: number;
  /** First wait after a rate-limited answer, ms, doubled per retry (3 retries). Default 1 000. */
  readonly rateLimitRetryMs?: number;
  /** Called before each rate-limit retry (a log line). */
  readonly onRateLimited?: (method: string, attempt: number) => void;
}

/** The JSON-RPC client (see the module docstring). */
export class JsonRpcClient {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  constructor(private readonly o: JsonRpcClientOptions) {}

  /**
   * One request; resolves with the answer's `result`.
   * @throws JsonRpcError on an error answer; Error on timeout (`no answer within N ms`) or when not connected
   */
  call(method: string, params: Record<string, unknown>): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const id = ++this.nextId;
      const timer = setTimeout(() => {
        if (this.pending.delete(id)) reject(new Error(`${method}: no answer within ${this.o.timeoutMs} ms`));
      }, this.o.timeoutMs);
      this.pending.set(id, { method, resolve, reject, timer });
      if (!this.o.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }))) {
        this.pending.delete(id);
        clearTimeout(timer);
        reject(new Error(`${method}: not connected`));
      }
    });
  }

  /** {@link call}, retried up to 3 times on `rateLimitCode`, after 1, 2, 4 x `rateLimitRetryMs`. */
  async callPaced(method: string, params: Record<string, unknown>): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.call(method, params);
      } catch (e) {
        if (!(e instanceof JsonRpcError) || e.code !== this.o.rateLimitCode || attempt >= 3) throw e;
        this.o.onRateLimited?.(method, attempt + 1);
        await this.o.timers.sleep((this.o.rateLimitRetryMs ?? 1_000) * 2 ** attempt);
      }
    }
  }

  /**
   * `method` with `{channels: batch}` for each batch of at most `batchSize` items, `pauseMs` apart
   * ({@link callPaced}); `onResult` sees each batch and its result. Deribit's public/subscribe pacing.
   */
  async callInBatches(method: string, items: readonly string[], batchSize: number, pauseMs: number, onResult: (batch: string[], result: unknown) => void): Promise<void> {
    for (let i = 0; i < items.length; i += batchSize) {
      if (i > 0) await this.o.timers.sleep(pauseMs);
      const batch = items.slice(i, i + batchSize);
      onResult(batch, await this.callPaced(method, { channels: batch }));
    }
  }

  /**
   * Routes a parsed frame that is an answer (`result` or `error`, no `method`) to its request. Returns
   * false for any other frame; `'unmatched'` for an answer whose id is not pending.
   */
  onResponse(m: Record<string, unknown>): boolean | 'unmatched' {
    if (!('result' in m || 'error' in m) || m['method'] !== undefined) return false;
    const id = m['id'];
    const p = typeof id === 'number' ? this.pending.get(id) : undefined;
    if (!p) return 'unmatched';
    this.pending.delete(id as number);
    clearTimeout(p.timer);
    if ('error' in m) {
      const e = ErrorObjectSchema.safeParse(m['error']);
      p.reject(e.success ? new JsonRpcError(p.method, e.data.code, e.data.message) : new JsonRpcError(p.method, -1, 'malformed error'));
    } else {
      p.resolve(m['result']);
    }
    return true;
  }

  /** Reject every pending request (`<method>: connection closed (<reason>)`). */
  rejectAll(reason: string): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new Error(`${p.method}: connection closed (${reason})`));
      this.pending.delete(id);
    }
  }
}
