/**
 * Channel names of the streaming API (docs/streaming.md "Channels"), parsed and put in canonical form (the
 * source's canonical name: `XCHG_A` -> `DERIBIT`, `XCHG_B` -> `OKX`, `XCHG_C` -> `BYBIT`):
 *
 * - `surface.{SOURCE}.{BASE}-{QUOTE}.{MODEL}`: the calibrated surface (the REST `surface` answer);
 * - `iv_summary.{SOURCE}.{BASE}-{QUOTE}.{MODEL}`: the REST `iVSummary` answer;
 * - `iv.{SOURCE}.{BASE}-{QUOTE}.{MODEL}.{strike|delta}.{EXPIRY}.{VALUE}`: the implied vol at one strike (quote
 *   currency) or one forward Black call delta (0 < delta < 1) of one listed or interpolated expiry (Unix seconds);
 *   VALUE may be a list of up to {@link MAX_IV_POINTS} values joined by `_` (`...delta.1798099200.0.25_0.5_0.75`):
 *   one notification then carries every point (`points[]`);
 * - `forward_curve.{SOURCE}.{BASE}-{QUOTE}`: the REST `forwardCurve` answer;
 * - `funding.{SOURCE}.{INSTRUMENT}`: each new funding point of a perpetual (e.g. `BTC-PERPETUAL`);
 * - `status`: feeds connected or not and each pair served, stale or warming up, with since when.
 * MODEL is one of src/domain/volatilityModels.ts VOLATILITY_MODELS (SVI, SABR, VANNA_VOLGA, ESSVI).
 */
import { SUPPORTED_PAIRS, isSupportedPair, resolveSource, type Pair, type Source } from '../../domain/markets.js';
import { VOLATILITY_MODELS, type VolatilityModel } from '../../domain/volatilityModels.js';

/** Kinds of channel. */
export const CHANNEL_KINDS = ['surface', 'iv_summary', 'iv', 'forward_curve', 'funding', 'status'] as const;
/** A kind of channel. */
export type ChannelKind = (typeof CHANNEL_KINDS)[number];

/** A parsed channel; `name` is its canonical name (what notifications carry). */
export type Channel =
  | { readonly kind: 'surface' | 'iv_summary'; readonly name: string; readonly source: Source; readonly pair: Pair; readonly model: VolatilityModel }
  | {
      readonly kind: 'iv';
      readonly name: string;
      readonly source: Source;
      readonly pair: Pair;
      readonly model: VolatilityModel;
      readonly by: 'strike' | 'delta';
      /** Expiry, Unix seconds. */
      readonly expirationTimestamp: number;
      /** Strike (quote currency) or call delta (fraction); the first of {@link values}. */
      readonly value: number;
      /** Every point of the channel, in the order named (one for the single form, up to {@link MAX_IV_POINTS}). */
      readonly values: readonly number[];
    }
  | { readonly kind: 'forward_curve'; readonly name: string; readonly source: Source; readonly pair: Pair }
  | { readonly kind: 'funding'; readonly name: string; readonly source: Source; readonly instrumentId: string }
  | { readonly kind: 'status'; readonly name: 'status' };

/** Longest channel name accepted, characters (room for a list of {@link MAX_IV_POINTS} strikes). */
export const MAX_CHANNEL_LENGTH = 320;

/** Most points of one `iv` channel (`VALUE` as a `_`-separated list); more is a malformed channel (JSON-RPC -32602). */
export const MAX_IV_POINTS = 16;

/** Separator of the values of an `iv` channel's point list. */
export const IV_POINT_SEPARATOR = '_';

/** The surface/iv_summary channel of a snapshot key, canonical. */
export function surfaceChannelName(kind: 'surface' | 'iv_summary', source: Source, pair: Pair, model: VolatilityModel): string {
  return `${kind}.${source}.${pair.base}-${pair.quote}.${model}`;
}

function pairOf(source: Source, text: string | undefined): Pair | string {
  const m = /^([A-Z]+)-([A-Z]+)$/.exec(text ?? '');
  const known = SUPPORTED_PAIRS[source].map((p) => `${p.base}-${p.quote}`).join(', ');
  if (!m) return `pair must be BASE-QUOTE, one of ${known}`;
  const pair = { base: m[1], quote: m[2] } as Pair;
  if (!isSupportedPair(source, pair)) return `${source} does not list ${m[1]}-${m[2]} (it lists ${known})`;
  return pair;
}

function modelOf(text: string | undefined): VolatilityModel | string {
  return (VOLATILITY_MODELS as readonly string[]).includes(text ?? '') ? (text as VolatilityModel) : `model must be one of ${VOLATILITY_MODELS.join(', ')}`;
}

/**
 * Parse a channel name. Never throws: an unknown or malformed name gives `{ error }` with the reason.
 */
export function parseChannel(raw: unknown): { readonly channel: Channel } | { readonly error: string } {
  if (typeof raw !== 'string' || raw.length === 0) return { error: 'a channel is a non-empty string' };
  if (raw.length > MAX_CHANNEL_LENGTH) return { error: `channel name longer than ${MAX_CHANNEL_LENGTH} characters` };
  if (raw === 'status') return { channel: { kind: 'status', name: 'status' } };
  const parts = raw.split('.');
  const kind = parts[0] as ChannelKind;
  if (!(CHANNEL_KINDS as readonly string[]).includes(kind)) return { error: `unknown channel kind "${parts[0]}" (known: ${CHANNEL_KINDS.join(', ')})` };
  const source = resolveSource(parts[1] ?? '');
  if (!source) return { error: `unknown source "${parts[1] ?? ''}" (DERIBIT/XCHG_A, OKX/XCHG_B, BYBIT/XCHG_C)` };
  if (kind === 'funding') {
    const instrumentId = parts.slice(2).join('.');
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(instrumentId)) return { error: 'funding.{SOURCE}.{INSTRUMENT}: instrument id of letters, digits, - and _' };
    return { channel: { kind, name: `funding.${source}.${instrumentId}`, source, instrumentId } };
  }
  const pair = pairOf(source, parts[2]);
  if (typeof pair === 'string') return { error: pair };
  if (kind === 'forward_curve') {
    if (parts.length !== 3) return { error: 'forward_curve.{SOURCE}.{BASE}-{QUOTE} has three parts' };
    return { channel: { kind, name: `forward_curve.${source}.${pair.base}-${pair.quote}`, source, pair } };
  }
  const model = modelOf(parts[3]);
  if (typeof model !== 'string' || !(VOLATILITY_MODELS as readonly string[]).includes(model)) return { error: model as string };
  if (kind === 'surface' || kind === 'iv_summary') {
    if (parts.length !== 4) return { error: `${kind}.{SOURCE}.{BASE}-{QUOTE}.{MODEL} has four parts` };
    return { channel: { kind, name: surfaceChannelName(kind, source, pair, model as VolatilityModel), source, pair, model: model as VolatilityModel } };
  }
  // iv.{SOURCE}.{PAIR}.{MODEL}.{strike|delta}.{EXPIRY}.{VALUE}; VALUE may hold a decimal point
  const by = parts[4];
  if (by !== 'strike' && by !== 'delta') return { error: 'iv.{SOURCE}.{BASE}-{QUOTE}.{MODEL}.{strike|delta}.{EXPIRY}.{VALUE}: fifth part is strike or delta' };
  const expiry = Number(parts[5]);
  if (!/^\d{9,10}$/.test(parts[5] ?? '') || !Number.isSafeInteger(expiry)) return { error: 'iv channel: EXPIRY is Unix seconds' };
  const valueText = parts.slice(6).join('.');
  const values = ivValues(by, valueText);
  if (typeof values === 'string') return { error: values };
  return {
    channel: { kind: 'iv', name: `iv.${source}.${pair.base}-${pair.quote}.${model}.${by}.${expiry}.${valueText}`, source, pair, model: model as VolatilityModel, by, expirationTimestamp: expiry, value: values[0]!, values },
  };
}

/** The VALUE part of an iv channel: one positive decimal or up to MAX_IV_POINTS of them joined by `_`, distinct; deltas in (0, 1). */
function ivValues(by: 'strike' | 'delta', text: string): number[] | string {
  const texts = text.split(IV_POINT_SEPARATOR);
  if (texts.length > MAX_IV_POINTS) return `iv channel: at most ${MAX_IV_POINTS} points per channel (VALUE list of ${texts.length})`;
  const values: number[] = [];
  for (const t of texts) {
    const v = Number(t);
    if (!/^\d+(\.\d+)?$/.test(t) || !Number.isFinite(v) || v <= 0) return 'iv channel: VALUE is a positive decimal number, or several joined by _';
    if (by === 'delta' && !(v < 1)) return 'iv channel: a delta is between 0 and 1 (forward Black call delta)';
    if (values.includes(v)) return `iv channel: point ${t} named twice`;
    values.push(v);
  }
  return values;
}
