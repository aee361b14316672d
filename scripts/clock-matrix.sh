#!/usr/bin/env bash
# Runs the suites that start the simulated market (integration, faults, simulator, the service-backed API
# test) at several simulated start times, to prove the tests do not depend on the hour they run
# (issue 14 section 1). Each start is given to the tests as TEST_SIM_START_TIME (test/helpers/simClock.ts);
# `npm test` itself runs at the default start, Friday 2026-11-27 07:59:40 UTC (a month-end 08:00 expiry
# and a funding settlement 20 s away).
#
# Usage: bash scripts/clock-matrix.sh [OUT_DIR]   (default test-artifacts)
# Writes OUT_DIR/vitest-clock-<label>.json per start; exit 1 when any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-test-artifacts}
mkdir -p "$out"
SUITES=(test/integration test/faults test/simulator test/api/openapiResponses.test.ts)
STARTS=(
  "friday-0755=2026-12-04T07:55:00Z"     # 5 min before a weekly Friday expiry (daily + weekly at 08:00)
  "friday-0800=2026-12-04T08:00:05Z"     # just after it: the new daily is listed, the weekly is gone
  "quarter-end=2026-12-25T07:59:30Z"     # quarterly and monthly expiry, last Friday of the year
  "sunday-midnight=2026-11-29T23:59:30Z" # weekly boundary, funding settlement at 00:00
  "year-end=2026-12-31T23:59:30Z"        # year rollover: date codes, new year's listings
)
rc=0
for s in "${STARTS[@]}"; do
  label=${s%%=*}
  start=${s#*=}
  echo "== clock matrix: $label (TEST_SIM_START_TIME=$start)"
  TEST_SIM_START_TIME=$start npx vitest run "${SUITES[@]}" --reporter=dot --reporter=json --outputFile.json="$out/vitest-clock-$label.json" || rc=1
done
exit $rc
