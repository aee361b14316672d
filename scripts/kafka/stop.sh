#!/usr/bin/env bash
# Stop the project's local Kafka broker started by scripts/kafka/start.sh, by PID only:
# SIGTERM (controlled shutdown), wait up to KAFKA_STOP_TIMEOUT s (default 30), then SIGKILL.
# Usage: bash scripts/kafka/stop.sh          (npm run kafka:stop)
# Env: KAFKA_PORT (default 19092), KAFKA_STOP_TIMEOUT, KAFKA_CLEAN=1 also deletes the data dir and log.
# Idempotent: no PID file, or a dead PID, is success.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"

[[ -d "$CACHE" ]] || { echo "No Kafka broker recorded for port $PORT (no $CACHE)"; exit 0; }
exec 9>"$LOCKFILE"
flock -w 120 9 || die $EXIT_FAIL "port $PORT: timed out waiting for $LOCKFILE (a start in progress?)"

# The owner watchdog (if any) is no longer needed; do not kill it if it is the one calling us.
if [[ -f "$WATCHFILE" ]]; then
  W="$(cat "$WATCHFILE")"
  if [[ "$W" =~ ^[0-9]+$ && "$W" != "$PPID" ]]; then kill -TERM "$W" 2>/dev/null || true; fi
  rm -f "$WATCHFILE"
fi

clean() {
  if [[ "${KAFKA_CLEAN:-0}" == 1 ]]; then rm -rf "$DATA" "$LOGFILE"; fi
}

if [[ ! -f "$PIDFILE" ]]; then
  echo "No Kafka broker recorded for port $PORT (no PID file); nothing to stop"
  clean
  exit 0
fi
PID="$(cat "$PIDFILE")"
if ! is_our_broker "$PID"; then
  echo "Kafka broker pid $PID (port $PORT) is not running; removed stale PID file"
  rm -f "$PIDFILE"
  clean
  exit 0
fi

T0=$(date +%s%N)
kill -TERM "$PID" 2>/dev/null || true
deadline=$(( $(date +%s) + STOP_TIMEOUT ))
while kill -0 "$PID" 2>/dev/null && (( $(date +%s) < deadline )); do sleep 0.1; done
how="SIGTERM"
if kill -0 "$PID" 2>/dev/null; then
  echo "kafka: broker pid $PID still alive after ${STOP_TIMEOUT} s, sending SIGKILL" >&2
  kill -KILL "$PID" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  how="SIGKILL"
fi
if kill -0 "$PID" 2>/dev/null; then
  die $EXIT_FAIL "broker pid $PID survived SIGKILL"
fi
rm -f "$PIDFILE"
clean
echo "Kafka broker on 127.0.0.1:$PORT stopped (pid $PID, $how, $(awk -v a="$T0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s)"
