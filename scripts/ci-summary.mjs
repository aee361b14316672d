// Prints "N passed, N failed[, N skipped]" summed over one or more vitest JSON reports (the line CI reads):
// the main run (npm test) and the clock-matrix runs (scripts/clock-matrix.sh).
// Exit 1 when a report is missing, shows failures, or ran no test.
import { readFileSync } from 'node:fs';

/** The first 300 characters of a failure message, on one line, without colour codes. */
const firstLines = (m) => String(m ?? '').replace(/\x1b\[[0-9;]*m/g, '').replace(/\s+/g, ' ').slice(0, 300);

const files = process.argv.length > 2 ? process.argv.slice(2) : ['test-artifacts/vitest.json'];
let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of files) {
  let report;
  try {
    report = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    console.log(`no vitest report at ${file}: ${err.message}`);
    failed += 1;
    continue;
  }
  const p = report.numPassedTests ?? 0;
  // Suites that failed to load count as failures too.
  const failedSuites = (report.testResults ?? []).filter((r) => r.status === 'failed' && (r.assertionResults ?? []).length === 0).length;
  const f = (report.numFailedTests ?? 0) + failedSuites;
  if (p === 0 && f === 0) {
    console.log(`${file}: ran no test`);
    failed += 1;
  }
  // Name every failure (file, test, first lines of the message) so a CI log that keeps only its tail still
  // says what failed.
  for (const r of report.testResults ?? []) {
    const where = String(r.name ?? '').replace(/^.*?\/test\//, 'test/');
    if (r.status === 'failed' && (r.assertionResults ?? []).length === 0) console.log(`FAILED to load ${where}: ${firstLines(r.message)}`);
    for (const a of r.assertionResults ?? []) {
      if (a.status === 'failed') console.log(`FAILED ${where} > ${a.fullName}: ${firstLines((a.failureMessages ?? []).join(' '))}`);
    }
  }
  if (files.length > 1) console.log(`${file}: ${p} passed, ${f} failed`);
  passed += p;
  failed += f;
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
