#!/usr/bin/env bash
# run.sh — the seat-map benchmark (docs/benchmarks.md "Seat map"): builds
# and starts a gateway on spare ports with its own Redis prefix, RabbitMQ
# vhost and embedded Kafka, runs seatmapload against it, and cleans up.
#   tools/seatmapload/run.sh                     # 200,000 seats, 8 readers, 10s
#   SEATS=40000 READERS=8 DURATION=20s tools/seatmapload/run.sh
#   GATEWAY_BIN=/tmp/gw-old tools/seatmapload/run.sh   # an older build
set -uo pipefail
cd "$(dirname "$0")/../.."
GW_PORT=${GW_PORT:-18180}
KAFKA_PORT=${KAFKA_PORT:-19192}
PREFIX="benchmap$$"
VHOST="benchmap$$"
SECRET="bench-seatmap-jwt-secret-0123456789"
RC="redis-cli -h 127.0.0.1 -p 6379"
TMP=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	$RC --scan --pattern "$PREFIX:*" | xargs -r -n 500 $RC unlink >/dev/null
	rabbitmqctl -q delete_vhost "$VHOST" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
if [[ -n ${GATEWAY_BIN:-} ]]; then cp "$GATEWAY_BIN" "$TMP/gateway" || exit 1
else (cd services/gateway && go build -o "$TMP/gateway" .) || exit 1; fi
(cd services/kafka-dev && go build -o "$TMP/kafka-dev" .) || exit 1
(cd tools && go build -o "$TMP/seatmapload" ./seatmapload) || exit 1
rabbitmqctl -q add_vhost "$VHOST" >/dev/null && rabbitmqctl -q set_permissions -p "$VHOST" guest '.*' '.*' '.*' >/dev/null
KAFKA_DEV_ADDR=127.0.0.1:$KAFKA_PORT ADMIN_ADDR=127.0.0.1:$((KAFKA_PORT + 1)) LOG_LEVEL=error "$TMP/kafka-dev" >"$TMP/kafka.log" 2>&1 &
pids+=($!)
sleep 1
HTTP_ADDR=127.0.0.1:$GW_PORT ADMIN_ADDR=127.0.0.1:$((GW_PORT + 1)) REDIS_PREFIX=$PREFIX \
	AMQP_URL="amqp://guest:guest@127.0.0.1:5672/$VHOST" KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT \
	JWT_SECRET=$SECRET LOG_LEVEL=error GIN_MODE=release "$TMP/gateway" >"$TMP/gateway.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
	curl -fs -o /dev/null "http://127.0.0.1:$((GW_PORT + 1))/readyz" && break
	sleep 0.2
done
curl -fs -o /dev/null "http://127.0.0.1:$((GW_PORT + 1))/readyz" || { echo "gateway not ready:" >&2; cat "$TMP/gateway.log" >&2; exit 1; }
"$TMP/seatmapload" -gateway "http://127.0.0.1:$GW_PORT" -secret "$SECRET" \
	-prefix "$PREFIX" -seats "${SEATS:-200000}" -readers "${READERS:-8}" -duration "${DURATION:-10s}"
