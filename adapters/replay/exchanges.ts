/**
 * Replay of each exchange's recorded messages (MARKET_SOURCE=replay, one file per exchange:
 * REPLAY_FILE for Deribit, REPLAY_FILE_OKX, REPLAY_FILE_BYBIT): the normalizer and the message-time
 * reader of each source, for {@link ReplayFeed}.
 *
 * - Time of a message (the replay clock): Deribit `params.data.timestamp` / `usOut`
 *   ({@link messageTimeS}); OKX the first data item's `ts` (ms string); Bybit the envelope's `ts`
 *   (ms number). Without one, the line's recorded receive time (tardis `localTimestamp` wrapper or the
 *   cryptofeed prefix), else the clock stays where it is.
 * - Normalizers are STATEFUL for OKX (index/mark/funding joined across channels) and Bybit (snapshot +
 *   delta merging of linear tickers, funding settlement): every replay gets a fresh instance.
 * - OKX's 2021 `opt-summary` format has no `fwdPx` (recorded by tardis-node, 2021-12), and the OKX
 *   normalizer drops such items (`no-forward`). For replay the forward is recovered from OKX's own
 *   printed `deltaBS`, which is the Black-76 delta N(d1) on the forward (docs/conventions.md "Exchange
 *   valuation conventions"): with s = markVol sqrt(T), T from the item's `ts` to the expiry at 08:00 UTC,
 *   and D = deltaBS (call) or deltaBS + 1 (put), F = K exp(s N^-1(D) - s^2 / 2). On OKX's docs example
 *   that prints both (BTC-USD-220309-33000-C/P) the recovered forward is within 1.2 bp of `fwdPx`
 *   (test/adapters/replayExchanges.test.ts). Items that print `fwdPx` are passed through unchanged;
 *   items whose delta is 0 or +-1 (no information) are left without one (and dropped).
 */
import type { MarketClock } from '../../src/domain/clock.js';
import type { Source } from '../../src/domain/markets.js';
import { normInv } from '../../src/quant/normal.js';
import { normalizeDeribit } from '../deribit/normalize.js';
import { bybitNormalizer } from '../bybit/normalize.js';
import { parseOkxInstId } from '../okx/instruments.js';
import { okxNormalizer } from '../okx/normalize.js';
import type { Logger } from '../shared/transport.js';
import type { Normalizer } from '../../src/domain/feeds.js';
import { ReplayFeed, messageTimeS } from './replayFeed.js';

const SECONDS_PER_YEAR = 365 * 86_400;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function msToS(v: unknown): number | null {
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n / 1000 : null;
}

/** Exchange time of an OKX push, Unix s: its first data item's `ts` (ms); null for events and pushes without one. */
export function okxMessageTimeS(raw: unknown): number | null {
  if (!isRecord(raw) || !Array.isArray(raw['data'])) return null;
  const first = raw['data'][0];
  return isRecord(first) ? msToS(first['ts']) : null;
}

/** Exchange time of a Bybit message, Unix s: the envelope `ts` (ms); null for control answers. */
export function bybitMessageTimeS(raw: unknown): number | null {
  return isRecord(raw) ? msToS(raw['ts']) : null;
}

/**
 * The forward implied by an OKX opt-summary item's `deltaBS` (see the module docstring), or null when it
 * cannot be recovered (not an option, missing or degenerate delta/vol, at or after expiry).
 * @returns the forward in USD.
 */
export function okxForwardFromDelta(item: Record<string, unknown>): number | null {
  const p = parseOkxInstId(item['instId']);
  if (!p.ok || p.instrument.type !== 'option') return null;
  const tsS = msToS(item['ts']);
  const sigma = Number(item['markVol']);
  const deltaBS = Number(item['deltaBS']);
  if (tsS === null || !(sigma > 0) || !Number.isFinite(deltaBS) || item['deltaBS'] === '') return null;
  const T = ((p.instrument.expirationTimestamp as number) - tsS) / SECONDS_PER_YEAR;
  if (!(T > 0)) return null;
  const D = p.instrument.optionType === 'C' ? deltaBS : deltaBS + 1;
  if (!(D > 0 && D < 1)) return null;
  const s = sigma * Math.sqrt(T);
  const F = (p.instrument.strike as number) * Math.exp(s * normInv(D) - (s * s) / 2);
  return Number.isFinite(F) && F > 0 ? F : null;
}

/**
 * Wrap an OKX normalizer so that `opt-summary` items without `fwdPx` get the forward recovered from
 * their `deltaBS` ({@link okxForwardFromDelta}); everything else is passed through untouched.
 */
export function withOkxForwardRecovery(normalize: Normalizer): Normalizer {
  return (raw, receivedAtS) => {
    if (isRecord(raw) && isRecord(raw['arg']) && raw['arg']['channel'] === 'opt-summary' && Array.isArray(raw['data'])) {
      let changed = false;
      const data = raw['data'].map((it) => {
        if (!isRecord(it) || (it['fwdPx'] !== undefined && it['fwdPx'] !== '')) return it;
        const F = okxForwardFromDelta(it);
        if (F === null) return it;
        changed = true;
        return { ...it, fwdPx: F.toFixed(8) };
      });
      if (changed) return normalize({ ...raw, data }, receivedAtS);
    }
    return normalize(raw, receivedAtS);
  };
}

/** A fresh replay normalizer and message-time reader of a source (see the module docstring). */
export function replayCodec(source: Source): { normalizer: Normalizer; messageTime: (raw: unknown) => number | null } {
  switch (source) {
    case 'DERIBIT':
      return { normalizer: normalizeDeribit, messageTime: messageTimeS };
    case 'OKX':
      return { normalizer: withOkxForwardRecovery(okxNormalizer()), messageTime: okxMessageTimeS };
    case 'BYBIT':
      return { normalizer: bybitNormalizer(), messageTime: bybitMessageTimeS };
  }
}

/** A {@link ReplayFeed} of one exchange's recorded file, with that exchange's normalizer and message times. */
export function exchangeReplayFeed(source: Source, path: string, clock: MarketClock, speed: number, logger?: Logger): ReplayFeed {
  const codec = replayCodec(source);
  return new ReplayFeed({ path, clock, speed, source, normalizer: codec.normalizer, messageTime: codec.messageTime, ...(logger ? { logger } : {}) });
}
