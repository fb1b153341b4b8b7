#!/usr/bin/env bash
# bench-progress.sh — the progress document (GET /api/events/{id}/progress)
# over HTTP with wrk, beside `redis-benchmark -t set` with the same client
# count, alternating, in one run; and the Redis commands it costs,
# counted with MONITOR on the run's own key prefix during a separate run
# (MONITOR slows Redis, so it never runs during a measured run). Prints a
# markdown table for docs/benchmarks.md.
#
# Starts its own kafka-dev and gateway on spare ports, a RabbitMQ vhost and
# a Redis key prefix of its own, and removes them at the end
# (scripts/lib/gateway.sh); its JWTs come from tools/mint-token.
#
#   scripts/bench-progress.sh                    # 10s per run, 50 connections, 3 runs
#   DURATION=20s CONNS="50 500" REPS=5 scripts/bench-progress.sh
set -uo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-50}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
RB_REQUESTS=${RB_REQUESTS:-1000000}
scripts/ensure-tool.sh wrk wrk || exit 1
scripts/ensure-tool.sh redis-benchmark redis-tools || exit 1

. scripts/lib/gateway.sh
gateway_setup benchprog || exit 1
echo "bench-progress: building gateway and kafka-dev" >&2
gateway_build mint-token || exit 1
gateway_start || exit 1
ADMIN=$(token admin admin)
curl -fsS -o /dev/null -X POST "$GW/api/admin/events" -H "Authorization: Bearer $ADMIN" -H "Content-Type: application/json" \
	-d '{"id":"prog","rows":100,"seats_per_row":100,"capacity":1}' || { echo "create event failed" >&2; exit 1; }
for i in $(seq 1 50); do # a queue: one admitted, the others waiting
	curl -fsS -o /dev/null -X POST "$GW/api/booking/request" -H "Authorization: Bearer $(token "u$i")" \
		-H 'Content-Type: application/json' -d '{"event_id":"prog"}' || exit 1
done
PATH_PROGRESS=/api/events/prog/progress
ETAG=$(curl -fsS -D - -o /dev/null "$GW$PATH_PROGRESS" | awk -F': ' 'tolower($1)=="etag" {print $2}' | tr -d '\r')

cat >"$TMP/bench.lua" <<'LUA'
local etag = os.getenv("BENCH_ETAG") or ""
function init(args)
  local h = {}
  if etag ~= "" then h["If-None-Match"] = etag end
  req = wrk.format("GET", os.getenv("BENCH_PATH"), h)
end
function request() return req end
LUA
# wrkrun OUT C ETAG
wrkrun() {
	local g0; g0=$(ticks "$GW_PID")
	BENCH_PATH=$PATH_PROGRESS BENCH_ETAG=$3 wrk -t"$THREADS" -c"$2" -d"$DURATION" --latency -s "$TMP/bench.lua" "$GW" >"$1" 2>&1
	echo "$(($(ticks "$GW_PID") - g0))" >"$1.ticks"
}
rps() { grep -E '^Requests/sec' "$1" | awk '{print $2}'; }
reqs() { grep -Eo '[0-9]+ requests in' "$1" | awk '{print $1}'; }
pct() { awk -v p="$2%" '$1==p {print $2}' "$1"; }
errs() { local n; n=$(grep -Eo 'Non-2xx or 3xx responses: [0-9]+' "$1" | awk '{print $NF}'); echo "${n:-0}"; }
gwus() { awk -v n="$(reqs "$1")" '{printf "%.1f", $1 * 10000 / n}' "$1.ticks"; }

: >"$TMP/results"
for c in $CONNS; do
	for r in $(seq 1 "$REPS"); do
		wrkrun "$TMP/p$c-$r" "$c" ""
		wrkrun "$TMP/n$c-$r" "$c" "$ETAG"
		echo "$c $r $(rps "$TMP/p$c-$r") $(pct "$TMP/p$c-$r" 50) $(pct "$TMP/p$c-$r" 99) $(errs "$TMP/p$c-$r") $(gwus "$TMP/p$c-$r") $(rps "$TMP/n$c-$r") $(errs "$TMP/n$c-$r") $(set_rate "$c" "$RB_REQUESTS")" >>"$TMP/results"
	done
done

# The count: every Redis command with the run's key prefix during a 5 s
# run at the first connection count (the gateway's snapshot refreshes).
$RC MONITOR >"$TMP/monitor" &
mon=$!
sleep 0.5
DURATION=5s wrkrun "$TMP/count" "${CONNS%% *}" ""
sleep 0.2
kill "$mon" 2>/dev/null
wait "$mon" 2>/dev/null
# a script's own commands show as "[0 lua]" lines: count the client calls
calls=$(grep -v ' lua\]' "$TMP/monitor" | grep -c "$PREFIX:")
inner=$(grep ' lua\]' "$TMP/monitor" | grep -c "$PREFIX:")
counted=$(reqs "$TMP/count")

python3 - "$TMP/results" "$calls" "$counted" "$inner" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    c, rep, g, p50, p99, non2xx, gw_us, g304, non2xx304, rb = line.split()
    rows.setdefault(int(c), []).append((float(g), p50, p99, int(non2xx), float(gw_us), float(g304), float(rb)))
print("| connections | progress req/s (200) | p50 | p99 | gateway CPU µs/req | progress req/s (304, If-None-Match) | redis-benchmark SET req/s | ratio 200 / SET (median) | per run | ratio 304 / SET |")
print("|---|---|---|---|---|---|---|---|---|---|")
for c, runs in sorted(rows.items()):
    ratios = [r[0] / r[6] for r in runs]
    mid = sorted(range(len(runs)), key=lambda i: ratios[i])[len(runs) // 2]
    _, p50, p99, _, _, _, _ = runs[mid]
    print(f"| {c} | {statistics.median(r[0] for r in runs):,.0f} | {p50} | {p99} | {statistics.median(r[4] for r in runs):.1f} "
          f"| {statistics.median(r[5] for r in runs):,.0f} | {statistics.median(r[6] for r in runs):,.0f} | {statistics.median(ratios):.2f} "
          f"| {' '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(r[5] / r[6] for r in runs):.2f} |")
calls, n, inner = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print()
print(f"Redis calls on the run's keys during a 5 s run of {n:,} progress requests (MONITOR): {calls} "
      f"({calls / max(n, 1):.6f} per request: the snapshot's refresh, about one a second; "
      f"the script ran {inner} commands of its own in them).")
PY
echo
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(redis-server --version | grep -Eo 'v=[0-9.]+'); wrk -t$THREADS -d$DURATION, $REPS alternating runs; gateway, Redis and wrk on the same machine."
