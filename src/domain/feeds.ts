/**
 * The small interface between exchange adapters and the streams.
 *
 * An adapter owns one exchange connection (transport: connect, subscribe, heartbeat, reconnect)
 * and a pure normalizer (wire JSON -> {@link MarketEvent}s). streams/ only ever sees
 * `events$`. Source: docs/architecture.md; tardis-node's mapper/realtimefeed split (docs/architecture.md).
 */
import type { Observable } from 'rxjs';
import type { MarketEvent } from './events.js';
import type { Source } from './markets.js';

/** Result of normalizing one raw wire message. */
export type NormalizeResult =
  | { readonly ok: true; readonly events: readonly MarketEvent[] }
  /** `kind` is a short, stable label for counting (e.g. `bad-ticker`, `unknown-channel`). */
  | { readonly ok: false; readonly kind: string; readonly detail: string };

/**
 * A pure normalizer: raw parsed JSON (already JSON.parse'd; may be anything) and the local
 * receive time in Unix seconds -> events or a counted drop. Never throws.
 */
export type Normalizer = (raw: unknown, receivedAtS: number) => NormalizeResult;

/** Live counters of one feed, for /ready, metrics and the dashboard. */
export interface FeedStats {
  readonly source: Source;
  readonly connected: boolean;
  /** Raw messages received since start. */
  readonly messages: number;
  /** Dropped messages by kind (malformed, unknown channel, ...). */
  readonly dropped: Readonly<Record<string, number>>;
  /** Completed reconnects since start. */
  readonly reconnects: number;
  /** Wall-clock Unix seconds of the last message received; null before the first. */
  readonly lastMessageAt: number | null;
  /** Connection attempts after the first (successful or not), summed over the feed's sockets; absent for feeds without a socket (replay). */
  readonly reconnectAttempts?: number;
  /** Wall-clock Unix seconds of the next scheduled connection attempt while disconnected; null when none is scheduled. */
  readonly nextAttemptAt?: number | null;
}

/**
 * One exchange feed. `events$` is hot: it emits from `start()` until `stop()`; a disconnect is
 * a `status` event, never an error or completion of the stream.
 */
export interface MarketFeed {
  readonly source: Source;
  readonly events$: Observable<MarketEvent>;
  /** Connect (and keep reconnecting) until stop(). */
  start(): void;
  /** Close the connection for good; resolves when closed. */
  stop(): Promise<void>;
  stats(): FeedStats;
}
