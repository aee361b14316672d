/**
 * Pieces every exchange feed (adapters/deribit, okx, bybit `feed.ts`) repeats around its transport:
 * timers tracked so that stop() can clear them ({@link TrackedTimers}), and the output side of a
 * {@link MarketFeed} ({@link FeedOutput}: the hot `events$`, the DropCounter, message counters,
 * JSON parsing of frames, and {@link FeedStats}).
 *
 * Source: src/domain/feeds.ts (MarketFeed, FeedStats); docs/spec ("a malformed exchange message
 * is counted, logged once per kind, and dropped, never a crash", via drops.ts).
 */
import { Subject, type Observable } from 'rxjs';
import type { MarketEvent } from '../../src/domain/events.js';
import type { Source } from '../../src/domain/markets.js';
import type { FeedStats, MarketFeed, NormalizeResult } from '../../src/domain/feeds.js';
import { DropCounter, type DropLogger } from './drops.js';
import { CommonDropKinds } from './normalizeKit.js';

/**
 * A set of Node timers owned by a feed: {@link TrackedTimers.clear} clears every pending one (a
 * timeout is forgotten once it fires). {@link TrackedTimers.sleep} waits on a tracked timeout, so
 * a sleep pending at clear() never resolves (the waiting task is abandoned, as after stop()).
 */
export class TrackedTimers {
  private readonly pending = new Set<NodeJS.Timeout>();
  private closed = false;

  /** setTimeout(fn, ms), tracked until it fires or clear(). */
  timeout(fn: () => void, ms: number): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.pending.delete(t);
      fn();
    }, ms);
    this.pending.add(t);
    return t;
  }

  /** setInterval(fn, ms), tracked until clear(). */
  interval(fn: () => void, ms: number): NodeJS.Timeout {
    const t = setInterval(fn, ms);
    this.pending.add(t);
    return t;
  }

  /** Resolves after `ms` (a tracked timeout); at once when `ms` <= 0 or after close(). */
  sleep(ms: number): Promise<void> {
    if (ms <= 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => void this.timeout(resolve, ms));
  }

  /** Clear every pending timer (timeouts, intervals, sleeps). Later timers are tracked again. */
  clear(): void {
    for (const t of this.pending) clearTimeout(t);
    this.pending.clear();
  }

  /** clear(), and from now on sleep() resolves at once (the owner stopped). */
  close(): void {
    this.closed = true;
    this.clear();
  }
}

/**
 * The output side of one {@link MarketFeed}: a hot `events$` (from construction until complete()),
 * the feed's DropCounter, and the message counters behind {@link FeedStats}.
 */
export class FeedOutput {
  private readonly subject = new Subject<MarketEvent>();
  /** Hot stream of normalized events. */
  readonly events$: Observable<MarketEvent> = this.subject.asObservable();
  /** Dropped messages by kind (logged once per kind). */
  readonly drops: DropCounter;
  private messages = 0;
  private lastMessageAt: number | null = null;

  constructor(
    readonly source: Source,
    logger?: DropLogger,
  ) {
    this.drops = new DropCounter(source, logger);
  }

  /** Emit one event (ignored once complete()). */
  emit(ev: MarketEvent): void {
    if (!this.subject.closed) this.subject.next(ev);
  }

  /** Count one inbound frame received at `receivedAtS` (Unix s). */
  countFrame(receivedAtS: number): void {
    this.messages += 1;
    this.lastMessageAt = receivedAtS;
  }

  /**
   * JSON.parse a text frame; a frame that is not JSON is counted as `malformed` (detail: its first
   * 120 characters) and gives `undefined` in `ok: false`.
   */
  parseFrame(text: string): { ok: true; msg: unknown } | { ok: false } {
    try {
      return { ok: true, msg: JSON.parse(text) };
    } catch {
      this.drops.drop(CommonDropKinds.malformed, `invalid JSON: ${text.slice(0, 120)}`);
      return { ok: false };
    }
  }

  /** Emit a normalizer's events, or count its drop. Returns `r.ok`. */
  publish(r: NormalizeResult): boolean {
    if (!r.ok) {
      this.drops.drop(r.kind, r.detail);
      return false;
    }
    for (const ev of r.events) this.emit(ev);
    return true;
  }

  /** The feed's {@link FeedStats} with its connection state, reconnect count and (given its transports) reconnect attempts and next attempt time. */
  stats(connected: boolean, reconnects: number, transports: ReadonlyArray<{ readonly reconnectAttempts: number; readonly nextAttemptAtMs: number | null }> = []): FeedStats {
    const next = transports.map((t) => t.nextAttemptAtMs).filter((t): t is number => t !== null);
    return {
      source: this.source,
      connected,
      messages: this.messages,
      dropped: this.drops.snapshot(),
      reconnects,
      lastMessageAt: this.lastMessageAt,
      ...(transports.length > 0
        ? { reconnectAttempts: transports.reduce((n, t) => n + t.reconnectAttempts, 0), nextAttemptAt: next.length ? Math.min(...next) / 1000 : null }
        : {}),
    };
  }

  /** Complete `events$` (the feed stopped for good). */
  complete(): void {
    this.subject.complete();
  }
}
