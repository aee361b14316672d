/**
 * Documentation of the dashboard's data routes (./dashboard.ts registers them with it): their answers, descriptions
 * and live query examples (src/api/routeDefinition.ts RouteDocs). Kept beside the routes: the state's outline takes
 * more lines than the handlers.
 */
import { z } from 'zod';
import { num, type RouteDocs } from '../routeDefinition.js';

/** The live dashboard's state (src/dashboard/state.ts DashboardState), in outline. */
const DashboardStateResult = z.object({
  selection: z
    .object({ source: z.string(), baseCurrency: z.string(), quoteCurrency: z.string(), volatilityModel: z.string() })
    .nullable()
    .describe('The (source, pair, model) shown; null while nothing is known yet'),
  options: z.array(z.object({ source: z.string(), pair: z.string(), models: z.array(z.string()).describe('Models with a calibrated surface') })).describe('Every (source, pair) known, with the models held'),
  generatedAt: num().describe('Wall-clock time the state was built, Unix seconds'),
  asOf: num().nullable().describe('The past time shown (query asOf, Unix seconds): the surface, curve and 24 h reference served then, from the history store; null when live'),
  unavailable: z
    .object({ reason: z.string().describe('not-connected, warming-up or stale'), message: z.string().describe('The 503 message of the API') })
    .nullable().describe('Why the API answers 503 for the selection now (its reason and message), or null'),
  market: z
    .object({
      mode: z.enum(['live', 'simulated', 'replay', 'replica']).describe('live exchanges, embedded simulators, replayed recordings (historical data), or a Kafka replica'),
      finished: z.boolean().optional().describe('Replay: the recording has been replayed to its end'),
    })
    .describe('How the service gets its data'),
  surface: z.record(z.string(), z.unknown()).nullable().describe('Smiles (market mark/bid/ask IVs, fitted curve of each model) and the ATM term structure with 25D/10D RR and BF; null before the first calibration'),
  forwardCurve: z.record(z.string(), z.unknown()).nullable().describe('Listed forward points with their annualized basis, and the constant maturities'),
  funding: z.array(z.record(z.string(), z.unknown())).describe('Funding history (oldest first, at most 240 points) of each perpetual of the pair'),
  feeds: z.array(z.record(z.string(), z.unknown())).describe('Feed-status panel: per exchange connected, messages/s, last message age, reconnects, dropped, stale and warming-up pairs'),
});

/** GET /dashboard/api/history answer: one series of the selection. */
const DashboardHistoryResult = z.object({
  selection: z.object({ source: z.string(), baseCurrency: z.string(), quoteCurrency: z.string(), volatilityModel: z.string() }).nullable().describe('The (source, pair, model) of the series; null while nothing is known yet'),
  origin: z.enum(['store', 'memory']).optional().describe('Where the points come from: the history store, or the in-memory history'),
  from: num().optional().describe('Start of the range, Unix seconds'),
  to: num().optional().describe('End of the range (now, or asOf), Unix seconds'),
  intervalS: num().optional().describe('One point per this many seconds (the first of each)'),
  points: z.array(z.object({ t: num().describe('Observation time, Unix seconds'), atmVol: num().nullable(), delta25Skew: num().nullable(), delta25Bfly: num().nullable(), delta10Skew: num().nullable(), delta10Bfly: num().nullable() })),
});

/** GET /dashboard/api/state: description. */
const DASHBOARD_STATE_DESCRIPTION =
  'The live dashboard state of one (source, pair, model): smiles (mark, bid and ask IVs with call deltas, the fitted curve and fit diagnostics of every model held), ATM term structure with 25D/10D risk reversals and butterflies and their 24 h changes, constant maturities, forward curve, funding history (with periods per year) and feed status. With `asOf` (Unix seconds): the state as served then, from the history store (404 with the kept range when nothing was served then; 400 for a future time). Missing query fields default to the first expected pair (DERIBIT BTC/USD) and SVI. With API keys configured it needs header X-API-Key or the dashboard session cookie (set by logging in at /login).';
/** GET /dashboard/api/state: answer, errors, the example market's query (SVI). */
const dashboardStateDocs: RouteDocs = { response: DashboardStateResult, errors: [400, 401, 404, 503], live: { query: (ctx) => ({ ...ctx.pairQuery, model: 'SVI' }) } };

/** GET /dashboard/api/history: description. */
const DASHBOARD_HISTORY_DESCRIPTION =
  'The 25 h history before now (or before `asOf`) of ATM vol and 25D/10D risk reversal and butterfly, one point per 5 min (oldest first), for one listed expiry (`expiry`) or one constant maturity (`constMat`) of the selection: read from the history store when there is one (the points GET iVSummary/history answers at interval 5m), else from the in-memory 24 h history. With `asOf` and no store: 404.';
/** GET /dashboard/api/history: answer and errors. */
const dashboardHistoryDocs: RouteDocs = { response: DashboardHistoryResult, errors: [400, 404, 503] };

/** GET /dashboard/api/stream: description. */
const DASHBOARD_STREAM_DESCRIPTION =
  'Server-Sent Events (text/event-stream, gzip when accepted) of the same state: a `state` event (the full state and `focusExpiry`) at connection and when the selection or the models held change, then `patch` events with what changed (the focused expiry at every check, other smiles at most every 5 s, new funding points), and `feeds` events with the feed rows that changed. Checked every second. With API keys configured it needs header X-API-Key or the dashboard session cookie (set by logging in at /login); a stream opened with a session is closed when the session expires or logs out.';
/** GET /dashboard/api/stream: Server-Sent Events, and its errors. */
const dashboardStreamDocs: RouteDocs = { responseContentType: 'text/event-stream', errors: [400, 401] };

/** The schema members of GET /dashboard/api/state beside its summary and query: tags, description, documentation. */
export const DASHBOARD_STATE_SCHEMA_DOCS = { tags: ['monitoring'], description: DASHBOARD_STATE_DESCRIPTION, docs: dashboardStateDocs };
/** The schema members of GET /dashboard/api/history beside its summary and query. */
export const DASHBOARD_HISTORY_SCHEMA_DOCS = { tags: ['monitoring'], description: DASHBOARD_HISTORY_DESCRIPTION, docs: dashboardHistoryDocs };
/** The schema members of GET /dashboard/api/stream beside its summary and query. */
export const DASHBOARD_STREAM_SCHEMA_DOCS = { tags: ['monitoring'], description: DASHBOARD_STREAM_DESCRIPTION, docs: dashboardStreamDocs };
