/**
 * The generated part of docs/events.md: the JSON Schemas of the Kafka documents, rendered from the zod schemas of
 * src/kafka/schemas.ts (zod 4 `z.toJSONSchema`). scripts/gen-events-doc.ts writes it; test/kafka/schemas.test.ts
 * checks the doc is up to date.
 */
import { eventJsonSchemas } from './schemas.js';

export const GENERATED_BEGIN = '<!-- BEGIN GENERATED: event JSON Schemas (npx tsx scripts/gen-events-doc.ts) -->';
export const GENERATED_END = '<!-- END GENERATED -->';

/** Markdown of the schema section, markers included. */
export function renderEventSchemasSection(): string {
  const schemas = eventJsonSchemas();
  const parts = [GENERATED_BEGIN, ''];
  for (const [topic, schema] of Object.entries(schemas)) {
    parts.push(`### \`${topic}\``, '', '```json', JSON.stringify(schema, null, 2), '```', '');
  }
  parts.push(GENERATED_END);
  return parts.join('\n');
}

/**
 * `doc` with its generated section replaced by `section`.
 * @throws Error when the doc has no (or a malformed) marker pair
 */
export function replaceGeneratedSection(doc: string, section: string): string {
  const a = doc.indexOf(GENERATED_BEGIN);
  const b = doc.indexOf(GENERATED_END);
  if (a < 0 || b < a) throw new Error('docs/events.md: generated-section markers missing');
  return doc.slice(0, a) + section + doc.slice(b + GENERATED_END.length);
}
