/**
 * The AsyncAPI 3.0.0 document of the streaming API (served at GET /asyncapi.json): the WebSocket server
 * /api/v1/ws (JSON-RPC 2.0) and the SSE twin /api/v1/stream, one channel per channel kind with its name pattern
 * as address, the requests the client sends and the notifications it receives. Specification:
 * https://www.asyncapi.com/docs/reference/specification/v3.0.0 (channels, operations `send`/`receive`,
 * `components.messages`). docs/streaming.md is the prose version.
 */
import { STREAM_API_VERSION } from './rpc.js';
import { VOLATILITY_MODELS } from '../../domain/volatilityModels.js';

const num = (description: string) => ({ type: 'number', description });
const str = (description: string) => ({ type: 'string', description });

/** Members every notification's `data` carries. */
const COMMON_DATA = {
  sequence: num('The channel\'s sequence: the snapshot sequence of the REST answers and Kafka documents (surface, iv_summary, iv, forward_curve); the settlement time for funding; a change counter for status'),
  observationTimestamp: num('Time of the data, Unix seconds'),
  publishTimestamp: num('When the service published the update, service clock, Unix seconds'),
  reset: { type: 'boolean', description: 'Present and true when a resume asked for a gap older than what is kept: this is the current document, updates in between are not replayed' },
};

function notification(name: string, summary: string, dataProps: Record<string, unknown>) {
  return {
    name,
    summary,
    contentType: 'application/json',
    payload: {
      type: 'object',
      required: ['jsonrpc', 'method', 'params'],
      properties: {
        jsonrpc: { const: '2.0' },
        method: { const: 'subscription' },
        params: {
          type: 'object',
          required: ['channel', 'data'],
          properties: { channel: str('The canonical channel name'), data: { type: 'object', required: ['sequence', 'observationTimestamp'], properties: { ...COMMON_DATA, ...dataProps } } },
        },
      },
    },
  };
}

const RPC_REQUEST = {
  name: 'request',
  summary: 'A JSON-RPC 2.0 request: public/subscribe, public/unsubscribe, public/unsubscribe_all, public/auth, public/get_time, public/test, public/set_heartbeat, public/disable_heartbeat',
  contentType: 'application/json',
  payload: {
    type: 'object',
    required: ['jsonrpc', 'method'],
    properties: {
      jsonrpc: { const: '2.0' },
      id: { type: ['integer', 'string'], description: 'Echoed in the response' },
      method: { type: 'string', enum: ['public/subscribe', 'public/unsubscribe', 'public/unsubscribe_all', 'public/auth', 'public/get_time', 'public/test', 'public/set_heartbeat', 'public/disable_heartbeat'] },
      params: {
        type: 'object',
        properties: {
          channels: { type: 'array', items: { type: 'string' }, description: 'Channel names (aliases XCHG_A/B/C accepted)' },
          interval_ms: { type: 'integer', minimum: 0, description: 'At most one message per channel per interval, latest wins' },
          fields: { type: 'array', items: { type: 'string' }, description: 'Top-level members of data to send' },
          expiries: { type: 'array', items: { type: 'integer' }, description: 'Expiries (Unix s) to keep' },
          threshold: { type: 'number', description: 'iv channels: minimum vol change (fraction) to send' },
          since: { type: 'object', additionalProperties: { type: 'number' }, description: '{channel: last sequence held}: resume' },
          api_key: { type: 'string', description: 'public/auth: an API key' },
          interval: { type: 'number', description: 'public/set_heartbeat: seconds, 10 to 3600' },
        },
      },
    },
  },
};

const RPC_RESPONSE = {
  name: 'response',
  summary: 'The response to a request: result, or error {code, message, data?} (-32700, -32600, -32601, -32602, 10028, 10029, 10030, 13004, 13009)',
  contentType: 'application/json',
  payload: {
    type: 'object',
    required: ['jsonrpc', 'id'],
    properties: {
      jsonrpc: { const: '2.0' },
      id: { type: ['integer', 'string', 'null'] },
      result: {},
      error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} } },
    },
  },
};

const HEARTBEAT = {
  name: 'heartbeat',
  summary: 'After public/set_heartbeat: {"method":"heartbeat","params":{"type":"test_request"}} every interval; answer with public/test or the socket is closed (4000)',
  contentType: 'application/json',
  payload: { type: 'object', properties: { jsonrpc: { const: '2.0' }, method: { const: 'heartbeat' }, params: { type: 'object', properties: { type: { const: 'test_request' } } } } },
};

const pairProps = { source: str('DERIBIT, OKX or BYBIT'), baseCurrency: str('Base currency'), quoteCurrency: str('Quote currency') };

const CHANNELS: Record<string, { address: string; description: string; message: ReturnType<typeof notification> }> = {
  surface: {
    address: 'surface.{source}.{pair}.{model}',
    description: 'The calibrated surface (the REST surface answer), at every recalibration',
    message: notification('surface', 'Surface update', { ...pairProps, volatilityModel: str(VOLATILITY_MODELS.join(', ')), spotPrice: num('Spot index'), expiries: { type: 'array', items: { type: 'object' } } }),
  },
  ivSummary: {
    address: 'iv_summary.{source}.{pair}.{model}',
    description: 'The iVSummary answer: ATM, 25/10-delta RR and BF with 24 h changes, listed and constant maturities',
    message: notification('iv_summary', 'IV summary update', { ...pairProps, volatilityModel: str('Model'), volatilityListed: { type: 'array', items: { type: 'object' } }, volatilityConstMat: { type: 'array', items: { type: 'object' } } }),
  },
  iv: {
    address: 'iv.{source}.{pair}.{model}.{by}.{expiry}.{value}',
    description:
      'The implied vol at one strike or call delta of one expiry, or at a list of them: {value} is one positive decimal or up to 16 joined by _ (iv.DERIBIT.BTC-USD.SVI.delta.1798099200.0.25_0.5_0.75; more is a -32602 error). One message carries every point of the list (points[]), sent when any point moved by more than the subscription\'s threshold since the last message',
    message: notification('iv', 'Implied vol at a point, or at every point of a list', {
      ...pairProps,
      expirationTimestamp: num('Expiry, Unix s'),
      strike: num('Strike (single-point channels)'),
      delta: num('Call delta (single-point delta channels)'),
      impliedVolatility: num('Fraction (single-point channels)'),
      points: {
        type: 'array',
        description: 'List channels: one per value of the channel, in its order',
        items: { type: 'object', properties: { strike: num('Strike (given, or solved from the delta)'), delta: num('Call delta (delta channels)'), impliedVolatility: num('Fraction') } },
      },
      forwardPrice: num('Forward'),
      spotPrice: num('Spot'),
    }),
  },
  forwardCurve: {
    address: 'forward_curve.{source}.{pair}',
    description: 'The forwardCurve answer (annualized basis yields) with spotPrice',
    message: notification('forward_curve', 'Forward curve update', { ...pairProps, fixedYields: { type: 'array', items: { type: 'object' } }, constMatYields: { type: 'array', items: { type: 'object' } } }),
  },
  funding: {
    address: 'funding.{source}.{instrument}',
    description: 'Each new settled funding point of a perpetual',
    message: notification('funding', 'Funding point', { source: str('Source'), instrumentId: str('Perpetual'), timestamp: num('Settlement, Unix s'), interest: num('Rate for the interval, fraction'), intervalHours: num('Interval, hours') }),
  },
  status: {
    address: 'status',
    description: 'Feeds connected or not and every pair served, stale or warming up, with since when; sent at every change (next sequence) and, unchanged, again every STREAM_STATUS_REPEAT_S seconds (default 30; same sequence, new observationTimestamp): never silent',
    message: notification('status', 'Service status', { held: str('Process-wide hold, or null'), feeds: { type: 'array', items: { type: 'object' } }, pairs: { type: 'array', items: { type: 'object' } } }),
  },
};

/** The AsyncAPI 3.0.0 document (a fresh object). */
export function asyncApiDocument(): Record<string, unknown> {
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const messages: Record<string, unknown> = { request: RPC_REQUEST, response: RPC_RESPONSE, heartbeat: HEARTBEAT };
  for (const [id, c] of Object.entries(CHANNELS)) {
    messages[id] = c.message;
    channels[id] = {
      address: c.address,
      description: `${c.description}. Subscribe with public/subscribe (WebSocket) or ?channels= (SSE).`,
      servers: [{ $ref: '#/servers/websocket' }, { $ref: '#/servers/sse' }],
      messages: { [id]: { $ref: `#/components/messages/${id}` } },
    };
    operations[`receive_${id}`] = { action: 'receive', channel: { $ref: `#/channels/${id}` }, messages: [{ $ref: `#/channels/${id}/messages/${id}` }] };
  }
  channels.rpc = {
    address: '/api/v1/ws',
    description: 'The JSON-RPC 2.0 requests and responses of the WebSocket connection',
    servers: [{ $ref: '#/servers/websocket' }],
    messages: { request: { $ref: '#/components/messages/request' }, response: { $ref: '#/components/messages/response' }, heartbeat: { $ref: '#/components/messages/heartbeat' } },
  };
  operations.sendRequest = {
    action: 'send',
    channel: { $ref: '#/channels/rpc' },
    messages: [{ $ref: '#/channels/rpc/messages/request' }],
    reply: { channel: { $ref: '#/channels/rpc' }, messages: [{ $ref: '#/channels/rpc/messages/response' }] },
  };
  operations.receiveHeartbeat = { action: 'receive', channel: { $ref: '#/channels/rpc' }, messages: [{ $ref: '#/channels/rpc/messages/heartbeat' }] };
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Vol-surface service streaming API',
      version: STREAM_API_VERSION,
      description:
        'Push channels of surfaces, IV summaries, implied vols, forward curves, funding and status over WebSocket JSON-RPC 2.0 (Deribit-style public/subscribe) or Server-Sent Events, ' +
        'with the sequence numbers of the REST answers and Kafka documents, and resume without gaps (params.since, Last-Event-ID). Times are Unix seconds. See docs/streaming.md.',
    },
    defaultContentType: 'application/json',
    servers: {
      websocket: { host: 'localhost:8080', pathname: '/api/v1/ws', protocol: 'ws', description: 'WebSocket JSON-RPC 2.0 (wss behind TLS termination). With API keys: header X-API-Key, or public/auth first.' },
      sse: { host: 'localhost:8080', pathname: '/api/v1/stream', protocol: 'http', description: 'Server-Sent Events: GET /api/v1/stream?channels=a,b; resume with Last-Event-ID. With API keys: header X-API-Key.' },
    },
    channels,
    operations,
    components: { messages },
  };
}
