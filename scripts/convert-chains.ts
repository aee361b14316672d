/**
 * Converts the three recorded full BTC chains (../shared/exchange-samples/deribit, see
 * adapters/replay/chains.ts for each format) into replayable JSON Lines of Deribit WebSocket
 * subscription notifications under data/replay/. Numbers are copied unchanged (pitspa's decimal
 * implied_vol is multiplied back to Deribit's percent). Deterministic: rerunning gives the same bytes.
 *
 * Usage: npx tsx scripts/convert-chains.ts [outDir]   (default data/replay; sources from
 * EXCHANGE_SAMPLES_DIR, default ../shared/exchange-samples beside the repository)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { REPLAY_FILES, readRecordedChain, toReplayLines, type ChainSourceId } from '../adapters/replay/chains.js';

const outDir = process.argv[2] ?? 'data/replay';
mkdirSync(outDir, { recursive: true });
for (const id of Object.keys(REPLAY_FILES) as ChainSourceId[]) {
  const lines = toReplayLines(readRecordedChain(id));
  const file = join(outDir, basename(REPLAY_FILES[id]));
  writeFileSync(file, lines.join('\n') + '\n');
  console.log(`${id}: ${lines.length} lines -> ${file}`);
}
