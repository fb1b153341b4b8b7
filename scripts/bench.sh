#!/usr/bin/env bash
# Booking-engine throughput: the Go package (go test -bench) beside
# redis-benchmark running FCALL of the very same scripts with the same
# client count, in one run, so the ratio means something on a shared
# machine. Prints a markdown table for docs/benchmarks.md.
#
#   scripts/bench.sh            # defaults: 50 clients, 200k requests
#   CLIENTS=50 REQUESTS=300000 scripts/bench.sh
set -uo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${CLIENTS:-50}
REQUESTS=${REQUESTS:-200000}
. scripts/lib/redis-scripts.sh
scripts_setup benchsh create_event update_event enqueue get_position promote || exit 1
keys() { luascript -keys "$PREFIX" "$1" "$2"; } # EVENT OPERATION: FCALL's numkeys and keys
PROMOTE_USERS=${PROMOTE_USERS:-20000}
mkevent() { # id capacity paused [seats]
  local seats
  seats=$(for i in $(seq 1 "${4:-100}"); do printf 'S%d ' "$i"; done)
  $RC FCALL "${FN[create_event]}" $(keys "$1" create_event) "$1" "$2" 600000 120000 0 0 500 0 0 0 EUR 4 "${4:-100}:0" "[]" 0 $seats >/dev/null
  [ "$3" = 1 ] && $RC FCALL "${FN[update_event]}" $(keys "$1" update_event) paused 1 >/dev/null
  true
}
rb() { # prints requests per second of one redis-benchmark run
  redis-benchmark -h "$HOST" -p "$PORT" -c "$CLIENTS" -q "$@" 2>/dev/null | tr '\r' '\n' |
    grep -Eo '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1
}

echo "== redis-benchmark FCALL ($CLIENTS clients, $REQUESTS requests)" >&2
mkevent rq 1 0
RB_ENQ=$(rb -n "$REQUESTS" -r 100000000 FCALL "${FN[enqueue]}" $(keys rq enqueue) "u__rand_int__" "$NOW")
mkevent rp 1 0
redis-benchmark -h "$HOST" -p "$PORT" -c "$CLIENTS" -n 300000 -r 100000 -q \
  FCALL "${FN[enqueue]}" $(keys rp enqueue) "u__rand_int__" "$NOW" >/dev/null 2>&1
RB_POS=$(rb -n "$REQUESTS" -r 100000 FCALL "${FN[get_position]}" $(keys rp get_position) "u__rand_int__" "$NOW")
# promotion: a paused event with as many seats as users (the room is never
# larger than the unsold seats), PROMOTE_USERS queued, then drained in
# batches of 500 by one client
mkevent rm 1000000 1 "$((PROMOTE_USERS * 2))"
redis-benchmark -h "$HOST" -p "$PORT" -c "$CLIENTS" -n "$PROMOTE_USERS" -r 100000000 -q \
  FCALL "${FN[enqueue]}" $(keys rm enqueue) "u__rand_int__" "$NOW" >/dev/null 2>&1
queued=$($RC ZCARD "$PREFIX:{rm}:waiting")
$RC FCALL "${FN[update_event]}" $(keys rm update_event) paused 0 >/dev/null
calls=$(( queued / 500 ))
RB_PROM_CALLS=$(redis-benchmark -h "$HOST" -p "$PORT" -c 1 -n "$calls" -q \
  FCALL "${FN[promote]}" $(keys rm promote) "$NOW" 500 2>/dev/null | tr '\r' '\n' |
  grep -Eo '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1)
RB_PROM=$(awk -v c="$RB_PROM_CALLS" 'BEGIN{printf "%.0f", c*500}')
# reference: plain SET, under this run's prefix so the trap removes it
RB_SET=$(rb -n "$REQUESTS" -r 100000000 SET "$PREFIX:set:__rand_int__" x)

echo "== go test -bench (pkg/booking, $CLIENTS goroutines)" >&2
out=$(go test -run '^$' -bench 'Enqueue|Position' -benchtime "${REQUESTS}x" ./pkg/booking/ 2>&1)
out+=$'\n'$(go test -run '^$' -bench 'Promote' -benchtime "${PROMOTE_USERS}x" ./pkg/booking/ 2>&1)
echo "$out" >&2
metric() { echo "$out" | grep "^Benchmark$1" | grep -Eo "[0-9.]+ $2" | head -1 | cut -d' ' -f1; }
GO_ENQ=$(metric Enqueue ops/s); GO_POS=$(metric Position ops/s); GO_PROM=$(metric Promote users/s)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b>0) printf "%.2f", a/b; else print "n/a" }'; }

cat <<TABLE

Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), Redis $($RC INFO server | sed -n 's/^redis_version://p' | tr -d '\r'), $(date -u +%Y-%m-%d)
Command: CLIENTS=$CLIENTS REQUESTS=$REQUESTS PROMOTE_USERS=$PROMOTE_USERS scripts/bench.sh (promotion: $queued users queued for redis-benchmark)

| operation | Go package (ops/s) | redis-benchmark FCALL (ops/s) | Go / raw |
|---|---|---|---|
| Enqueue (new user, full room) | ${GO_ENQ%.*} | ${RB_ENQ%.*} | $(ratio "$GO_ENQ" "$RB_ENQ") |
| GetPosition (queue of 100k) | ${GO_POS%.*} | ${RB_POS%.*} | $(ratio "$GO_POS" "$RB_POS") |
| Promote, users admitted/s (batch 500) | ${GO_PROM%.*} | ${RB_PROM} | $(ratio "$GO_PROM" "$RB_PROM") |
| (reference) redis-benchmark SET | | ${RB_SET%.*} | |
TABLE
