# Shared settings for scripts/kafka/start.sh and stop.sh (sourced, not executed).
# Everything lives under $REPO/.cache/kafka (gitignored):
#   libs/                    broker jars from Maven Central (scripts/kafka/pom.xml), stamp libs/.pom.sha256
#   data-<port>/             fresh KRaft data dir + server.properties of the broker on <port>
#   broker-<port>.pid        PID of the broker JVM
#   broker-<port>.log        broker stdout/stderr (reload4j console appender)
#   broker-<port>.lock       flock serializing start/stop for one port
#   broker-<port>.watchdog   PID of the optional owner watchdog (KAFKA_OWNER_PID)
KAFKA_SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$KAFKA_SCRIPTS/../.." && pwd)"
CACHE="$REPO/.cache/kafka"
LIBS="$CACHE/libs"
PORT="${KAFKA_PORT:-19092}"
CPORT="${KAFKA_CONTROLLER_PORT:-$((PORT + 1))}"
DATA="$CACHE/data-$PORT"
PIDFILE="$CACHE/broker-$PORT.pid"
LOGFILE="$CACHE/broker-$PORT.log"
LOCKFILE="$CACHE/broker-$PORT.lock"
WATCHFILE="$CACHE/broker-$PORT.watchdog"

# Exit codes shared with test/setup/kafka.ts
EXIT_FAIL=1        # broker did not come up / could not be stopped
EXIT_PREREQ=3      # java, mvn or node missing
EXIT_BUSY=4        # port taken (another process, or KAFKA_EXCLUSIVE=1 and our broker already runs)

die() { local code="$1"; shift; echo "kafka: $*" >&2; exit "$code"; }

# is_our_broker PID: true when PID is alive and is the kafka.Kafka JVM started for $DATA.
is_our_broker() {
  local pid="$1" args
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  args="$(ps -o args= -p "$pid" 2>/dev/null || true)"
  [[ "$args" == *kafka.Kafka* && "$args" == *"$DATA/server.properties"* ]]
}

log_tail() {
  if [[ -f "$LOGFILE" ]]; then
    echo "---- last 40 lines of $LOGFILE ----" >&2
    tail -n 40 "$LOGFILE" >&2
    echo "----" >&2
  fi
}
