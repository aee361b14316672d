/**
 * The streaming API (docs/streaming.md): GET /api/v1/ws (WebSocket JSON-RPC 2.0, ../stream/rpc.ts), its
 * Server-Sent Events twin GET /api/v1/stream?channels=... (same channels, documents and sequences; resume with
 * Last-Event-ID), the AsyncAPI 3 description of both at GET /asyncapi.json, and the dashboard's "Streaming API"
 * panel figures at GET /dashboard/api/push-stats. Updates come from the stream hub
 * (../stream/hub.ts), which never waits on a socket.
 *
 * Security as REST: both are under /api, so the rate limit applies to the handshake and, with API keys, the SSE
 * stream needs header X-API-Key (401 otherwise). The WebSocket handshake is let through without a key
 * (src/api/plugins/security.ts `selfAuthenticated`) so that a client that cannot set headers (a browser) sends
 * `public/auth` as its first message; nothing is sent to it before. A plain GET /api/v1/ws (no upgrade) answers
 * 426 (401 without a key when keys are configured).
 * SSE format: WHATWG HTML "Server-sent events"; each event: `id: <channel>:<sequence>,...` (the last sequence
 * of every channel of the stream, what Last-Event-ID sends back), `data: {"channel":...,"data":{...}}`.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { num, routePlugin, type RouteDocs } from '../routeDefinition.js';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import type { Clock } from '../../domain/clock.js';
import { ApiError, badRequest } from '../errors.js';
import type { KeyRing } from '../plugins/security.js';
import { parseChannel, type Channel } from '../stream/channels.js';
import type { Item, Session, StreamHub, StreamTransport, Subscription } from '../stream/hub.js';
import { serveWebSocket } from '../stream/rpc.js';
import { asyncApiDocument } from '../stream/asyncapi.js';

/** Path of the WebSocket API. */
export const STREAM_WS_PATH = '/api/v1/ws';
/** Path of the SSE twin. */
export const STREAM_SSE_PATH = '/api/v1/stream';
/** The dashboard's streaming panel (JSON; a dashboard data route: X-API-Key or the session with keys). */
export const STREAM_STATS_PATH = '/dashboard/api/push-stats';
/** Path of the AsyncAPI document. */
export const ASYNCAPI_PATH = '/asyncapi.json';

/** Query of the SSE stream. */
export const StreamQuery = z.object({
  channels: z.string().min(1).max(10_000).describe('Comma-separated channel names (docs/streaming.md "Channels"), e.g. surface.DERIBIT.BTC-USD.SVI,iv_summary.XCHG_A.BTC-USD.SVI'),
  interval_ms: z.coerce.number().int().min(0).max(3_600_000).optional().describe('At most one event per channel per this many ms, latest wins (default 0: every update)'),
  fields: z.string().max(2_000).optional().describe('Comma-separated top-level members of data to send (identity, sequence and observationTimestamp always are)'),
  expiries: z.string().max(4_000).optional().describe('Comma-separated expiries (Unix seconds) to keep in expiries / volatilityListed / fixedYields'),
  threshold: z.coerce.number().min(0).max(10).optional().describe('iv channels: send only when the vol moved by more than this (fraction)'),
  lastEventId: z.string().max(10_000).optional().describe('Resume point when the client cannot send the Last-Event-ID header (same format: channel:sequence,...)'),
});

/** Parse an SSE event id / Last-Event-ID (`channel:sequence,...`) into canonical channel -> sequence; bad parts are ignored. */
export function parseEventId(text: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (!text) return out;
  for (const part of text.split(',')) {
    const i = part.lastIndexOf(':');
    if (i <= 0) continue;
    const r = parseChannel(part.slice(0, i).trim());
    const seq = Number(part.slice(i + 1));
    if (!('error' in r) && Number.isFinite(seq) && seq >= 0) out.set(r.channel.name, seq);
  }
  return out;
}

/** Options of {@link streamRoutes}. */
export interface StreamRouteOptions {
  readonly hub: StreamHub;
  readonly clock: Clock;
  /** The API keys when configured, else null. */
  readonly keys: KeyRing | null;
}

/** GET /api/v1/stream: Server-Sent Events; the example market's surface and summary channels and the status channel. */
const sseDocs: RouteDocs = {
  responseContentType: 'text/event-stream',
  errors: [400, 401, 429, 503],
  live: {
    query: ({ market: m }) => ({ channels: `surface.${m.source}.${m.pair.base}-${m.pair.quote}.SVI,iv_summary.${m.source}.${m.pair.base}-${m.pair.quote}.SVI,status` }),
  },
};

/** GET /dashboard/api/push-stats answer: the hub's figures at the service clock. */
const PushStatsResult = z.object({
  generatedAt: num().describe('Service clock, Unix seconds'),
  connections: z.object({ ws: num().describe('Open WebSocket connections'), sse: num().describe('Open SSE streams') }).describe('Open connections per transport'),
  subscriptions: z.record(z.string(), num()).describe('Subscriptions held, by channel kind'),
  messages: num().describe('Notifications written since start'),
  bytes: num().describe('Bytes of notifications written since start'),
  conflated: num().describe('Updates replaced by a newer one before being written, since start'),
  slowCloses: num().describe('Connections closed as slow consumers (4008), since start'),
  resumes: z.record(z.string(), num()).describe('Subscriptions with since / Last-Event-ID, by outcome'),
  rpcErrors: num().describe('JSON-RPC errors answered, since start'),
  rejected: num().describe('Connections refused or closed for a limit or a credential, since start'),
});

/** GET /asyncapi.json answer (src/api/stream/asyncapi.ts), in outline. */
const AsyncApiResult = z.object({ asyncapi: z.string().describe('AsyncAPI version, 3.0.0') }).catchall(z.unknown()).describe('AsyncAPI 3.0.0 document');

/**
 * The plugin of GET /api/v1/ws, GET /api/v1/stream, GET /dashboard/api/push-stats and GET /asyncapi.json (module
 * docstring). @fastify/websocket must be registered on the app before it. The hub is closed when the app closes
 * (its open streams would keep app.close() waiting).
 */
export const streamRoutes = (opts: StreamRouteOptions): FastifyPluginAsyncZod =>
  routePlugin('stream', async (app) => {
    const { hub, keys } = opts;
    const ownerOf = (keyId: string | null, ip: string) => (keyId ? `key:${keyId}` : `ip:${ip}`);

    app.get(
      STREAM_WS_PATH,
      {
        schema: { hide: true },
        config: { metrics: false },
        // before the upgrade: an owner already at its connection limit gets a plain 429
        preHandler: async (req: FastifyRequest) => {
          if (req.ws && (req.apiKeyId || !keys) && !hub.canOpen(ownerOf(req.apiKeyId, req.ip))) {
            hub.metrics.rejected.inc({ reason: 'connections' });
            throw new ApiError(429, `too many stream connections (limit ${hub.limits.maxConnectionsPerKey} per ${req.apiKeyId ? 'API key' : 'client address'}, STREAM_MAX_CONNECTIONS_PER_KEY)`);
          }
        },
        wsHandler: (socket: WebSocket, req: FastifyRequest) => serveWebSocket(socket, { hub, clock: opts.clock, keys, headerKeyId: req.apiKeyId, ip: req.ip }),
      } as never,
      async () => {
        throw new ApiError(426, `${STREAM_WS_PATH} is a WebSocket endpoint (JSON-RPC 2.0): connect with a WebSocket client; for Server-Sent Events use ${STREAM_SSE_PATH}`, undefined, { upgrade: 'websocket' });
      },
    );

    app.get(
      STREAM_SSE_PATH,
      {
        schema: {
          summary: 'Server-Sent Events twin of the WebSocket API: channel updates with their sequence, resumable with Last-Event-ID',
          tags: ['streaming'],
          description:
            'Server-Sent Events twin of the WebSocket API (GET /api/v1/ws, JSON-RPC 2.0; docs/streaming.md, /asyncapi.json): the same channels (surface, iv_summary, iv, forward_curve, funding, status; aliases XCHG_A/B/C accepted), the same documents and sequence numbers (those of the REST answers and Kafka documents). Each event: `id: <channel>:<sequence>,...` (the last sequence of every channel of the stream) and `data: {"channel", "data"}`; the current document of each channel first. Reconnect with header Last-Event-ID (or ?lastEventId=) to get every update missed in order, or the current document with data.reset = true when the gap is older than what is kept (STREAM_RESUME_DEPTH). A client whose socket stays blocked past STREAM_STALL_MS gets `event: close` and the stream ends. Limits: STREAM_MAX_CONNECTIONS_PER_KEY (429), STREAM_MAX_SUBSCRIPTIONS. With API keys configured it needs header X-API-Key.',
          querystring: StreamQuery,
          docs: sseDocs,
        },
        config: { metrics: false },
      },
      (req, reply) => serveEventStream(hub, ownerOf(req.apiKeyId, req.ip), req.query, req, reply),
    );

    const statsSchema = {
      summary: 'Streaming API figures for the dashboard panel (connections, subscriptions, messages, conflations, slow closes)',
      tags: ['monitoring'],
      description: 'The figures of the dashboard\'s "Streaming API" panel: open WebSocket and SSE connections, subscriptions per channel kind, and counters since start (docs/streaming.md "Metrics" has the same as Prometheus series). With API keys configured it needs header X-API-Key or the dashboard session cookie.',
      docs: { response: PushStatsResult, errors: [401] },
    };
    app.get(STREAM_STATS_PATH, { schema: statsSchema }, async () => ({
      generatedAt: opts.clock.now(),
      ...(await hub.stats()),
    }));

    const asyncApiSchema = {
      summary: 'AsyncAPI 3 description of the streaming API (WebSocket /api/v1/ws and SSE /api/v1/stream)',
      tags: ['streaming'],
      description: 'The AsyncAPI 3.0.0 document of the streaming API: the WebSocket server /api/v1/ws (JSON-RPC 2.0 requests, responses, heartbeats) and the SSE server /api/v1/stream, one channel per channel kind with its notification payload.',
      docs: { response: AsyncApiResult, errors: [] },
    };
    app.get(ASYNCAPI_PATH, { schema: asyncApiSchema }, async () => asyncApiDocument());

    // open streams would keep app.close() waiting
    app.addHook('preClose', (done) => {
      hub.close();
      done();
    });
  });

/** The query of the SSE stream. */
type StreamQueryValue = z.infer<typeof StreamQuery>;

/**
 * GET /api/v1/stream: the request's channels as one Server-Sent Events stream (a 400 naming every bad part, a 429
 * past the owner's connection limit), each channel resumed after its sequence in Last-Event-ID.
 */
function serveEventStream(hub: StreamHub, owner: string, q: StreamQueryValue, req: FastifyRequest, reply: FastifyReply): void {
  const { channels, expiries } = checkedStreamRequest(q, hub);
  if (!hub.canOpen(owner)) {
    hub.metrics.rejected.inc({ reason: 'connections' });
    throw new ApiError(429, `too many stream connections (limit ${hub.limits.maxConnectionsPerKey}, STREAM_MAX_CONNECTIONS_PER_KEY)`);
  }
  const headerId = req.headers['last-event-id'];
  const since = parseEventId(typeof headerId === 'string' ? headerId : q.lastEventId);

  reply.hijack();
  const res = reply.raw;
  req.raw.socket.setTimeout(0);
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write('retry: 2000\n\n');
  const sse = sseTransport(res, channels, since, hub);
  const session: Session | null = hub.openSession(sse.transport, owner);
  if (!session) {
    res.write(`event: close\ndata: ${JSON.stringify({ code: 1008, reason: 'too many connections' })}\n\n`);
    sse.end();
    return;
  }
  const options = {
    intervalMs: q.interval_ms ?? 0,
    ...(q.fields ? { fields: q.fields.split(',').map((s) => s.trim()).filter(Boolean) } : {}),
    ...(expiries ? { expiries } : {}),
    threshold: q.threshold ?? 0,
  };
  for (const c of channels) hub.subscribe(session, c, options, since.get(c.name));
  keepAliveUntilClosed(res, session, hub, sse.ended);
}

/** The stream request's channels (each once) and expiries; a 400 naming every bad part (channels, expiries, too many channels). */
function checkedStreamRequest(q: StreamQueryValue, hub: StreamHub): { channels: Channel[]; expiries: number[] | undefined } {
  const channels: Channel[] = [];
  const bad: Array<{ path: string; message: string }> = [];
  for (const name of q.channels.split(',').map((s) => s.trim()).filter(Boolean)) {
    const r = parseChannel(name);
    if ('error' in r) bad.push({ path: 'channels', message: `${name.slice(0, 200)}: ${r.error}` });
    else if (!channels.some((c) => c.name === r.channel.name)) channels.push(r.channel);
  }
  if (channels.length === 0 && bad.length === 0) bad.push({ path: 'channels', message: 'at least one channel' });
  const expiries = q.expiries ? q.expiries.split(',').map((s) => Number(s.trim())) : undefined;
  if (expiries && !expiries.every((e) => Number.isSafeInteger(e) && e > 0)) bad.push({ path: 'expiries', message: 'comma-separated Unix seconds' });
  if (channels.length > hub.limits.maxSubscriptions) bad.push({ path: 'channels', message: `at most ${hub.limits.maxSubscriptions} channels (STREAM_MAX_SUBSCRIPTIONS)` });
  if (bad.length) throw badRequest(`invalid stream request: ${bad.map((b) => b.message).join('; ')}`, bad);
  return { channels, expiries };
}

/**
 * The hub's transport over one SSE response: each event's id carries the last sequence of every channel of the
 * stream (from `since`, the resume point); a close sends a `close` event, ends the response and destroys it after
 * the grace period.
 */
function sseTransport(res: ServerResponse, channels: readonly Channel[], since: ReadonlyMap<string, number>, hub: StreamHub) {
  const last = new Map<string, number>();
  for (const c of channels) {
    const s = since.get(c.name);
    if (s !== undefined) last.set(c.name, s);
  }
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    res.end();
  };
  const transport: StreamTransport = {
    kind: 'sse',
    buffered: () => res.writableLength,
    write: (sub: Subscription, item: Item, json: string | Buffer) => {
      last.set(sub.state.channel.name, item.entry.sequence);
      const id = [...last].map(([c, s]) => `${c}:${s}`).join(',');
      const text = `id: ${id}\ndata: {"channel":${JSON.stringify(item.entry.channel)},"data":${json}}\n\n`;
      if (!ended) res.write(text);
      return text.length;
    },
    close: (code, reason) => {
      if (!ended) res.write(`event: close\ndata: ${JSON.stringify({ code, reason })}\n\n`);
      end();
      setTimeout(() => res.destroy(), hub.limits.closeGraceMs).unref?.();
    },
  };
  return { transport, end, ended: () => ended };
}

/** A comment every 15 s (proxies keep the stream open, and a dead peer is found) until the response closes, which disposes of the session. */
function keepAliveUntilClosed(res: ServerResponse, session: Session, hub: StreamHub, ended: () => boolean): void {
  const keepAlive = setInterval(() => {
    if (!ended() && res.writableLength < hub.limits.maxBufferedBytes) res.write(': keep-alive\n\n');
  }, 15_000);
  keepAlive.unref?.();
  const cleanup = () => {
    clearInterval(keepAlive);
    session.dispose();
  };
  res.on('close', cleanup);
  res.on('error', cleanup);
}
