#!/usr/bin/env bash
# bench-http.sh — the gateway's join and position throughput over HTTP (wrk,
# a distinct user per request, JWTs made beforehand) at 50 and 500
# connections, beside redis-benchmark FCALL of the very same Lua functions
# (enqueue, get_position of the library the gateway loads, tools/luascript)
# with the same client counts, in the same run. Prints a
# markdown table for docs/benchmarks.md ("Join", "Exact position").
#
# Starts its own kafka-dev (embedded Kafka) and gateway on spare ports, a
# RabbitMQ vhost of its own and a Redis key prefix of its own, and removes
# them at the end (scripts/lib/gateway.sh). Needs rabbitmqctl, python3, go; installs wrk and
# redis-benchmark from Debian's packages when they are missing.
#
#   scripts/bench-http.sh                      # 10s per run, 50 and 500 connections
#   DURATION=20s CONNS="50 500" scripts/bench-http.sh
#   GATEWAY_BIN=/tmp/gw-old scripts/bench-http.sh   # a prebuilt gateway (an
#                                              # older commit's) instead
#   EVENT_EXTRA=',"admit_per_minute":600' scripts/bench-http.sh
#                                              # more settings for every event
#   (the gateway's own settings, RATE_*, PASS_KEYS, reach it from the
#   environment)
#   GATEWAY_GOMAXPROCS=1 scripts/bench-http.sh  # the gateway alone on one P
#                                              # (docs/scaling.md, "GOMAXPROCS")
#   PEER=http://127.0.0.1:18300 scripts/bench-http.sh
#                                              # also a peer's join (POST
#                                              # $PEER/join, wrk, same
#                                              # connections) right after each
#                                              # gateway join: the join's ratio
#                                              # to it, run by run, and the
#                                              # whole machine's CPU per join
#                                              # in each (scripts/bench-peer.sh;
#                                              # PEER_PIDS="PID REDIS_PID" adds
#                                              # the peer's and its Redis's)
#
# The CPU column is the gateway's and Redis's CPU time during each wrk run
# (/proc/<pid>/stat) divided by its requests. Each round also runs
# `redis-benchmark -t set` at the same client count right after the
# gateway, and the table gives the gateway's rate as a ratio to it. PPROF_DIR=<dir> saves an 8 s CPU profile of the gateway
# during each join and position run (<dir>/join50-1.pprof, ...).
set -uo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-"50 500"}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
RB_REQUESTS=${RB_REQUESTS:-300000}
GW_PORT=${GW_PORT:-18080}
KAFKA_PORT=${KAFKA_PORT:-19092}

scripts/ensure-tool.sh wrk wrk || exit 1
scripts/ensure-tool.sh redis-benchmark redis-tools || exit 1
for c in rabbitmqctl python3 go; do
	command -v "$c" >/dev/null || { echo "bench-http: $c missing (make infra installs RabbitMQ)" >&2; exit 1; }
done

. scripts/lib/gateway.sh
# users per join run: every join a new user's (TOKENS sets fewer)
TOKENS=${TOKENS:-$(new_users "$DURATION")}
gateway_setup benchhttp || exit 1
echo "bench-http: building gateway and kafka-dev" >&2
gateway_build mint-token || exit 1
PPROF=false
[[ -n ${PPROF_DIR:-} ]] && PPROF=true
gateway_start DEV_TOKENS=true ADMIN_PPROF=$PPROF || exit 1

# tokens FILE USERPREFIX N [ROLE]: N JWTs for users USERPREFIX0..N-1
# (tools/mint-token, signed with pkg/auth).
tokens() {
	JWT_SECRET=$SECRET "$TMP/mint-token" -prefix "$2" -n "$3" -role "${4:-}" >"$1"
}
tokens "$TMP/admin.tok" admin 1 admin
ADMIN=$(cat "$TMP/admin.tok")
# One event per connection count and side (http: through the gateway; rb
# and rbpos: redis-benchmark's enqueue and get_position), all the same
# shape, the room full after the first join, so every measured join queues
# (the common case under load) and the scripts do the same work on both
# sides.
# The ledger (PostgreSQL) keeps event definitions across runs and refuses
# another definition under an id it has: events with EVENT_EXTRA get ids of
# their own (a hash of it), so both kinds of run can follow each other.
EV=""
[ -n "${EVENT_EXTRA:-}" ] && EV="x$(printf %s "$EVENT_EXTRA" | sha1sum | cut -c1-8)-"
for c in $CONNS; do
	for ev in "${EV}rb$c" "${EV}rbpos$c" $(for r in $(seq 1 "$REPS"); do echo "${EV}http$c-$r"; done); do
		curl -fsS -o /dev/null -X POST "$GW/api/admin/events" -H "Authorization: Bearer $ADMIN" -H "Content-Type: application/json" \
			-d "{\"id\":\"$ev\",\"rows\":100,\"seats_per_row\":100,\"capacity\":1${EVENT_EXTRA:-}}" || { echo "create event $ev failed" >&2; exit 1; }
	done
done


# cpu OUT: the gateway's and Redis's CPU per request of the wrk run in OUT,
# in µs (OUT.ticks, written by wrkrun, holds their ticks during the run)
cpu() {
	local n; n=$(grep -Eo '[0-9]+ requests in' "$1" | awk '{print $1}')
	awk -v n="$n" '{printf "%.0f %.0f", $1 * 10000 / n, $2 * 10000 / n}' "$1.ticks"
}
# busy OUT: the whole machine's CPU (every process, every core) per
# request of the wrk run in OUT, in µs (the third and fourth numbers of
# OUT.ticks: the machine's idle and total ticks during the run)
busy() {
	local n; n=$(grep -Eo '[0-9]+ requests in' "$1" | awk '{print $1}')
	awk -v n="$n" '{printf "%.1f", ($4 - $3) * 10000 / n}' "$1.ticks"
}
# wrkrun OUT C METHOD PATH BODY TOKENS LIMIT
# (measured from the end of wrk's threads' inits: wrk_started)
wrkrun() {
	local g0 r0 w
	rm -f "$1.ready"
	BENCH_READY=$1.ready BENCH_METHOD=$3 BENCH_PATH=$4 BENCH_BODY=$5 BENCH_TOKENS=$6 BENCH_LIMIT=$7 BENCH_THREADS=$THREADS \
		wrk -t"$THREADS" -c"$2" -d"$DURATION" --latency -s scripts/lib/wrk-users.lua "$GW" >"$1" 2>&1 &
	w=$!
	wrk_started "$1.ready" "$w" "$THREADS"
	g0=$(ticks "$GW_PID"); r0=$(ticks "$REDIS_PID"); read -r i0 t0 < <(machine_ticks)
	if [[ -n ${PPROF_DIR:-} ]]; then
		mkdir -p "$PPROF_DIR"
		(sleep 1; curl -fs -o "$PPROF_DIR/$(basename "$1").pprof" "http://127.0.0.1:$((GW_PORT + 1))/debug/pprof/profile?seconds=8") &
	fi
	wait "$w"
	read -r i1 t1 < <(machine_ticks)
	echo "$(($(ticks "$GW_PID") - g0)) $(($(ticks "$REDIS_PID") - r0)) $((i1 - i0)) $((t1 - t0))" >"$1.ticks"
}
# peerrun OUT C: the peer's join under wrk, with the CPU of the peer and
# its Redis (PEER_PIDS, when set) and of the machine in OUT.ticks
peerrun() {
	local p0=0 q0=0 p1=0 q1=0 i0 t0 i1 t1 pp pr
	read -r pp pr <<<"${PEER_PIDS:-}"
	[[ -n $pp ]] && p0=$(ticks "$pp") && q0=$(ticks "$pr")
	read -r i0 t0 < <(machine_ticks)
	wrk -t"$THREADS" -c"$2" -d"$DURATION" -s scripts/lib/wrk-post.lua "$PEER/join" >"$1" 2>&1
	read -r i1 t1 < <(machine_ticks)
	[[ -n $pp ]] && p1=$(ticks "$pp") && q1=$(ticks "$pr")
	echo "$((p1 - p0)) $((q1 - q0)) $((i1 - i0)) $((t1 - t0))" >"$1.ticks"
}
rps() { grep -E '^Requests/sec' "$1" | awk '{print $2}'; }
pct() { awk -v p="$2%" '$1==p {print $2}' "$1"; }
errs() { local n; n=$(grep -Eo 'Non-2xx or 3xx responses: [0-9]+' "$1" | awk '{print $NF}'); echo "${n:-0}"; }

# the function library (loaded here too: a GATEWAY_BIN of an older build
# may not load it); FN[s] is what FCALL calls
(cd tools && go run ./luascript -library) | $RC -x FUNCTION LOAD REPLACE >/dev/null || exit 1
declare -A FN
for s in enqueue get_position; do
	FN[$s]=$( (cd tools && go run ./luascript "$s"))
done
NOW=$(date +%s%3N)
# rb C SCRIPT EVENT USERRANGE N: redis-benchmark FCALL, prints req/s.
rb() {
	redis-benchmark -h 127.0.0.1 -p 6379 -c "$1" -n "$5" -r "$4" -q \
		FCALL "${FN[$2]}" $( (cd tools && go run ./luascript -keys "$PREFIX" "$3" "$2")) "rb:__rand_int__" "$NOW" 2>/dev/null |
		tr '\r' '\n' | grep -Eo '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1
}

# Runs alternate between the gateway and redis-benchmark, REPS times per
# operation, and the table reports medians: this VM's speed drifts by a
# third from one minute to the next (a shared host), so a ratio is only
# meaningful between runs made side by side.
: >"$TMP/results"
for c in $CONNS; do
	rb "$c" enqueue "${EV}rbpos$c" 100000 500000 >/dev/null # prefill: users whose position is asked
	for r in $(seq 1 "$REPS"); do
		# join: new users (new tokens, as a real join has) join a fresh event
		tokens "$TMP/t$c-$r" "u$c-$r-" "$TOKENS"
		wrkrun "$TMP/join$c-$r" "$c" POST /api/booking/request "{\"event_id\":\"${EV}http$c-$r\"}" "$TMP/t$c-$r" 0
		if [[ -n ${PEER:-} ]]; then
			peerrun "$TMP/peer$c-$r" "$c"
			echo "$c $(rps "$TMP/join$c-$r") $(rps "$TMP/peer$c-$r") $(errs "$TMP/peer$c-$r") $(busy "$TMP/join$c-$r") $(busy "$TMP/peer$c-$r") $(cpu "$TMP/join$c-$r") $(cpu "$TMP/peer$c-$r")" >>"$TMP/peer"
		fi
		echo "$c join $r $(rps "$TMP/join$c-$r") $(pct "$TMP/join$c-$r" 50) $(pct "$TMP/join$c-$r" 99) $(errs "$TMP/join$c-$r") $(cpu "$TMP/join$c-$r") $(set_rate "$c" "$RB_REQUESTS") $(rb "$c" enqueue "${EV}rb$c" 1000000000 "$RB_REQUESTS")" >>"$TMP/results"
		# position: the users who just joined ask (their tokens are cached,
		# as for a waiting user polling)
		joined=$(curl -fs "$GW/api/events/${EV}http$c-$r" | python3 -c 'import json,sys; c=json.load(sys.stdin)["counts"]; print(c["waiting"]+c["active"])')
		wrkrun "$TMP/pos$c-$r" "$c" GET "/api/booking/position?event_id=${EV}http$c-$r" "" "$TMP/t$c-$r" "$((joined * 9 / 10))"
		echo "$c position $r $(rps "$TMP/pos$c-$r") $(pct "$TMP/pos$c-$r" 50) $(pct "$TMP/pos$c-$r" 99) $(errs "$TMP/pos$c-$r") $(cpu "$TMP/pos$c-$r") $(set_rate "$c" "$RB_REQUESTS") $(rb "$c" get_position "${EV}rbpos$c" 100000 "$RB_REQUESTS")" >>"$TMP/results"
	done
	# The raw runs must have done the real work (an unknown event would
	# measure the scripts' cheap event_not_found exit instead).
	for ev in "${EV}rb$c" "${EV}rbpos$c"; do
		w=$(curl -fs "$GW/api/events/$ev" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"]["waiting"])')
		[ "${w:-0}" -gt 1000 ] || { echo "bench-http: redis-benchmark did not join users to $ev (waiting=$w)" >&2; exit 1; }
	done
done
[ -n "${KEEP_RESULTS:-}" ] && cp "$TMP/results" "$KEEP_RESULTS"
python3 - "$TMP/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    c, op, rep, g, p50, p99, non2xx, gw_us, redis_us, setr, raw = line.split()
    rows.setdefault((int(c), op), []).append((float(g), p50, p99, int(non2xx or 0), float(raw), int(gw_us), int(redis_us), float(setr)))
print("| connections | operation | gateway req/s | p50 | p99 | non-2xx | gateway / Redis CPU µs per request | redis-benchmark FCALL req/s | ratio to FCALL (median) | per run | SET req/s | **ratio to SET** (median) | per run |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
name = {"join": "join (POST /api/booking/request)", "position": "position (GET /api/booking/position)"}
for (c, op), runs in sorted(rows.items()):
    ratios = [r[0] / r[4] for r in runs]
    sets = [r[0] / r[7] for r in runs]
    mid = sorted(range(len(runs)), key=lambda i: ratios[i])[len(runs) // 2]
    _, p50, p99, _, _, gw_us, redis_us, _ = runs[mid]
    print(f"| {c} | {name[op]} | {statistics.median(r[0] for r in runs):,.0f} | {p50} | {p99} | {sum(r[3] for r in runs)} "
          f"| {statistics.median(r[5] for r in runs):.0f} / {statistics.median(r[6] for r in runs):.0f} "
          f"| {statistics.median(r[4] for r in runs):,.0f} | {statistics.median(ratios):.2f} | {' '.join(f'{x:.2f}' for x in ratios)} "
          f"| {statistics.median(r[7] for r in runs):,.0f} | **{statistics.median(sets):.3f}** | {' '.join(f'{x:.3f}' for x in sets)} |")
PY
if [[ -n ${PEER:-} ]]; then
	python3 - "$TMP/peer" "$PEER" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    c, gw, peer, non2xx, busy, pbusy, gw_us, redis_us, peer_us, peer_redis_us = line.split()
    runs.setdefault(int(c), []).append((float(gw), float(peer), int(non2xx or 0), float(busy), float(pbusy),
                                        int(gw_us), int(redis_us), int(peer_us), int(peer_redis_us)))
med = lambda rs, i: statistics.median(r[i] for r in rs)
print()
print(f"| connections | join req/s | peer join req/s ({sys.argv[2]}/join) | peer non-2xx | **join ÷ peer** (median) | per run "
      "| machine CPU µs per join: ours / peer's | gateway / Redis, peer / its Redis CPU µs per join |")
print("|---|---|---|---|---|---|---|---|")
for c, rs in sorted(runs.items()):
    ratios = [r[0] / r[1] for r in rs]
    print(f"| {c} | {med(rs, 0):,.0f} | {med(rs, 1):,.0f} | {sum(r[2] for r in rs)} "
          f"| **{statistics.median(ratios):.2f}** | {' '.join(f'{x:.2f}' for x in ratios)} "
          f"| {med(rs, 3):.1f} / {med(rs, 4):.1f} | {med(rs, 5):.0f} / {med(rs, 6):.0f}, "
          + (f"{med(rs, 7):.0f} / {med(rs, 8):.0f} |" if med(rs, 7) or med(rs, 8) else "– |"))
PY
fi
echo
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(redis-server --version | grep -Eo 'v=[0-9.]+'); wrk -t$THREADS -d$DURATION, $REPS alternating runs per row (p50/p99 of the median run); gateway, Redis, kafka-dev and the load generator on the same machine."
