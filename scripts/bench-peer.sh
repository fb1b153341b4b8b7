#!/usr/bin/env bash
# bench-peer.sh — the join beside the fastest open-source peer, in the same
# run: HarrisonTCodes/session-queue (Go; signs an HS256 token per join and
# keeps no per-user state) built from a checkout (PEER_SRC), on a
# redis-server of its own, then scripts/bench-http.sh with PEER set, whose
# join rounds go gateway, peer, redis-benchmark SET, FCALL, side by side;
# its peer table gives the ratio and where each side's CPU went per join:
# the whole machine's (the load generator's too), the gateway's and its
# Redis's, the peer's and its Redis's.
#
#   git clone https://github.com/HarrisonTCodes/session-queue /tmp/session-queue
#   PEER_SRC=/tmp/session-queue CONNS=50 REPS=3 scripts/bench-peer.sh
#
# Every other setting reaches bench-http.sh (and the gateway) from the
# environment: PASS_KEYS (receipts), RATE_*, DURATION, GATEWAY_BIN...
set -uo pipefail
cd "$(dirname "$0")/.."
: "${PEER_SRC:?PEER_SRC: a checkout of github.com/HarrisonTCodes/session-queue}"
PEER_PORT=${PEER_PORT:-18300}
PEER_REDIS_PORT=${PEER_REDIS_PORT:-16390}
PTMP=$(mktemp -d)
PEER_PID="" PEER_REDIS_PID=""
cleanup() {
	for p in $PEER_PID $PEER_REDIS_PID; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$PTMP"
}
trap cleanup EXIT

(cd "$PEER_SRC" && GOFLAGS=-mod=mod go build -o "$PTMP/peer" ./cmd/server) || { echo "bench-peer: build of $PEER_SRC failed" >&2; exit 1; }
redis-server --port "$PEER_REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no >"$PTMP/redis.log" 2>&1 &
PEER_REDIS_PID=$!
for _ in $(seq 50); do redis-cli -p "$PEER_REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
REDIS_ADDR=127.0.0.1:$PEER_REDIS_PORT PORT=$PEER_PORT JWT_SECRET=bench-peer-secret-0123456789 \
	WINDOW_SIZE=100 WINDOW_INTERVAL=5 ACTIVE_WINDOW_COUNT=2 "$PTMP/peer" >"$PTMP/peer.log" 2>&1 &
PEER_PID=$!
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$PEER_PORT/livez" && break; sleep 0.1; done
curl -fs -o /dev/null -X POST "http://127.0.0.1:$PEER_PORT/join" || { echo "bench-peer: the peer does not join" >&2; cat "$PTMP/peer.log" >&2; exit 1; }

PEER=http://127.0.0.1:$PEER_PORT PEER_PIDS="$PEER_PID $PEER_REDIS_PID" scripts/bench-http.sh
