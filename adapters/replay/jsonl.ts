/**
 * Reading recorded exchange messages, one per line (JSON Lines).
 *
 * Accepted line shapes (test/fixtures/<venue>/README.md):
 * - a raw message: `{"jsonrpc":"2.0","method":"subscription",...}`;
 * - cryptofeed's capture line `<recv_epoch_s>: <json>` (e.g. `1626993723.804855: {...}`), the
 *   prefix being the local receive time in Unix seconds;
 * - tardis-style wrappers `{"localTimestamp": "<ISO time>", "message": {...}}`.
 * Skipped (not messages): blank lines, cryptofeed's connection lines (`wss://... <-> <t>`) and the
 * client's own outgoing requests (`wss://... <- <t>: {...}`).
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/** One classified line. `recvS` is the recorded local receive time (Unix s) when the line carries one. */
export type JsonlLine =
  | { readonly kind: 'message'; readonly value: unknown; readonly recvS: number | null }
  | { readonly kind: 'skip'; readonly reason: string }
  | { readonly kind: 'bad'; readonly detail: string };

const PREFIX_RE = /^(\d{9,11}(?:\.\d+)?):\s?(.*)$/s;
const URL_LINE_RE = /^wss?:\/\/\S+\s+(<->|<-|->)/;

/** Classify one line (see the module docstring). Never throws. */
export function parseJsonlLine(line: string): JsonlLine {
  const t = line.trim();
  if (t === '') return { kind: 'skip', reason: 'blank' };
  const url = URL_LINE_RE.exec(t);
  if (url) return { kind: 'skip', reason: url[1] === '<->' ? 'connection' : 'outgoing' };
  let body = t;
  let recvS: number | null = null;
  const m = PREFIX_RE.exec(t);
  if (m) {
    recvS = Number(m[1]);
    body = m[2] as string;
  }
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return { kind: 'bad', detail: `invalid JSON: ${t.slice(0, 120)}` };
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const w = value as Record<string, unknown>;
    if ('localTimestamp' in w && 'message' in w && Object.keys(w).length === 2) {
      const lt = typeof w['localTimestamp'] === 'string' ? Date.parse(w['localTimestamp']) : NaN;
      return { kind: 'message', value: w['message'], recvS: Number.isFinite(lt) ? lt / 1000 : recvS };
    }
  }
  return { kind: 'message', value, recvS };
}

/** The lines of a text file, streamed (no size limit). Rejects on a read error (e.g. missing file). */
export async function* readLines(path: string): AsyncGenerator<string> {
  const rl = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  try {
    for await (const line of rl) yield line;
  } finally {
    rl.close();
  }
}
