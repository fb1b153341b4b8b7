#!/usr/bin/env bash
# select-seat with 4 seats: the Go package (BenchmarkLockSeats4)
# beside redis-benchmark running FCALL of the very same lock_seat script
# (the library's lua/lib/ + lock_seat.lua) with the same keys, client count and
# distribution, in one run. 10,000 admitted users u<12 digits>, 40,000
# seats S<12 digits><a|b|c|d>; each call: a random user selects
# S<n1>a,S<n2>b,S<n3>c,S<n4>d (independent __rand_int__). Prints a markdown
# table for docs/benchmarks.md.
#
#   scripts/bench-select.sh                # 50 clients, 200k requests
#   CLIENTS=50 REQUESTS=100000 scripts/bench-select.sh
set -uo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${CLIENTS:-50}
REQUESTS=${REQUESTS:-200000}
USERS=10000
. scripts/lib/redis-scripts.sh
scripts_setup benchsel create_event enqueue lock_seat || exit 1
declare -A KEYS # FCALL's numkeys and keys, per operation
for op in create_event enqueue lock_seat; do KEYS[$op]=$(luascript -keys "$PREFIX" sel "$op"); done
seats=$(for f in a b c d; do for ((i = 0; i < USERS; i++)); do printf 'S%012d%s ' "$i" "$f"; done; done)
$RC FCALL "${FN[create_event]}" ${KEYS[create_event]} sel "$USERS" 600000 120000 0 0 500 0 0 0 EUR 4 "$((USERS * 4)):0" "[]" 0 $seats >/dev/null
for ((i = 0; i < USERS; i++)); do printf 'FCALL %s %s u%012d %s\n' "${FN[enqueue]}" "${KEYS[enqueue]}" "$i" "$NOW"; done | $RC >/dev/null
active=$($RC ZCARD "$PREFIX:{sel}:active")

echo "== redis-benchmark FCALL lock_seat, 4 seats ($CLIENTS clients, $REQUESTS requests, $active users admitted)" >&2
RB=$(redis-benchmark -h "$HOST" -p "$PORT" -c "$CLIENTS" -n "$REQUESTS" -r "$USERS" -q \
  FCALL "${FN[lock_seat]}" ${KEYS[lock_seat]} "u__rand_int__" "S__rand_int__a,S__rand_int__b,S__rand_int__c,S__rand_int__d" "$NOW" 2>/dev/null |
  tr '\r' '\n' | grep -Eo '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1)
RB_HELD=$($RC HGET "$PREFIX:{sel}:config" held | tr -d '\r')

echo "== go test -bench LockSeats4 (pkg/booking, $CLIENTS goroutines)" >&2
out=$(go test -run '^$' -bench 'LockSeats4' -benchtime "${REQUESTS}x" ./pkg/booking/ 2>&1)
echo "$out" >&2
GO=$(echo "$out" | grep '^BenchmarkLockSeats4' | grep -Eo '[0-9.]+ ops/s' | head -1 | cut -d' ' -f1)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b>0) printf "%.2f", a/b; else print "n/a" }'; }

cat <<TABLE

Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), Redis $($RC INFO server | sed -n 's/^redis_version://p' | tr -d '\r'), $(date -u +%Y-%m-%d)
Command: CLIENTS=$CLIENTS REQUESTS=$REQUESTS scripts/bench-select.sh ($active users admitted; seats held at the end of the redis-benchmark run: $RB_HELD of 40000)

| operation | Go package (ops/s) | redis-benchmark FCALL (ops/s) | Go / raw |
|---|---|---|---|
| select-seat, 4 seats (lock_seat) | ${GO%.*} | ${RB%.*} | $(ratio "$GO" "$RB") |
TABLE
