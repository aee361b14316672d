#!/usr/bin/env bash
# Schemathesis (the OpenAPI property-based fuzzer) against the running service (issue 14 section 2).
#
# 1. installs Schemathesis $SCHEMATHESIS_VERSION from PyPI into a local venv under .cache/ (gitignored) once;
# 2. starts the service on its simulated default as `npm start` does (the production build in .cache/schemathesis-dist,
#    scripts/build.mjs, run with the start script's node flags) on 127.0.0.1, on a free port, and waits for GET /ready
#    (every configured pair calibrated);
# 3. runs `schemathesis run` against its /openapi.json: the coverage and fuzzing phases, a fixed seed, a
#    bounded number of examples per operation, and the checks in $CHECKS;
# 4. stops the service and exits with Schemathesis's status (0 = no failure). The JSON run report is
#    written to $OUT/report.json (test/contract/schemathesis.test.ts reads it).
#
# Settings for this run only (the fuzz is about the request contract; each protection has its own tests in
# test/security and test/integration): RATE_LIMIT_MAX=0 (the fuzzer's few thousand requests would otherwise meet
# the default 3000/min limit), OVERLOAD_MAX_EVENT_LOOP_DELAY_MS=0 (on a loaded CI machine the overload guard's
# documented 503 would count as a server error), STALE_AFTER_S=600 (likewise for a simulator slowed by load). GET /dashboard/api/stream and
# GET /api/v1/stream are endless Server-Sent Events streams, which an HTTP fuzzer cannot read to the end: they are excluded (they have
# their own tests in test/metrics, test/e2e and test/integration/stream.test.ts).
# One worker: with two, Hypothesis (Python 3.11) now and then fails on its own in its lambda-source AST cache
# ("AST constructor recursion depth mismatch"), reported as a Schemathesis runtime error.
# Environment: SCHEMATHESIS_MAX_EXAMPLES (default 25), SCHEMATHESIS_SEED (default 14), SCHEMATHESIS_OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
VENV=.cache/schemathesis-venv
OUT=${SCHEMATHESIS_OUT:-.cache/schemathesis}
MAX_EXAMPLES=${SCHEMATHESIS_MAX_EXAMPLES:-25}
SEED=${SCHEMATHESIS_SEED:-14}
CHECKS=not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance,unsupported_method
mkdir -p "$OUT"

command -v python3 >/dev/null || { echo "schemathesis.sh: python3 is missing" >&2; exit 3; }
if [ ! -x "$VENV/bin/schemathesis" ] || [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null)" != "$SCHEMATHESIS_VERSION" ]; then
  echo "== installing schemathesis $SCHEMATHESIS_VERSION into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
BASE="http://127.0.0.1:$PORT"
echo "== starting the service (simulated default) on $BASE"
node scripts/build.mjs .cache/schemathesis-dist >/dev/null
# the node flags of `npm start` (package.json "start": ... node <flags> dist/src/main.js)
read -r -a START_FLAGS <<<"$(node scripts/startFlags.mjs)"
HISTORY_DIR="$OUT/history" PORT=$PORT HOST=127.0.0.1 RATE_LIMIT_MAX=0 OVERLOAD_MAX_EVENT_LOOP_DELAY_MS=0 STALE_AFTER_S=600 LOG_LEVEL=warn node "${START_FLAGS[@]}" .cache/schemathesis-dist/src/main.js >"$OUT/service.log" 2>&1 &
SVC=$!
cleanup() {
  kill -TERM "$SVC" 2>/dev/null || true
  wait "$SVC" 2>/dev/null || true
}
trap cleanup EXIT

for _ in $(seq 1 600); do
  if ! kill -0 "$SVC" 2>/dev/null; then
    echo "schemathesis.sh: the service exited before it was ready:" >&2
    tail -n 30 "$OUT/service.log" >&2
    exit 4
  fi
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/ready" || true)" = 200 ]; then break; fi
  sleep 0.5
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/ready" || true)" = 200 ] || { echo "schemathesis.sh: not ready after 300 s" >&2; exit 4; }
echo "== ready; running schemathesis $SCHEMATHESIS_VERSION (seed $SEED, at most $MAX_EXAMPLES examples per operation)"

rc=0
"$VENV/bin/schemathesis" --no-color --config-file scripts/schemathesis.toml run "$BASE/openapi.json" \
  --phases coverage,fuzzing \
  --checks "$CHECKS" \
  --seed "$SEED" \
  --max-examples "$MAX_EXAMPLES" \
  --exclude-path /dashboard/api/stream \
  --exclude-path /api/v1/stream \
  --request-timeout 30 \
  --workers 1 \
  --suppress-health-check too_slow,filter_too_much \
  --report json --report-json-path "$OUT/report.json" || rc=$?
exit $rc
