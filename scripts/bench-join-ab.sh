#!/usr/bin/env bash
# bench-join-ab.sh — what a join costs the gateway, build against build:
# its CPU (user and system) and its read and write system calls and
# context switches per join, under wrk at CONNS connections (50; new users
# joining a new event, both front-door limits on), with the builds run in
# turn, ROUNDS times. This machine's speed drifts by a third from minute to
# minute, so compare builds only within one run of this script, round by
# round, and take the medians.
#
#   scripts/bench-join-ab.sh old=/tmp/gw-old new=/tmp/gw-new
#   ROUNDS=6 DURATION=10s scripts/bench-join-ab.sh a=/tmp/gw-a b=/tmp/gw-b,SOME_SETTING=1
#
# Each argument is NAME=GATEWAY_BINARY, then optionally ,VAR=value,... for
# that build's environment. NAME=stand-in[,VAR=value,...] runs a stand-in
# for the fastest open-source waiting room the performance page compares with (one counter, no dedupe, no
# event) instead of a gateway: tools/httpfloor -mode fastincr, fasthttp
# and one Redis INCR per join, under the same wrk load.
# Each round ends with the floor: tools/httpfloor's fasthttp server (the
# gateway's settings, a trivial answer) under the same wrk load, whose CPU
# per request is the yardstick for this minute's machine speed: the last
# column is each run's CPU per join in floors (its round's).
# FLOOR_ENV="VAR=value ..." runs the floor with those settings
# (FLOOR_ENV=GOMAXPROCS=1 beside builds run so). Then redis-benchmark
# SET at 50 clients (SET_REQUESTS, 500,000): the joins/s ÷ SET column is
# the ratio the performance page quotes, in the same round. ALLOCS_DIR=<dir> keeps a heap
# profile from before and after each run (<dir>/NAME-ROUND-before.pprof,
# -after.pprof; go tool pprof -sample_index=alloc_objects -base BEFORE
# AFTER).
# The columns after the gateway's say where the rest of the machine's CPU
# went during the same run, per join: Redis (the server on 6379),
# kafka-dev, wrk itself, and the share of both cores left idle, so that a
# run shows what bounds the joins per second (the gateway, or the
# machine).
# Starts kafka-dev and each gateway on ports of its own (18480, 19492), a
# RabbitMQ vhost and a Redis prefix of its own (scripts/lib/gateway.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
[[ $# -gt 0 ]] || { awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" >&2; exit 2; }
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-50}
GW_PORT=18480 KAFKA_PORT=19492
scripts/ensure-tool.sh wrk wrk || exit 1
scripts/ensure-tool.sh redis-benchmark redis-tools || exit 1
. scripts/lib/gateway.sh
gateway_setup joinab || exit 1
gateway_build mint-token httpfloor || exit 1
JWT_SECRET=$SECRET "$TMP/mint-token" -prefix u -n "$(new_users "$DURATION")" >"$TMP/tok"
JWT_SECRET=$SECRET "$TMP/mint-token" -prefix admin -n 1 -role admin >"$TMP/admin"
# counters PID: the process's CPU ticks (user, system), read and write
# calls, and context switches of all its threads; then the rest of the
# machine
counters() {
	awk '{printf "%s %s ", $14, $15}' "/proc/$1/stat"
	awk '/^syscr/ {r=$2} /^syscw/ {w=$2} END {printf "%s %s ", r, w}' "/proc/$1/io"
	cat /proc/"$1"/task/*/status | awk '/ctxt_switches/ {s+=$2} END {printf "%s ", s}'
	# Redis, kafka-dev, this shell's finished children (wrk), the
	# machine's idle and total ticks
	printf '%s %s ' "$(ticks "$REDIS_PID")" "$( [[ -n $KAFKA_PID ]] && ticks "$KAFKA_PID" || echo 0)"
	awk '{printf "%s ", $16 + $17}' /proc/$$/stat
	machine_ticks
}
# floor: the yardstick's CPU µs per request now
floor() {
	local addr=127.0.0.1:$((GW_PORT + 2)) fp c0 c1 n
	env ${FLOOR_ENV:-} "$TMP/httpfloor" -mode fast -addr "$addr" &
	fp=$!
	for _ in $(seq 50); do curl -s -o /dev/null "http://$addr/" && break; sleep 0.1; done
	c0=$(ticks "$fp")
	wrk -t2 -c"$CONNS" -d"$DURATION" -H "Authorization: Bearer x" "http://$addr/api/booking/position?event_id=e" >"$TMP/wrkfloor" 2>&1
	c1=$(ticks "$fp")
	kill "$fp"
	wait "$fp" 2>/dev/null
	n=$(grep -Eo '[0-9]+ requests in' "$TMP/wrkfloor" | awk '{print $1}')
	awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN {printf "%.1f", c * 10000 / n}'
}
ev=0
echo "| build | round | joins/s | gateway CPU µs per join (user + system) | reads per join | writes per join | context switches per join | Redis / kafka-dev / wrk CPU µs per join | machine idle | joins/s ÷ SET | in floors |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
	rows=()
	for v in "$@"; do
		pids=()
		ev=$((ev + 1))
		name=${v%%=*} rest=${v#*=}
		bin=${rest%%,*} envs=()
		[[ $rest == *,* ]] && IFS=, read -ra envs <<<"${rest#*,}"
		if [[ $bin == stand-in ]]; then
			env "${envs[@]}" "$TMP/httpfloor" -mode fastincr -addr "127.0.0.1:$GW_PORT" -key "$PREFIX:standin" >"$TMP/standin.log" 2>&1 &
			GW_PID=$! KAFKA_PID=""
			pids+=("$GW_PID")
			GW="http://127.0.0.1:$GW_PORT"
			for _ in $(seq 50); do curl -s -o /dev/null -X POST "$GW/" && break; sleep 0.1; done
		else
			cp "$bin" "$TMP/gateway" || exit 1
			VHOST="joinab$$-$r-$name"
			gateway_start DEV_TOKENS=true ADMIN_PPROF=true RATE_JOINS_PER_MINUTE_PER_IP=100000000 \
				RATE_REQUESTS_PER_SECOND_PER_USER=100 "${envs[@]}" || exit 1
			curl -fsS -o /dev/null -X POST "$GW/api/admin/events" -H "Authorization: Bearer $(cat "$TMP/admin")" \
				-H "Content-Type: application/json" -d "{\"id\":\"ab$ev\",\"rows\":100,\"seats_per_row\":100,\"capacity\":1}" || exit 1
		fi
		pprof="http://127.0.0.1:$((GW_PORT + 1))/debug/pprof/allocs"
		[[ -n ${ALLOCS_DIR:-} ]] && curl -fs -o "$ALLOCS_DIR/$name-$r-before.pprof" "$pprof"
		# counted from the end of wrk's threads' inits (wrk_started):
		# wrk's CPU until then (w0) is taken off its column
		rm -f "$TMP/ready"
		BENCH_READY=$TMP/ready BENCH_METHOD=POST BENCH_PATH=/api/booking/request BENCH_BODY="{\"event_id\":\"ab$ev\"}" \
			BENCH_TOKENS=$TMP/tok BENCH_LIMIT=0 BENCH_THREADS=2 wrk -t2 -c"$CONNS" -d"$DURATION" -s scripts/lib/wrk-users.lua "$GW" >"$TMP/wrk" 2>&1 &
		wp=$!
		wrk_started "$TMP/ready" "$wp" 2
		c0=$(counters "$GW_PID")
		w0=$(ticks "$wp")
		wait "$wp"
		c1=$(counters "$GW_PID")
		[[ -n ${ALLOCS_DIR:-} ]] && curl -fs -o "$ALLOCS_DIR/$name-$r-after.pprof" "$pprof"
		n=$(grep -Eo '[0-9]+ requests in' "$TMP/wrk" | awk '{print $1}')
		bad=$(grep -Eo 'Non-2xx or 3xx responses: [0-9]+' "$TMP/wrk" | awk '{print $NF}')
		[[ -z $bad ]] || { echo "bench-join-ab: $bad joins of $name failed" >&2; exit 1; }
		rows+=("$(echo "$c0 $c1" | awk -v name="$name" -v r="$r" -v n="$n" -v d="${DURATION%s}" -v w0="$w0" '{
			# ten counters per snapshot (counters): before $1..$10, after $11..$20
			u = ($11 - $1) * 10000 / n; s = ($12 - $2) * 10000 / n
			printf "%.3f\t%.1f\t| %s | %d | %.0f | %.1f (%.1f + %.1f) | %.2f | %.2f | %.2f | %.1f / %.1f / %.1f | %.0f %% |", u + s, n / d, name, r, n / d, u + s, u, s,
				($13 - $3) / n, ($14 - $4) / n, ($15 - $5) / n,
				($16 - $6) * 10000 / n, ($17 - $7) * 10000 / n, ($18 - $8 - w0) * 10000 / n, ($19 - $9) * 100 / ($20 - $10) }')")
		for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
		wait 2>/dev/null
		[[ $bin == stand-in ]] || rabbitmqctl -q delete_vhost "$VHOST" >/dev/null 2>&1
	done
	f=$(floor)
	set_rps=$(set_rate 50 "${SET_REQUESTS:-500000}")
	for row in "${rows[@]}"; do
		awk -F'\t' -v f="$f" -v set="$set_rps" '{printf "%s %.3f | %.2f |\n", $3, $2 / set, $1 / f}' <<<"$row"
	done
	echo "| floor (bare fasthttp) | $r | | $f per request | | | | | | | 1 |"
	echo "| redis-benchmark SET -c 50 | $r | $set_rps | | | | | | | 1 | |"
done
echo
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); wrk -t2 -c$CONNS -d$DURATION; $(date -u '+%Y-%m-%d %H:%M UTC')"
