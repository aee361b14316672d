/**
 * Regenerate the JSON Schema section of docs/events.md from the zod schemas (src/kafka/schemas.ts).
 * Usage: `npx tsx scripts/gen-events-doc.ts` (writes) or `npx tsx scripts/gen-events-doc.ts --check` (exit 1 if stale).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderEventSchemasSection, replaceGeneratedSection } from '../src/kafka/eventsDoc.js';

const path = new URL('../docs/events.md', import.meta.url);
const doc = readFileSync(path, 'utf8');
const next = replaceGeneratedSection(doc, renderEventSchemasSection());
if (process.argv.includes('--check')) {
  if (next !== doc) {
    process.stderr.write('docs/events.md is out of date: run npx tsx scripts/gen-events-doc.ts\n');
    process.exit(1);
  }
  process.stdout.write('docs/events.md is up to date\n');
} else if (next !== doc) {
  writeFileSync(path, next);
  process.stdout.write('docs/events.md updated\n');
} else {
  process.stdout.write('docs/events.md already up to date\n');
}
