#!/usr/bin/env bash
# run-stack.sh — run the whole boxoffice stack for development from ./bin
# (what `make run` calls after `make infra build`).
#
# Starts bin/kafka-dev (embedded Kafka on 127.0.0.1:9092) and then every
# service binary present in ./bin, in dependency order, waiting for each one's
# /healthz on its admin port before starting the next. Logs go to
# .run/<service>.log and are tailed here prefixed with the service name.
# Ctrl-C (SIGINT) or SIGTERM stops every child (each runs in its own process
# group): services first, Kafka last. If a service dies, the stack stops and
# the script exits 1.
#
# Environment (defaults for development, kept when already set):
#   DEV_TOKENS=true LOG_FORMAT=console
#   JWT_SECRET=dev-jwt-secret-not-for-production (pkg/auth needs >= 16 bytes)
#   WEBHOOK_SECRET=dev-webhook-secret
#   PASS_KEYS=dev-pass-1:<a fixed development seed> (the admission pass's
#     Ed25519 key, docs/admission-pass.md; never use it in production)
#   DATABASE_URL=postgres://boxoffice:boxoffice@127.0.0.1:5432/boxoffice?sslmode=disable
#     (the development database scripts/ensure-infra.sh creates)
#   AMQP_URL=amqp://guest:guest@127.0.0.1:5672/boxoffice-dev (the vhost is
#     created with rabbitmqctl when possible; otherwise the services' default "/")
#   BIN (./bin), RUN_DIR (./.run), STACK_WAIT (seconds per service, 60),
#   STOP_WAIT (seconds to wait for a stopping service before SIGKILL, 20)

set -u -o pipefail
set -m # every background job in its own process group

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
BIN=${BIN:-$ROOT/bin}
RUN_DIR=${RUN_DIR:-$ROOT/.run}
STACK_WAIT=${STACK_WAIT:-60}
STOP_WAIT=${STOP_WAIT:-20}

export DEV_TOKENS=${DEV_TOKENS:-true}
export LOG_FORMAT=${LOG_FORMAT:-console}
export JWT_SECRET=${JWT_SECRET:-dev-jwt-secret-not-for-production}
export WEBHOOK_SECRET=${WEBHOOK_SECRET:-dev-webhook-secret}
export PASS_KEYS=${PASS_KEYS:-dev-pass-1:lb3E06HVniHLsVjhSd1bQHPg-Y5kHfQjBsVGW8uUcMo}
export DATABASE_URL=${DATABASE_URL:-postgres://boxoffice:boxoffice@127.0.0.1:5432/boxoffice?sslmode=disable}

# RabbitMQ: the services declare quorum queues (AMQP_QUEUE_TYPE=quorum, the
# default), in a vhost of their own when rabbitmqctl can make one: "/" of a
# machine that ran an older stack holds classic queues of the same names,
# and a queue cannot change type (the declare would fail with
# PRECONDITION_FAILED; docs/runbook.md, "classic to quorum queues").
if [[ -z ${AMQP_URL:-} ]] && command -v rabbitmqctl >/dev/null 2>&1; then
	dev_vhost=boxoffice-dev
	if ! timeout 20 rabbitmqctl -q list_vhosts 2>/dev/null | grep -qx "$dev_vhost"; then
		timeout 20 rabbitmqctl -q add_vhost "$dev_vhost" >/dev/null 2>&1 &&
			timeout 20 rabbitmqctl -q set_permissions -p "$dev_vhost" guest '.*' '.*' '.*' >/dev/null 2>&1
	fi
	if timeout 20 rabbitmqctl -q list_vhosts 2>/dev/null | grep -qx "$dev_vhost"; then
		export AMQP_URL="amqp://guest:guest@127.0.0.1:5672/$dev_vhost"
	fi
fi

# Start order after kafka-dev, and each service's admin port (/healthz).
SERVICES=(popularity slot-released-consumer timeout-consumer payment-webhook payment-sandbox notifier gateway)
declare -A ADMIN_PORT=(
	[gateway]=9101 [payment-webhook]=9102 [notifier]=9103 [payment-sandbox]=9104
	[slot-released-consumer]=9105 [timeout-consumer]=9106 [popularity]=9107
)
declare -A PUBLIC_URL=(
	[gateway]="http://localhost:8080  gateway + web pages"
	[payment-webhook]="http://localhost:8081  payment webhooks"
	[notifier]="http://localhost:8082  notifier (WebSocket)"
	[payment-sandbox]="http://localhost:8083  payment sandbox"
)
KAFKA_HOST=127.0.0.1
KAFKA_PORT=9092

say() { echo "run-stack: $*"; }
err() { echo "run-stack: $*" >&2; }

svc_names=() # started services, in start order (kafka-dev first when ours)
svc_pids=()  # their pids (= process group ids)
tail_pids=() # log tailers (process group ids)
stopping=0

port_open() {
	timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null
}

# healthy PORT: GET /healthz on 127.0.0.1:PORT answers 200.
healthy() {
	if command -v curl >/dev/null 2>&1; then
		curl -fsS -o /dev/null -m 2 "http://127.0.0.1:$1/healthz" 2>/dev/null
		return
	fi
	# shellcheck disable=SC2016 # $code expands in the inner shell
	timeout 2 bash -c '
		exec 3<>/dev/tcp/127.0.0.1/'"$1"' || exit 1
		printf "GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3
		read -r _ code _ <&3
		[[ $code == 200 ]]' 2>/dev/null
}

alive() { kill -0 "$1" 2>/dev/null; }

# start NAME: run bin/NAME in the background, its log tailed with a prefix.
start() {
	local name=$1 log=$RUN_DIR/$1.log
	: >"$log"
	"$BIN/$name" >>"$log" 2>&1 </dev/null &
	svc_names+=("$name")
	svc_pids+=("$!")
	(exec tail -n +1 -F "$log" 2>/dev/null | sed -u "s/^/[$name] /") &
	tail_pids+=("$!")
}

# await NAME PID CHECK...: wait until CHECK succeeds, failing if NAME exits.
await() {
	local name=$1 pid=$2
	shift 2
	local deadline=$((SECONDS + STACK_WAIT))
	until "$@"; do
		if ! alive "$pid"; then
			err "$name exited during startup; last lines of $RUN_DIR/$name.log:"
			tail -n 20 "$RUN_DIR/$name.log" >&2
			return 1
		fi
		if ((SECONDS >= deadline)); then
			err "$name is not ready after ${STACK_WAIT}s; see $RUN_DIR/$name.log"
			return 1
		fi
		sleep 0.3
	done
}

# stop_group PID...: SIGTERM the process groups, SIGKILL what is left after STOP_WAIT.
stop_group() {
	local pid
	for pid in "$@"; do
		kill -TERM -- "-$pid" 2>/dev/null
	done
	local deadline=$((SECONDS + STOP_WAIT))
	for pid in "$@"; do
		while alive "$pid" && ((SECONDS < deadline)); do
			sleep 0.2
		done
		if alive "$pid"; then
			err "pid $pid did not stop in ${STOP_WAIT}s; killing it"
			kill -KILL -- "-$pid" 2>/dev/null
		fi
	done
	wait "$@" 2>/dev/null
}

cleanup() {
	local code=$1
	((stopping)) && return
	stopping=1
	trap '' INT TERM HUP
	local i services=() kafka=()
	for ((i = ${#svc_names[@]} - 1; i >= 0; i--)); do
		if [[ ${svc_names[i]} == kafka-dev ]]; then
			kafka+=("${svc_pids[i]}")
		else
			services+=("${svc_pids[i]}")
		fi
	done
	if ((${#services[@]} + ${#kafka[@]} > 0)); then
		say "stopping..."
	fi
	((${#services[@]})) && stop_group "${services[@]}"
	((${#kafka[@]})) && stop_group "${kafka[@]}"
	sleep 0.3 # let the tailers print the last lines
	((${#tail_pids[@]})) && stop_group "${tail_pids[@]}" 2>/dev/null
	if ((${#svc_names[@]})); then
		say "stopped (logs in $RUN_DIR/)"
	fi
	exit "$code"
}

trap 'cleanup 0' INT TERM HUP
trap 'cleanup $?' EXIT

if [[ ! -x $BIN/kafka-dev ]]; then
	err "$BIN/kafka-dev is missing; build the services first (make build)"
	exit 1
fi
mkdir -p "$RUN_DIR" || exit 1

# Refuse to start next to a stack that is already running: the services
# would fail to bind their ports.
for name in "${SERVICES[@]}"; do
	if [[ -x $BIN/$name ]] && port_open 127.0.0.1 "${ADMIN_PORT[$name]}"; then
		err "port ${ADMIN_PORT[$name]} ($name admin) is in use: is the stack already running?"
		exit 1
	fi
done

if port_open "$KAFKA_HOST" "$KAFKA_PORT"; then
	say "kafka: a broker already answers on $KAFKA_HOST:$KAFKA_PORT; using it"
else
	say "starting kafka-dev ($KAFKA_HOST:$KAFKA_PORT)"
	start kafka-dev
	await kafka-dev "${svc_pids[-1]}" port_open "$KAFKA_HOST" "$KAFKA_PORT" || exit 1
fi

for name in "${SERVICES[@]}"; do
	if [[ ! -x $BIN/$name ]]; then
		say "$name: not built, skipped"
		continue
	fi
	say "starting $name (admin :${ADMIN_PORT[$name]})"
	start "$name"
	await "$name" "${svc_pids[-1]}" healthy "${ADMIN_PORT[$name]}" || exit 1
done

if [[ -x scripts/seed-dev.sh ]]; then
	say "seeding development data (scripts/seed-dev.sh)"
	if ! scripts/seed-dev.sh; then
		err "scripts/seed-dev.sh failed; the stack keeps running"
	fi
fi

echo
say "stack is up. Open:"
for name in gateway payment-webhook notifier payment-sandbox; do
	for ((i = 0; i < ${#svc_names[@]}; i++)); do
		[[ ${svc_names[i]} == "$name" ]] && echo "    ${PUBLIC_URL[$name]}"
	done
done
say "logs in $RUN_DIR/; Ctrl-C stops everything"
echo

# Block until a service exits (or a signal runs cleanup).
while true; do
	died=""
	wait -n -p died "${svc_pids[@]}"
	rc=$?
	((stopping)) && exit 0
	if [[ -z $died ]]; then
		continue
	fi
	for ((i = 0; i < ${#svc_pids[@]}; i++)); do
		if [[ ${svc_pids[i]} == "$died" ]]; then
			err "${svc_names[i]} exited (status $rc); stopping the stack. Last lines of $RUN_DIR/${svc_names[i]}.log:"
			tail -n 20 "$RUN_DIR/${svc_names[i]}.log" >&2
		fi
	done
	exit 1
done
