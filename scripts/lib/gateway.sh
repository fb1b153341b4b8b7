# scripts/lib/gateway.sh — a gateway of its own for a benchmark script, on
# the machine's Redis, RabbitMQ and PostgreSQL: its own Redis key prefix,
# RabbitMQ vhost, ledger schema and embedded Kafka (kafka-dev), on spare
# ports, all removed on exit. (The ledger is the events' system of record:
# a benchmark's events never show in the development stack's.)
# Sourced (not run) from the repository root by the scripts that measure a
# gateway (scripts/bench-http.sh, bench-join-ab.sh, bench-progress.sh,
# tools/seatmapload/run.sh; tested by tools/benchlib):
#
#   . scripts/lib/gateway.sh
#   gateway_setup benchprog || exit 1      # PREFIX, VHOST, SECRET, TMP, the ledger
#                                          # schema; cleanup on exit
#   gateway_build mint-token               # $TMP/gateway (a copy of GATEWAY_BIN when
#                                          # set), $TMP/kafka-dev, and each tool named
#   gateway_start DEV_TOKENS=true          # kafka-dev, then the gateway with these
#                                          # settings; waits for its /readyz
#   token USER [ROLE]                      # a JWT for USER (after gateway_build mint-token)
#   new_users DURATION                     # JWTs a wrk run needs for new users only
#   wrk_started FILE PID THREADS           # a wrk-users.lua run past its threads' inits
#   ticks PID                              # a process's CPU so far, in clock ticks
#   machine_ticks                          # the machine's idle and total ticks so far
#   set_rate C N                           # redis-benchmark SET, C clients, N requests: req/s
#
# Ports: GW_PORT (18180) for the gateway, GW_PORT+1 for its admin listener;
# KAFKA_PORT (19192) for kafka-dev, KAFKA_PORT+1 for its admin listener.
# After gateway_start: GW (the gateway's base URL), GW_PID and KAFKA_PID.
# A script that starts more processes adds their pids to pids, and they
# are stopped too.

# gateway_setup NAME: the run's prefix, vhost, ledger schema and JWT
# secret (NAME and the shell's pid), a temporary directory, REDIS_PID, and
# the cleanup on exit. The schema is PREFIX in the PostgreSQL database of
# DATABASE_URL (the services' default when unset); LEDGER_URL is that
# URL with the schema as its search_path, as pkg/ledger/ledgertest does
# for the tests.
gateway_setup() {
	GW_PORT=${GW_PORT:-18180}
	KAFKA_PORT=${KAFKA_PORT:-19192}
	PREFIX="$1$$"
	VHOST="$1$$"
	SECRET="$1-jwt-secret-0123456789"
	RC="redis-cli -h 127.0.0.1 -p 6379"
	# the Redis server on 6379, for its CPU (not another redis-server a
	# test may run)
	REDIS_PID=$($RC info server | awk -F: '/^process_id/ {print $2}' | tr -d '\r')
	TMP=$(mktemp -d)
	pids=()
	LEDGER_BASE=${DATABASE_URL:-postgres://boxoffice:boxoffice@127.0.0.1:5432/boxoffice?sslmode=disable}
	LEDGER_SCHEMA=""
	trap gateway_cleanup EXIT
	local sep='?'
	[[ $LEDGER_BASE == *\?* ]] && sep='&'
	psql -qX "$LEDGER_BASE" -c "CREATE SCHEMA \"$PREFIX\"" >/dev/null || {
		echo "gateway_setup: cannot create the ledger schema $PREFIX in DATABASE_URL's database (scripts/ensure-infra.sh starts PostgreSQL)" >&2
		return 1
	}
	LEDGER_SCHEMA=$PREFIX
	LEDGER_URL="$LEDGER_BASE${sep}search_path=$PREFIX"
}

# gateway_cleanup stops what the run started and removes its keys, vhost
# and files.
gateway_cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	# KEEP_LOG=<file>: the gateway's log survives the run
	[[ -n ${KEEP_LOG:-} && -f $TMP/gateway.log ]] && cp "$TMP/gateway.log" "$KEEP_LOG"
	$RC --scan --pattern "$PREFIX:*" | xargs -r -n 500 $RC unlink >/dev/null
	rabbitmqctl -q delete_vhost "$VHOST" >/dev/null 2>&1
	[[ -n $LEDGER_SCHEMA ]] && PGOPTIONS=--client-min-messages=warning psql -qX "$LEDGER_BASE" -c "DROP SCHEMA IF EXISTS \"$LEDGER_SCHEMA\" CASCADE" >/dev/null
	rm -rf "$TMP"
}

# gateway_build [TOOL...]: the gateway (GATEWAY_BIN, a prebuilt one such as
# an older commit's, when set) and kafka-dev into $TMP, and each tool named
# (a directory of tools/: mint-token → $TMP/mint-token).
gateway_build() {
	if [[ -n ${GATEWAY_BIN:-} ]]; then
		cp "$GATEWAY_BIN" "$TMP/gateway" || return 1
	else
		(cd services/gateway && go build -o "$TMP/gateway" .) || return 1
	fi
	(cd services/kafka-dev && go build -o "$TMP/kafka-dev" .) || return 1
	for tool in "$@"; do
		(cd tools && go build -o "$TMP/$tool" "./$tool") || return 1
	done
}

# gateway_start [VAR=value...]: the vhost, kafka-dev, then the gateway with
# the run's prefix, vhost, Kafka and secret plus the settings given; returns
# once the gateway's /readyz answers (its log on failure). The abuse limits
# are off (RATE_*=0) unless the caller's environment or the settings given
# set them: every request of a benchmark comes from one address, and some
# send many requests per user, so the gateway's defaults (on) would
# measure mostly 429s; a benchmark with the limits on sets them
# (docs/benchmarks.md).
# GATEWAY_GOMAXPROCS=N sets the gateway's GOMAXPROCS (only the gateway's:
# kafka-dev and the go builds keep the machine's).
gateway_start() {
	rabbitmqctl -q add_vhost "$VHOST" >/dev/null &&
		rabbitmqctl -q set_permissions -p "$VHOST" guest '.*' '.*' '.*' >/dev/null || return 1
	KAFKA_DEV_ADDR=127.0.0.1:$KAFKA_PORT ADMIN_ADDR=127.0.0.1:$((KAFKA_PORT + 1)) LOG_LEVEL=error \
		"$TMP/kafka-dev" >"$TMP/kafka.log" 2>&1 &
	KAFKA_PID=$!
	pids+=("$KAFKA_PID")
	sleep 1
	env HTTP_ADDR=127.0.0.1:$GW_PORT ADMIN_ADDR=127.0.0.1:$((GW_PORT + 1)) REDIS_PREFIX=$PREFIX DATABASE_URL="$LEDGER_URL" \
		AMQP_URL="amqp://guest:guest@127.0.0.1:5672/$VHOST" KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT \
		JWT_SECRET=$SECRET LOG_LEVEL=error GIN_MODE=release ${GATEWAY_GOMAXPROCS:+GOMAXPROCS=$GATEWAY_GOMAXPROCS} \
		RATE_JOINS_PER_MINUTE_PER_IP="${RATE_JOINS_PER_MINUTE_PER_IP:-0}" \
		RATE_REQUESTS_PER_SECOND_PER_USER="${RATE_REQUESTS_PER_SECOND_PER_USER:-0}" \
		"$@" "$TMP/gateway" >"$TMP/gateway.log" 2>&1 &
	GW_PID=$!
	pids+=("$GW_PID")
	GW="http://127.0.0.1:$GW_PORT"
	for _ in $(seq 1 100); do
		curl -fs -o /dev/null "http://127.0.0.1:$((GW_PORT + 1))/readyz" && return 0
		sleep 0.2
	done
	echo "gateway not ready:" >&2
	cat "$TMP/gateway.log" >&2
	return 1
}

# new_users DURATION: how many users (JWTs) a wrk run of DURATION (10s,
# 1m, or seconds) needs so that every join is a new user's, not a user
# joining again, up to 100,000 joins a second
new_users() {
	local s
	case $1 in *m) s=$((${1%m} * 60)) ;; *s) s=${1%s} ;; *) s=$1 ;; esac
	echo $((s * 100000))
}

# wrk_started FILE PID THREADS: returns once every thread of the wrk
# run PID has built its requests (scripts/lib/wrk-users.lua with
# BENCH_READY=FILE: a line per thread), or wrk has ended; what is measured
# from then on is the run alone
wrk_started() {
	while kill -0 "$2" 2>/dev/null && [[ $({ wc -l <"$1"; } 2>/dev/null || echo 0) -lt $3 ]]; do sleep 0.05; done
}

# ticks PID: the CPU a process has used, in clock ticks (10 ms)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# machine_ticks: the machine's idle (with iowait) and total clock ticks so
# far, all cores together
machine_ticks() { awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t}' /proc/stat; }

# set_rate C N: redis-benchmark SET on 6379 at C clients for N requests,
# in requests per second (the yardstick the performance page uses, run beside the gateway)
set_rate() {
	redis-benchmark -h 127.0.0.1 -p 6379 -c "$1" -n "$2" -q -t set 2>/dev/null |
		tr '\r' '\n' | grep -Eo '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1
}

# token USER [ROLE]: a JWT for USER signed with the run's secret
# (tools/mint-token, pkg/auth); gateway_build mint-token first.
token() {
	JWT_SECRET=$SECRET "$TMP/mint-token" -user "$1" -role "${2:-}"
}
