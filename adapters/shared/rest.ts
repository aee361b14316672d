/**
 * The REST side shared by the OKX and Bybit feeds: a paced GET client with a timeout, abort on
 * close, Retry-After on rate limits and bounded retries ({@link PacedRestClient}); a bootstrap that
 * retries with a doubling delay ({@link retryUntilDone}); and backwards paging of a time-ordered
 * history ({@link pageBackwards}). Each exchange's error payload parsing stays in its adapter
 * (`checkBody`, throwing a {@link RestError}; adapters/shared/exchangeFeed.ts builds the client).
 *
 * Sources: RFC 9110 sec. 10.2.3 (Retry-After: delay-seconds or HTTP-date, parsed by
 * transport.ts `parseRetryAfterMs`); OKX v5 "Rate limit" and Bybit v5 "Rate limit rules" (both
 * answer an over-limit IP with HTTP 429, Bybit also with 403); tardis-node realtimefeed.ts (honour
 * Retry-After on 429) per docs/architecture.md.
 */
import type { TrackedTimers } from './feedKit.js';
import { parseRetryAfterMs } from './transport.js';

/**
 * A failed REST request: an HTTP error (`code` = `HTTP <status>`, `status` set), a body that is not
 * JSON (`code` = `invalid-json`) or an exchange-level error (`code` = the exchange's code, parsed by
 * the adapter). `retryAfterMs` (ms) is set when the server asked to wait (rate limit); the
 * {@link PacedRestClient} then retries after that delay.
 */
export class RestError extends Error {
  constructor(
    /** Request path, e.g. `/api/v5/public/instruments`. */
    readonly path: string,
    /** `HTTP <status>`, `invalid-json`, or the exchange's error code as a string. */
    readonly code: string,
    message: string,
    /** Server-requested delay (HTTP 429 Retry-After, or the exchange's rate-limit code), ms; null otherwise. */
    readonly retryAfterMs: number | null = null,
    /** HTTP status of an HTTP error; null for `invalid-json` and exchange-level errors. */
    readonly status: number | null = null,
  ) {
    super(`${path}: ${code} ${message}`);
    this.name = 'RestError';
  }
}

/** Options of {@link PacedRestClient}. */
export interface PacedRestClientOptions {
  /** REST base URL; trailing slashes are removed. */
  readonly baseUrl: string;
  /** fetch implementation (the global fetch, or a test double). */
  readonly fetch: typeof fetch;
  /** Minimum spacing between the starts of two requests, ms (the exchange's rate limit). */
  readonly pacingMs: number;
  /** Abort a request after this long, ms. */
  readonly timeoutMs: number;
  /** The owner's timers: pacing and Retry-After waits are tracked there, so the owner's stop() clears them. */
  readonly timers: TrackedTimers;
  /** HTTP statuses that mean "rate limited" (their Retry-After is honoured), e.g. [429]. */
  readonly rateLimitStatuses: readonly number[];
  /** Wait after a rate-limit status without a usable Retry-After header, ms. */
  readonly defaultRetryAfterMs: number;
  /** Retries of one request that failed with a {@link RestError} carrying `retryAfterMs`. Default 2. */
  readonly maxRetries?: number;
  /** Builds the error (a {@link RestError}) for HTTP and invalid-JSON failures. */
  readonly error: (path: string, code: string, message: string, retryAfterMs: number | null, status: number | null) => RestError;
  /** Checks a parsed body; throws a {@link RestError} for an exchange-level error. */
  readonly checkBody: (body: unknown, path: string) => void;
}

/**
 * A paced GET client. Requests are spaced by `pacingMs` (one client = one pacing clock); each is
 * aborted after `timeoutMs`; a {@link RestError} with `retryAfterMs` is retried after that delay, at
 * most `maxRetries` times. {@link PacedRestClient.close} aborts requests in flight; later (or
 * pending) requests then fail with `Error('stopped')`.
 */
export class PacedRestClient {
  private readonly baseUrl: string;
  private readonly maxRetries: number;
  private readonly aborts = new Set<AbortController>();
  private lastAt = 0;
  private closed = false;

  constructor(private readonly o: PacedRestClientOptions) {
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.maxRetries = o.maxRetries ?? 2;
  }

  /**
   * GET `baseUrl + path` with query `params` (paced, retried on rate limits); resolves to the parsed
   * JSON body that passed `checkBody`.
   * @throws RestError on HTTP, JSON or exchange errors; Error('stopped') after close(); fetch's abort error on timeout
   */
  async get(path: string, params: Record<string, string>): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      const wait = this.lastAt + this.o.pacingMs - Date.now();
      if (wait > 0) await this.o.timers.sleep(wait);
      this.lastAt = Date.now();
      if (this.closed) throw new Error('stopped');
      try {
        return await this.once(path, params);
      } catch (e) {
        if (e instanceof RestError && e.retryAfterMs !== null && attempt < this.maxRetries && !this.closed) {
          await this.o.timers.sleep(e.retryAfterMs);
          continue;
        }
        throw e;
      }
    }
  }

  /** Abort the requests in flight; every later request fails with Error('stopped'). Idempotent. */
  close(): void {
    this.closed = true;
    for (const a of this.aborts) a.abort();
  }

  private async once(path: string, params: Record<string, string>): Promise<unknown> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    const ac = new AbortController();
    this.aborts.add(ac);
    const timer = setTimeout(() => ac.abort(), this.o.timeoutMs);
    try {
      const res = await this.o.fetch(url, { signal: ac.signal, headers: { accept: 'application/json' } });
      const text = await res.text();
      if (!res.ok) {
        const ra = this.o.rateLimitStatuses.includes(res.status)
          ? (parseRetryAfterMs(res.headers.get('retry-after') ?? undefined, Date.now()) ?? this.o.defaultRetryAfterMs)
          : null;
        throw this.o.error(path, `HTTP ${res.status}`, text.slice(0, 200), ra, res.status);
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw this.o.error(path, 'invalid-json', text.slice(0, 200), null, null);
      }
      this.o.checkBody(body, path);
      return body;
    } finally {
      clearTimeout(timer);
      this.aborts.delete(ac);
    }
  }
}

/** Options of {@link retryUntilDone}. */
export interface RetryUntilDoneOptions {
  /** First wait after a failure, ms; doubled after each further failure up to `maxDelayMs`. */
  readonly firstDelayMs: number;
  /** Largest wait, ms. Default 60 000. */
  readonly maxDelayMs?: number;
  /** Timers the waits are tracked on (cleared by the owner's stop()). */
  readonly timers: TrackedTimers;
  /** True once the owner stopped: no more attempts, no more reports. */
  readonly isStopped: () => boolean;
  /** Called after each failure (not after stop) with the error and the wait before the next attempt, ms. */
  readonly onFailure: (err: unknown, retryInMs: number) => void;
}

/**
 * Runs `task` until it succeeds or the owner stops: after a failure, waits `firstDelayMs`, then
 * twice that, ... up to `maxDelayMs` (a feed's REST bootstrap: instruments, then funding history).
 * Never rejects.
 */
export async function retryUntilDone(task: () => Promise<void>, o: RetryUntilDoneOptions): Promise<void> {
  const maxDelayMs = o.maxDelayMs ?? 60_000;
  for (let delay = o.firstDelayMs; ; delay = Math.min(delay * 2, maxDelayMs)) {
    try {
      await task();
      return;
    } catch (e) {
      if (o.isStopped()) return;
      o.onFailure(e, delay);
      await o.timers.sleep(delay);
      if (o.isStopped()) return;
    }
  }
}

/** Options of {@link pageBackwards}. */
export interface PageBackwardsOptions {
  /** At most this many pages. */
  readonly maxPages: number;
  /** Items per page asked for; a shorter page is the last. */
  readonly pageLimit: number;
  /** Stop once a page reaches back to this time (Unix ms). */
  readonly startMs: number;
  /** Fetches one page: the newest items older than `oldestMs` (the oldest time seen so far), or the newest page when undefined. */
  readonly fetchPage: (oldestMs: number | undefined) => Promise<unknown[]>;
  /** An item's time, Unix ms (non-finite or <= 0 when unknown). */
  readonly timeOf: (item: unknown) => number;
}

/**
 * Reads a newest-first history backwards, page by page, and returns every item read: stops after a
 * short page, a page without any item time, a page reaching back to `startMs`, or `maxPages` pages.
 * Items are returned as read (duplicates and items before `startMs` included; the caller filters).
 */
export async function pageBackwards(o: PageBackwardsOptions): Promise<unknown[]> {
  const items: unknown[] = [];
  let oldestMs: number | undefined;
  for (let page = 0; page < o.maxPages; page++) {
    const data = await o.fetchPage(oldestMs);
    items.push(...data);
    const times = data.map(o.timeOf).filter((t) => Number.isFinite(t) && t > 0);
    if (data.length < o.pageLimit || times.length === 0) break;
    const oldest = Math.min(...times);
    if (oldest <= o.startMs) break;
    oldestMs = oldest;
  }
  return items;
}
