/**
 * Limits of the streaming API (WebSocket /api/v1/ws and SSE /api/v1/stream; docs/streaming.md "Limits"), as
 * environment variables (zod, merged into src/config.ts) and as the options the stream hub takes.
 */
import { z } from 'zod';

/** The STREAM_* variables (defaults are the documented ones). */
export const STREAM_CONFIG_SHAPE = {
  /** Open stream connections (WebSocket + SSE) per API key, or per client address without keys; more answer 429 / JSON-RPC 10030. */
  STREAM_MAX_CONNECTIONS_PER_KEY: z.coerce.number().int().min(1).default(200),
  /** Channels one connection may hold at once; a subscribe past it is refused whole (JSON-RPC 10029). */
  STREAM_MAX_SUBSCRIPTIONS: z.coerce.number().int().min(1).default(500),
  /** Largest client message, bytes: larger ones get JSON-RPC -32600 (four times it closes the socket, 1009). */
  STREAM_MAX_MESSAGE_BYTES: z.coerce.number().int().min(256).max(1_048_576).default(65_536),
  /** Client messages per second per connection (burst of twice that); more get JSON-RPC 10028 too_many_requests. */
  STREAM_MAX_REQUESTS_PER_S: z.coerce.number().min(1).default(20),
  /** Bytes queued in a connection's socket above which nothing more is written (updates wait there, latest wins per channel). */
  STREAM_MAX_BUFFERED_BYTES: z.coerce.number().int().min(1024).default(1_048_576),
  /** A connection whose socket stays above STREAM_MAX_BUFFERED_BYTES this long, ms, is closed (code 4008 "slow consumer"). */
  STREAM_STALL_MS: z.coerce.number().int().min(100).default(10_000),
  /** Updates kept per channel for resume (`since`, Last-Event-ID); an older gap gets the current document with reset: true. */
  STREAM_RESUME_DEPTH: z.coerce.number().int().min(1).max(10_000).default(64),
  /** How long a channel keeps recording updates for resume after its last subscriber left, s. */
  STREAM_RESUME_WINDOW_S: z.coerce.number().int().min(0).default(600),
  /** With API keys: ms a WebSocket opened without the header has to send public/auth before it is closed (4001). */
  STREAM_AUTH_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /** ms between the close frame sent to a slow consumer (or any close) and the socket destroyed if the peer does not read it. */
  STREAM_CLOSE_GRACE_MS: z.coerce.number().int().min(0).default(5_000),
  /**
   * ms of the hub's write window: the updates published within one window reach each connection in one socket write
   * (windows aligned to multiples of this on the wall clock). 0 (the default): every update is written at the next
   * turn of the event loop. A socket write costs 8 to 12 us of CPU on loopback, mostly per write rather than per byte,
   * so with many full-surface subscribers a window trades at most this much latency for fewer writes
   * (docs/streaming.md "Limits").
   */
  STREAM_FLUSH_MS: z.coerce.number().int().min(0).max(1000).default(0),
  /** s between two sends of the `status` channel when nothing changed (the current status again, same sequence, new check time): a client hearing nothing for longer knows the service or its connection is silent. */
  STREAM_STATUS_REPEAT_S: z.coerce.number().min(1).max(3600).default(30),
};

/** Limits and timings of the stream hub (see {@link STREAM_CONFIG_SHAPE} for each). */
export interface StreamLimits {
  readonly maxConnectionsPerKey: number;
  readonly maxSubscriptions: number;
  readonly maxMessageBytes: number;
  readonly maxRequestsPerS: number;
  readonly maxBufferedBytes: number;
  readonly stallMs: number;
  readonly resumeDepth: number;
  readonly resumeWindowS: number;
  readonly authTimeoutMs: number;
  /** ms between the close frame sent to a slow consumer and the socket destroyed (default 5000). */
  readonly closeGraceMs: number;
  /** ms between checks of the `status` channel (feeds connected, pairs stale; default 1000). */
  readonly statusCheckMs: number;
  /** ms after the last `status` message at which the unchanged status is sent again (STREAM_STATUS_REPEAT_S x 1000; default 30000). */
  readonly statusRepeatMs: number;
  /** The write window (STREAM_FLUSH_MS; default 0 = the next turn of the event loop). */
  readonly flushMs: number;
}

/** The documented defaults. */
export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  maxConnectionsPerKey: 200,
  maxSubscriptions: 500,
  maxMessageBytes: 65_536,
  maxRequestsPerS: 20,
  maxBufferedBytes: 1_048_576,
  stallMs: 10_000,
  resumeDepth: 64,
  resumeWindowS: 600,
  authTimeoutMs: 10_000,
  closeGraceMs: 5_000,
  statusCheckMs: 1_000,
  statusRepeatMs: 30_000,
  flushMs: 0,
};

/** The limits of a loaded configuration. */
export function streamLimitsFromConfig(c: { [K in keyof typeof STREAM_CONFIG_SHAPE]: number }): StreamLimits {
  return {
    ...DEFAULT_STREAM_LIMITS,
    maxConnectionsPerKey: c.STREAM_MAX_CONNECTIONS_PER_KEY,
    maxSubscriptions: c.STREAM_MAX_SUBSCRIPTIONS,
    maxMessageBytes: c.STREAM_MAX_MESSAGE_BYTES,
    maxRequestsPerS: c.STREAM_MAX_REQUESTS_PER_S,
    maxBufferedBytes: c.STREAM_MAX_BUFFERED_BYTES,
    stallMs: c.STREAM_STALL_MS,
    resumeDepth: c.STREAM_RESUME_DEPTH,
    resumeWindowS: c.STREAM_RESUME_WINDOW_S,
    authTimeoutMs: c.STREAM_AUTH_TIMEOUT_MS,
    closeGraceMs: c.STREAM_CLOSE_GRACE_MS,
    statusRepeatMs: c.STREAM_STATUS_REPEAT_S * 1000,
    flushMs: c.STREAM_FLUSH_MS,
  };
}
