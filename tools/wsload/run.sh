#!/usr/bin/env bash
# run.sh — the notifier load test of docs/benchmarks.md: builds the notifier
# and wsload, starts a notifier with a raised file limit on its own Redis key
# prefix (its RabbitMQ queue is exclusive to it), runs wsload against it and
# stops it. Arguments are passed to wsload (default: -n 20000 -release 100
# -rounds 10; -n is capped below the open-file limit when it cannot be
# raised, since each side holds one descriptor per connection).
#
# Environment: NOTIFIER_BIN (a prebuilt notifier, e.g. an older commit's, to
# compare in the same run; default: build services/notifier),
# NOTIFIER_GOGC (100), NOTIFIER_GOMAXPROCS (unset: Go's default),
# NOTIFIER_PORT (18082), NOTIFIER_ADMIN (19103),
# REDIS_ADDR (127.0.0.1:6379), AMQP_URL (amqp://guest:guest@127.0.0.1:5672/).
set -euo pipefail
cd "$(dirname "$0")/../.."
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
limit=$(ulimit -n)
n=20000
if ((limit - 100 < n)); then
	n=$((limit - 100))
	(($# > 0)) || echo "open-file limit is $limit and cannot be raised here: using -n $n"
fi
tmp=$(mktemp -d)
trap 'if [[ -n ${pid:-} ]]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT
if [[ -n ${NOTIFIER_BIN:-} ]]; then
	cp "$NOTIFIER_BIN" "$tmp/notifier"
else
	(cd services/notifier && go build -o "$tmp/notifier" .)
fi
(cd tools && go build -o "$tmp/wsload" ./wsload)

port=${NOTIFIER_PORT:-18082}
admin=${NOTIFIER_ADMIN:-19103}
redis=${REDIS_ADDR:-127.0.0.1:6379}
amqp=${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/}
prefix=wsload$RANDOM
secret=wsload-secret-0123456789
# Position ticks every 2 s (the default) run during the measurement. Every
# connection comes from this machine's few loopback addresses, so the
# per-IP connection limit (MAX_CONNECTIONS_PER_IP, 500) is off, as behind
# a load balancer that hides client addresses. MAX_CONNECTIONS is raised
# from its default (nine tenths of the open-file limit) to what the script
# connects at most, as in the measurements of docs/benchmarks.md.
env MAX_CONNECTIONS_PER_IP=-1 MAX_CONNECTIONS=$((limit - 100)) JWT_SECRET=$secret HTTP_ADDR=127.0.0.1:$port ADMIN_ADDR=127.0.0.1:$admin REDIS_ADDR=$redis \
	REDIS_PREFIX=$prefix AMQP_URL=$amqp LOG_LEVEL=warn GOGC=${NOTIFIER_GOGC:-100} \
	${NOTIFIER_GOMAXPROCS:+GOMAXPROCS=$NOTIFIER_GOMAXPROCS} "$tmp/notifier" >"$tmp/notifier.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	curl -fs "http://127.0.0.1:$admin/readyz" >/dev/null && break
	sleep 0.1
done
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr); go $(go env GOVERSION)"
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(-n "$n" -release 100 -rounds 10)
"$tmp/wsload" -ws "ws://127.0.0.1:$port/ws" -metrics "http://127.0.0.1:$admin/metrics" -redis "$redis" \
	-prefix "$prefix" -amqp "$amqp" -secret "$secret" "${args[@]}"
echo "notifier RSS at the end: $(awk '/VmRSS/ {print $2, $3}' /proc/$pid/status)"
echo "notifier CPU in all: $(awk '{printf "%.2f s (user %.2f, system %.2f)", ($14 + $15) / 100, $14 / 100, $15 / 100}' /proc/$pid/stat)"
redis-cli -h "${redis%:*}" -p "${redis##*:}" --scan --pattern "$prefix:*" | xargs -r -n 500 redis-cli -h "${redis%:*}" -p "${redis##*:}" del >/dev/null || true
