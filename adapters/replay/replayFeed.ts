/**
 * ReplayFeed: recorded raw exchange messages (JSON Lines, see jsonl.ts) replayed through the same
 * normalizer as the live feed (default: Deribit's), deterministically.
 *
 * - Time: the clock is the messages' own time. Each message's time is its exchange timestamp
 *   (`params.data.timestamp`, ms; for a JSON-RPC response `usOut`, µs), else the recorded receive
 *   time of the line's prefix; the MarketClock is advanced to it BEFORE the message's events are
 *   emitted, and it is the events' `receivedAt`. A message without any time uses the clock as is.
 * - Speed: 0 = as fast as possible (default); s > 0 = recorded pacing divided by s (1 = real time,
 *   10 = ten times faster): before a message whose time is later than any seen, wait
 *   (t - tPrev) / s. Out-of-order timestamps never wait and never move the clock back.
 * - Status: `connected` is emitted once, just before the first message's events (timestamped with
 *   that message's time); at the end of the file the feed stays `connected` (the state is as of the
 *   last message) and `done` resolves with a summary. stop() emits `disconnected` and completes.
 * - Same file, fresh clock -> the same event sequence (no wall clock is read).
 * Source: docs/spec/decisions.md "replay".
 */
import { Subject, type Observable } from 'rxjs';
import type { MarketEvent } from '../../src/domain/events.js';
import type { MarketClock } from '../../src/domain/clock.js';
import type { Source } from '../../src/domain/markets.js';
import { normalizeDeribit } from '../deribit/normalize.js';
import { DropCounter } from '../shared/drops.js';
import { silentLogger, type Logger } from '../shared/transport.js';
import type { FeedStats, MarketFeed, Normalizer } from '../../src/domain/feeds.js';
import { parseJsonlLine, readLines } from './jsonl.js';

export interface ReplayFeedOptions {
  /** Path of the JSON Lines file. */
  readonly path: string;
  /** The replay's clock; advanced per message (never backwards). */
  readonly clock: MarketClock;
  /** 0 = as fast as possible (default); 1 = recorded speed; 10 = ten times faster. */
  readonly speed?: number;
  /** Source of the recorded messages. Default `DERIBIT`. */
  readonly source?: Source;
  /** Normalizer of that source. Default {@link normalizeDeribit}. */
  readonly normalizer?: Normalizer;
  /** Exchange time of a raw message, Unix s, or null (the recorded receive time is used). Default {@link messageTimeS} (Deribit's shapes). */
  readonly messageTime?: (raw: unknown) => number | null;
  /** Waits `ms` milliseconds (injectable for tests). Default setTimeout. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** At speed 0, yield to the event loop every this many lines. Default 1 000. */
  readonly yieldEvery?: number;
  readonly logger?: Logger;
}

/** What a replay did, resolved by {@link ReplayFeed.done}. */
export interface ReplaySummary {
  /** Lines read (including skipped ones). */
  readonly lines: number;
  /** Messages handed to the normalizer, plus unparseable lines. */
  readonly messages: number;
  /** Events emitted (status events included). */
  readonly events: number;
  /** Lines skipped as not messages (blank, connection, outgoing). */
  readonly skipped: number;
  readonly dropped: Readonly<Record<string, number>>;
  /** Clock at the end, Unix s. */
  readonly endTime: number;
  /** True when stop() ended the replay before the end of the file. */
  readonly stopped: boolean;
  /** Read error (e.g. missing file), if any. */
  readonly error?: string;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The exchange time of a raw message, Unix s: `params.data.timestamp` (ms; for an array `data`,
 * its first element's), else a response's `usOut` (µs); null when it has none.
 */
export function messageTimeS(raw: unknown): number | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const m = raw as Record<string, unknown>;
  const params = m['params'];
  if (typeof params === 'object' && params !== null) {
    let data = (params as Record<string, unknown>)['data'];
    if (Array.isArray(data)) data = data[0];
    if (typeof data === 'object' && data !== null) {
      const ts = (data as Record<string, unknown>)['timestamp'];
      if (typeof ts === 'number' && Number.isFinite(ts) && ts > 0) return ts / 1000;
    }
  }
  const usOut = m['usOut'];
  if (typeof usOut === 'number' && Number.isFinite(usOut) && usOut > 0) return usOut / 1e6;
  return null;
}

/** Replay of a recorded message file as a {@link MarketFeed} (see the module docstring). */
export class ReplayFeed implements MarketFeed {
  readonly source: Source;
  private readonly subject = new Subject<MarketEvent>();
  /** Hot stream of normalized events. */
  readonly events$: Observable<MarketEvent> = this.subject.asObservable();
  /** Resolves when the file has been replayed (or stop() ended it). Never rejects. */
  readonly done: Promise<ReplaySummary>;

  private readonly normalizer: Normalizer;
  private readonly speed: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly yieldEvery: number;
  private readonly logger: Logger;
  private readonly drops: DropCounter;
  private resolveDone!: (s: ReplaySummary) => void;
  private started = false;
  private stopped = false;
  private connected = false;
  private lines = 0;
  private messages = 0;
  private eventCount = 0;
  private skipped = 0;
  private lastMessageAt: number | null = null;

  constructor(private readonly opts: ReplayFeedOptions) {
    this.source = opts.source ?? 'DERIBIT';
    this.normalizer = opts.normalizer ?? normalizeDeribit;
    const speed = opts.speed ?? 0;
    if (!Number.isFinite(speed) || speed < 0) throw new Error(`ReplayFeed: speed must be >= 0, got ${speed}`);
    this.speed = speed;
    this.sleep = opts.sleep ?? defaultSleep;
    this.yieldEvery = Math.max(1, opts.yieldEvery ?? 1000);
    this.logger = opts.logger ?? silentLogger;
    this.drops = new DropCounter(this.source, this.logger);
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
  }

  /** Start replaying (idempotent). */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    void this.run();
  }

  /** End the replay; emits `disconnected`, completes events$, resolves when the reader has stopped. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.started) await this.done;
    else this.finish(undefined);
    if (this.connected) {
      this.connected = false;
      this.emit({ kind: 'status', source: this.source, state: 'disconnected', reason: 'stopped', timestamp: this.opts.clock.now() });
    }
    this.subject.complete();
  }

  stats(): FeedStats {
    return {
      source: this.source,
      connected: this.connected,
      messages: this.messages,
      dropped: this.drops.snapshot(),
      reconnects: 0,
      lastMessageAt: this.lastMessageAt,
    };
  }

  private emit(ev: MarketEvent): void {
    this.eventCount += 1;
    this.subject.next(ev);
  }

  private announce(): void {
    if (this.connected || this.stopped) return;
    this.connected = true;
    this.emit({ kind: 'status', source: this.source, state: 'connected', timestamp: this.opts.clock.now() });
  }

  private async run(): Promise<void> {
    const clock = this.opts.clock;
    let paceT: number | null = null;
    let error: string | undefined;
    try {
      for await (const line of readLines(this.opts.path)) {
        if (this.stopped) break;
        this.lines += 1;
        const parsed = parseJsonlLine(line);
        if (parsed.kind === 'skip') {
          this.skipped += 1;
          continue;
        }
        this.messages += 1;
        if (parsed.kind === 'bad') {
          this.drops.drop('malformed', parsed.detail);
          continue;
        }
        const t = (this.opts.messageTime ?? messageTimeS)(parsed.value) ?? parsed.recvS;
        if (t !== null) {
          if (this.speed > 0 && paceT !== null && t > paceT) {
            await this.sleep(((t - paceT) * 1000) / this.speed);
            if (this.stopped) break;
          }
          if (paceT === null || t > paceT) paceT = t;
          clock.advance(t);
        }
        this.announce();
        const receivedAt = t ?? clock.now();
        this.lastMessageAt = receivedAt;
        const r = this.normalizer(parsed.value, receivedAt);
        if (r.ok) for (const ev of r.events) this.emit(ev);
        else this.drops.drop(r.kind, r.detail);
        if (this.speed === 0 && this.lines % this.yieldEvery === 0) await new Promise<void>((res) => setImmediate(res));
      }
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
      this.logger.error({ source: this.source, path: this.opts.path, err: error }, 'replay read failed');
    }
    if (error === undefined) this.announce();
    this.finish(error);
  }

  private finish(error: string | undefined): void {
    const summary: ReplaySummary = {
      lines: this.lines,
      messages: this.messages,
      events: this.eventCount,
      skipped: this.skipped,
      dropped: this.drops.snapshot(),
      endTime: this.opts.clock.now(),
      stopped: this.stopped,
      ...(error === undefined ? {} : { error }),
    };
    this.resolveDone(summary);
  }
}
