#!/usr/bin/env bash
# run.sh — the seat-map benchmark (docs/benchmarks.md "Seat map"): builds
# and starts a gateway on spare ports with its own Redis prefix, RabbitMQ
# vhost and embedded Kafka (scripts/lib/gateway.sh), runs seatmapload
# against it, and cleans up.
#   tools/seatmapload/run.sh                     # 200,000 seats, 8 readers, 10s
#   SEATS=40000 READERS=8 DURATION=20s tools/seatmapload/run.sh
#   GATEWAY_BIN=/tmp/gw-old tools/seatmapload/run.sh   # an older build
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/gateway.sh
gateway_setup benchmap || exit 1
gateway_build seatmapload || exit 1
gateway_start || exit 1
"$TMP/seatmapload" -gateway "$GW" -secret "$SECRET" \
	-prefix "$PREFIX" -seats "${SEATS:-200000}" -readers "${READERS:-8}" -duration "${DURATION:-10s}"
