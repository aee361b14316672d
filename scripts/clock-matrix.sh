#!/usr/bin/env bash
# Runs the suites that start the simulated market (integration, faults, simulator, and the API, metrics and
# security suites that start the service) again under other clocks, to prove the tests depend neither on the
# hour they simulate nor on the day they run (issues 14 and 21). Two kinds of rows:
#
# - the SIMULATED start moves (TEST_SIM_START_TIME, read by test/helpers/simClock.ts): around a Friday 08:00
#   expiry, a quarter end, a Sunday midnight, a year end. `npm test` itself runs at the default start,
#   Friday 2026-11-27 07:59:40 UTC (a month-end 08:00 expiry and a funding settlement 20 s away).
# - the WALL clock moves (Debian's libfaketime, `faketime`), the simulated start staying at its default: one
#   year after it and one month before it. A test that compares a simulated time with Date.now() then fails on
#   the day it is written instead of the day the wall clock passes the pinned start. The faked time reaches
#   this process's children, vitest's forks, their worker threads and child processes (LD_PRELOAD is
#   inherited): test/domain/wallClock.test.ts checks and prints it in each such run (FAKE_WALL_CLOCK).
#   The Kafka suites do not run under faketime (the broker is a JVM on the real clock); they run once with the
#   simulated start a year BEFORE today's wall clock instead, which puts the same distance between the
#   simulated times the tests produce and the clock the broker and the tests read.
#
# Usage: bash scripts/clock-matrix.sh [OUT_DIR]   (default test-artifacts)
#        CLOCK_MATRIX_ONLY=label[,label]  runs only those rows (e.g. wall-year-later)
# Writes OUT_DIR/vitest-clock-<label>.json per row; exit 1 when any run failed (or faketime is missing).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-test-artifacts}
mkdir -p "$out"
SUITES=(test/integration test/faults test/simulator test/api/openapiResponses.test.ts test/metrics/metricsEndpoint.test.ts
  test/security/access.test.ts test/domain/wallClock.test.ts test/history)
SIM_STARTS=(
  "friday-0755=2026-12-04T07:55:00Z"     # 5 min before a weekly Friday expiry (daily + weekly at 08:00)
  "friday-0800=2026-12-04T08:00:05Z"     # just after it: the new daily is listed, the weekly is gone
  "quarter-end=2026-12-25T07:59:30Z"     # quarterly and monthly expiry, last Friday of the year
  "sunday-midnight=2026-11-29T23:59:30Z" # weekly boundary, funding settlement at 00:00
  "year-end=2026-12-31T23:59:30Z"        # year rollover: date codes, new year's listings
)
WALLS=(
  "wall-year-later=2027-11-28T12:00:00Z"    # a year after the simulated start (the wall clock passed it long ago)
  "wall-month-earlier=2026-10-27T12:00:00Z" # a month before it (the wall clock has not reached it yet)
)
# the last Friday of November a year before the real date: a month-end 08:00 expiry 20 s away, like the default
kafka_start=$(node -e '
  const y = new Date().getUTCFullYear() - 1;
  const d = new Date(Date.UTC(y, 11, 0)); // last day of November
  d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 2) % 7)); // back to its Friday
  process.stdout.write(d.toISOString().slice(0, 10) + "T07:59:40Z");')

only=${CLOCK_MATRIX_ONLY:-}
want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
rc=0
run() { # label, then the command's prefix (env assignments / faketime), then the suites
  local label=$1
  shift
  want "$label" || return 0
  echo "== clock matrix: $label ($*)"
  local t0=$SECONDS
  "$@" --reporter=dot --reporter=json --outputFile.json="$out/vitest-clock-$label.json" || rc=1
  echo "== clock matrix: $label done in $((SECONDS - t0)) s"
}
for s in "${SIM_STARTS[@]}"; do
  run "${s%%=*}" env TEST_SIM_START_TIME="${s#*=}" npx vitest run "${SUITES[@]}"
done
if command -v faketime >/dev/null; then
  for w in "${WALLS[@]}"; do
    iso=${w#*=}
    # libfaketime as the faketime wrapper sets it (a relative offset in seconds, the same in every process), but the
    # offset is computed from the REAL clock (date without the preload), so that a row still fakes the time it
    # names when this script itself runs under faketime (a whole .ci/run with the wall clock faked)
    offset=$(($(date -u -d "$iso" +%s) - $(env -u LD_PRELOAD date -u +%s)))
    [ "$offset" -lt 0 ] && offset="-$((-offset))" || offset="+$offset"
    run "${w%%=*}" env -u FAKETIME_SHARED FAKE_WALL_CLOCK="$iso" LD_PRELOAD='/usr/$LIB/faketime/libfaketime.so.1' FAKETIME="$offset" \
      npx vitest run "${SUITES[@]}"
  done
else
  echo "clock matrix: faketime is missing (Debian package faketime; .ci/run installs it): wall-clock rows not run"
  rc=1
fi
run kafka-sim-year-earlier env TEST_SIM_START_TIME="$kafka_start" npx vitest run test/kafka
exit $rc
