/**
 * Loading of the recorded exchange fixtures in test/fixtures/<venue>/ (copied from
 * ../shared/exchange-samples, see each folder's README.md) and the small result helpers the
 * normalizer tests share.
 */
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { expect } from 'vitest';
import type { NormalizeResult } from '../../src/domain/feeds.js';
import { MarketEventSchema, type MarketEvent } from '../../src/domain/events.js';

/** A fixture folder under test/fixtures. */
export type FixtureVenue = 'deribit' | 'okx' | 'bybit';

/** The text of test/fixtures/<venue>/<name>. */
export function fixtureText(venue: FixtureVenue, name: string): string {
  return readFileSync(new URL(`../fixtures/${venue}/${name}`, import.meta.url), 'utf8');
}

/** The non-blank lines of a JSON-lines fixture, each parsed. */
export function fixtureLines(venue: FixtureVenue, name: string): Record<string, unknown>[] {
  return fixtureText(venue, name)
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The `examples` of the venue's docs-examples.json (exchange documentation examples, by title). */
export function docsExamples(venue: FixtureVenue): Record<string, Record<string, unknown>> {
  return (JSON.parse(fixtureText(venue, 'docs-examples.json')) as { examples: Record<string, Record<string, unknown>> }).examples;
}

/** A deep copy of a JSON value (to mutate a recorded message in a test). */
export function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** The events of an ok result, each checked against MarketEventSchema; throws (fails the test) on a drop. */
export function events(r: NormalizeResult): readonly MarketEvent[] {
  if (!r.ok) throw new Error(`expected ok, got ${r.kind}: ${r.detail}`);
  for (const ev of r.events) expect(MarketEventSchema.safeParse(ev).success).toBe(true);
  return r.events;
}

/** The drop label of a result, expecting a drop. */
export function dropKind(r: NormalizeResult): string {
  expect(r.ok).toBe(false);
  return r.ok ? '' : r.kind;
}

/**
 * The text of an exchange sample kept verbatim in test/fixtures/samples/<venue>/<name> (copied from the team's
 * shared exchange samples under the same name; the largest are stored gzip-compressed as `<name>.gz`, read here
 * transparently). See test/fixtures/samples/README.md.
 */
export function sampleText(venue: FixtureVenue, name: string): string {
  const base = new URL(`../fixtures/samples/${venue}/${name}`, import.meta.url);
  if (existsSync(base)) return readFileSync(base, 'utf8');
  return gunzipSync(readFileSync(new URL(`${base.href}.gz`))).toString('utf8');
}

/** {@link sampleText} parsed as JSON. */
export function sampleJson<T = any>(venue: FixtureVenue, name: string): T {
  return JSON.parse(sampleText(venue, name)) as T;
}
