#!/usr/bin/env bash
# run.sh — the seat-map benchmark (docs/benchmarks.md "Seat map"): builds
# and starts a gateway on spare ports with its own Redis prefix, RabbitMQ
# vhost and embedded Kafka (scripts/lib/gateway.sh), measures
# redis-benchmark -t set -c 50 beside it (the yardstick of the ratios),
# runs seatmapload against it (the bystander alone, then beside plain and
# gzip readers), and cleans up.
#   tools/seatmapload/run.sh                     # 200,000 seats, 8 readers, 10s per phase
#   SEATS=40000 READERS=8 DURATION=20s tools/seatmapload/run.sh
#   TAKEN=0.3 tools/seatmapload/run.sh           # 30% of the seats held or sold, at random
#   ENCODINGS=gzip tools/seatmapload/run.sh      # only the gzip readers
#   GATEWAY_BIN=/tmp/gw-old tools/seatmapload/run.sh   # an older build
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/gateway.sh
gateway_setup benchmap || exit 1
gateway_build seatmapload || exit 1
gateway_start || exit 1
SET_RATE=$(set_rate 50 200000)
"$TMP/seatmapload" -gateway "$GW" -gateway-pid "$GW_PID" -secret "$SECRET" -prefix "$PREFIX" -set-rate "${SET_RATE:-0}" \
	-seats "${SEATS:-200000}" -readers "${READERS:-8}" -duration "${DURATION:-10s}" \
	-encodings "${ENCODINGS:-plain,gzip}" -taken "${TAKEN:-0}"
