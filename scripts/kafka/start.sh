#!/usr/bin/env bash
# Start the project's own single-node Apache Kafka 3.9.1 broker (KRaft, broker+controller combined)
# on 127.0.0.1, without Docker: jars from Maven Central, plain `java`.
# Recipe: /work/shared/kafka-local.md sections 2-3.
#
# Usage: bash scripts/kafka/start.sh          (npm run kafka:start)
# Env:
#   KAFKA_PORT             client (PLAINTEXT) port, default 19092
#   KAFKA_CONTROLLER_PORT  KRaft controller port, default KAFKA_PORT+1 (never give it to clients)
#   KAFKA_READY_TIMEOUT    seconds to wait for a real client round trip, default 60
#   KAFKA_HEAP_OPTS        default "-Xms256m -Xmx512m"
#   KAFKA_JVM_OPTS         extra JVM flags appended to the defaults
#   KAFKA_EXCLUSIVE=1      fail with exit 4 instead of reusing a broker already running on KAFKA_PORT
#   KAFKA_OWNER_PID        if set, a watchdog stops the broker once that process exits (test runners)
# Idempotent: if the broker recorded in .cache/kafka/broker-<port>.pid is alive and answers, says so, exit 0.
# Exit codes: 0 ready, 1 failed to come up (log tail printed), 3 java/mvn/node missing, 4 port busy.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

T0=$(date +%s%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
READY_TIMEOUT="${KAFKA_READY_TIMEOUT:-60}"

command -v java >/dev/null 2>&1 || die $EXIT_PREREQ "no java on PATH: the Kafka broker needs a JRE (8/11/17), e.g. apt-get install openjdk-17-jre-headless"
command -v node >/dev/null 2>&1 || die $EXIT_PREREQ "no node on PATH (needed for the readiness probe scripts/kafka/wait-ready.mjs)"
[[ -d "$REPO/node_modules/kafkajs" ]] || die $EXIT_PREREQ "kafkajs is not installed in $REPO/node_modules: run npm ci"
mkdir -p "$CACHE"

# ---- 1. broker jars (skipped when cached for this exact pom) ----------------------------------------
POM_SUM="$(sha256sum "$KAFKA_SCRIPTS/pom.xml" | cut -d' ' -f1)"
fetch_jars() {
  if [[ -f "$LIBS/.pom.sha256" && "$(cat "$LIBS/.pom.sha256")" == "$POM_SUM" ]]; then return 0; fi
  command -v mvn >/dev/null 2>&1 || die $EXIT_PREREQ "no mvn on PATH and no cached jars in $LIBS: install Maven (apt-get install maven)"
  local tmp="$CACHE/libs.tmp.$$" t=$(date +%s%N) out
  rm -rf "$tmp"
  echo "kafka: fetching Apache Kafka broker jars with Maven into $LIBS ..."
  if ! out="$(mvn -B -q -f "$KAFKA_SCRIPTS/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$tmp" 2>&1)"; then
    rm -rf "$tmp"
    echo "$out" | tail -n 30 >&2
    die $EXIT_FAIL "mvn dependency:copy-dependencies failed (see above)"
  fi
  ls "$tmp"/kafka_2.13-*.jar >/dev/null 2>&1 || { rm -rf "$tmp"; die $EXIT_FAIL "Maven finished but $tmp has no kafka_2.13 jar"; }
  echo "$POM_SUM" > "$tmp/.pom.sha256"
  rm -rf "$LIBS"
  mv "$tmp" "$LIBS"
  echo "kafka: jars fetched ($(ls "$LIBS"/*.jar | wc -l) jars, $(du -sh "$LIBS" | cut -f1)) in $(awk -v a="$t" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s"
}
(
  flock -w 600 8 || die $EXIT_FAIL "timed out waiting for another jar fetch ($CACHE/libs.lock)"
  fetch_jars
) 8>"$CACHE/libs.lock"

# ---- 2. one start at a time per port ---------------------------------------------------------------
exec 9>"$LOCKFILE"
if [[ "${KAFKA_EXCLUSIVE:-0}" == 1 ]]; then
  flock -n 9 || die $EXIT_BUSY "port $PORT: another start/stop holds $LOCKFILE"
else
  flock -w 180 9 || die $EXIT_FAIL "port $PORT: timed out waiting for $LOCKFILE"
fi

if [[ -f "$PIDFILE" ]]; then
  OLD="$(cat "$PIDFILE")"
  if is_our_broker "$OLD"; then
    [[ "${KAFKA_EXCLUSIVE:-0}" == 1 ]] && die $EXIT_BUSY "port $PORT: a broker (pid $OLD) is already running"
    if node "$KAFKA_SCRIPTS/wait-ready.mjs" "127.0.0.1:$PORT" "$READY_TIMEOUT" "$OLD"; then
      echo "Kafka already running on 127.0.0.1:$PORT (pid $OLD), answering; nothing to do"
      exit 0
    fi
    log_tail
    die $EXIT_FAIL "broker pid $OLD is alive but does not answer on 127.0.0.1:$PORT; run: KAFKA_PORT=$PORT bash scripts/kafka/stop.sh"
  fi
  echo "kafka: removing stale PID file $PIDFILE (pid $OLD is not running)"
  rm -f "$PIDFILE"
fi

port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
for p in "$PORT" "$CPORT"; do
  port_open "$p" && die $EXIT_BUSY "port 127.0.0.1:$p is already in use by another process (not a broker recorded in $CACHE); choose another KAFKA_PORT"
done

# ---- 3. fresh data dir + config ---------------------------------------------------------------------
rm -rf "$DATA"
mkdir -p "$DATA"
sed -e "s#@LOG_DIR@#$DATA/logs#" -e "s#@PORT@#$PORT#g" -e "s#@CPORT@#$CPORT#g" \
  "$KAFKA_SCRIPTS/server.properties.template" > "$DATA/server.properties"

# JVM flags from the Kafka start scripts (kafka-run-class.sh), trimmed for a 2-core box.
# KAFKA_HEAP_OPTS / KAFKA_JVM_OPTS are word-split on purpose (lists of flags); repo paths stay one word.
read -r -a HEAP <<< "${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
read -r -a EXTRA <<< "${KAFKA_JVM_OPTS:-}"
JVM=("${HEAP[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExplicitGCInvokesConcurrent
  -Djava.awt.headless=true "-Dlog4j.configuration=file:$KAFKA_SCRIPTS/log4j.properties" ${EXTRA[@]+"${EXTRA[@]}"})
CP="$LIBS/*"

# ---- 4. format storage (static quorum via controller.quorum.voters: no --standalone) ------------------
# Cluster id: 16 random bytes, base64url without padding (22 chars) = Kafka's Uuid.toString(); Kafka's
# own Uuid.randomUuid() also rejects ids starting with '-'. Generated in node to save one JVM start.
CID="$(node -e "const c=require('crypto');let s;do{s=c.randomBytes(16).toString('base64url')}while(s[0]==='-');process.stdout.write(s)")"
: > "$LOGFILE"
if ! java "${JVM[@]}" -cp "$CP" kafka.tools.StorageTool format -t "$CID" -c "$DATA/server.properties" \
      --ignore-formatted >> "$LOGFILE" 2>&1; then
  log_tail
  die $EXIT_FAIL "kafka.tools.StorageTool format failed"
fi

# ---- 5. start the broker, detached (own session; lock fd closed so it does not hold the port lock) --
setsid bash -c 'echo $$ > "$1"; shift; exec "$@"' _ "$PIDFILE" \
  java "${JVM[@]}" -cp "$CP" kafka.Kafka "$DATA/server.properties" \
  >> "$LOGFILE" 2>&1 < /dev/null 9>&- &
for _ in $(seq 1 50); do [[ -s "$PIDFILE" ]] && break; sleep 0.1; done
PID="$(cat "$PIDFILE" 2>/dev/null || true)"
[[ -n "$PID" ]] || die $EXIT_FAIL "broker process did not record its PID in $PIDFILE"

stop_failed_broker() {
  if kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PID" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

# ---- 6. wait until a real client answers ------------------------------------------------------------
if ! node "$KAFKA_SCRIPTS/wait-ready.mjs" "127.0.0.1:$PORT" "$READY_TIMEOUT" "$PID"; then
  log_tail
  if kill -0 "$PID" 2>/dev/null; then
    stop_failed_broker
    die $EXIT_FAIL "broker on 127.0.0.1:$PORT did not answer within ${READY_TIMEOUT} s (stopped it; full log: $LOGFILE)"
  fi
  rm -f "$PIDFILE"
  die $EXIT_FAIL "broker process $PID exited during startup (full log: $LOGFILE)"
fi

# ---- 7. optional watchdog: stop the broker when the owning process (e.g. vitest) exits -----------------
if [[ -n "${KAFKA_OWNER_PID:-}" ]]; then
  setsid bash -c '
    owner="$1"; broker="$2"; watchfile="$3"; stop="$4"
    while kill -0 "$owner" 2>/dev/null && kill -0 "$broker" 2>/dev/null; do sleep 1; done
    rm -f "$watchfile"
    if kill -0 "$broker" 2>/dev/null; then bash "$stop" >/dev/null 2>&1; fi
  ' _ "$KAFKA_OWNER_PID" "$PID" "$WATCHFILE" "$KAFKA_SCRIPTS/stop.sh" \
    > /dev/null 2>&1 < /dev/null 9>&- &
  echo $! > "$WATCHFILE"
fi

echo "Kafka ready on 127.0.0.1:$PORT in $(elapsed) s (pid $PID, controller 127.0.0.1:$CPORT, log $LOGFILE)"
