#!/usr/bin/env bash
# run.sh — the HTTP server floor of docs/benchmarks.md ("Where the profile
# goes"): for each
# stack of httpfloor, CPU per request under wrk (50 connections, 8 s; server
# CPU from /proc/<pid>/stat, machine CPU from /proc/stat, the server's
# read and write calls from /proc/<pid>/io, the machine's context
# switches), then the server's RSS holding IDLE idle keep-alive
# connections. Each mode runs twice, alternating, since this kind of machine
# drifts from minute to minute.
#
#   tools/httpfloor/run.sh               # IDLE=5000 CONNS=50 DURATION=8s
set -euo pipefail
cd "$(dirname "$0")/../.."
IDLE=${IDLE:-5000}
CONNS=${CONNS:-50}
DURATION=${DURATION:-8s}
ADDR=127.0.0.1:18200
scripts/ensure-tool.sh wrk wrk
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
pid=
(cd tools && go build -o "$tmp/httpfloor" ./httpfloor)
ulimit -n $((IDLE + 1000)) 2>/dev/null || true
cpu() { awk '/^cpu /{print $2+$3+$4+$6+$7+$8}' /proc/stat; }
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
sys() { awk '/^syscr|^syscw/{s+=$2} END{print s}' "/proc/$1/io"; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); go $(go env GOVERSION)"
echo "| mode | req/s | server µs/request | machine µs/request | server read+write calls/request | context switches/request | RSS with $IDLE idle connections |"
echo "|---|---|---|---|---|---|---|"
for mode in std adapt fast fastreduce std adapt fast fastreduce; do
	"$tmp/httpfloor" -mode "$mode" -addr "$ADDR" &
	pid=$!
	for _ in $(seq 50); do curl -s -o /dev/null "http://$ADDR/" && break; sleep 0.1; done
	m0=$(cpu) s0=$(ticks "$pid") y0=$(sys "$pid") x0=$(awk '/^ctxt/{print $2}' /proc/stat)
	wrk -t2 -c"$CONNS" -d"$DURATION" -H "Authorization: Bearer x" "http://$ADDR/api/booking/position?event_id=e" >"$tmp/wrk"
	m1=$(cpu) s1=$(ticks "$pid") y1=$(sys "$pid") x1=$(awk '/^ctxt/{print $2}' /proc/stat)
	n=$(grep -Eo '[0-9]+ requests in' "$tmp/wrk" | awk '{print $1}')
	rss=$(python3 - "$IDLE" "$pid" "$ADDR" <<'PY'
import socket, sys, time
n, pid, (host, port) = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(":")
socks = []
for _ in range(n):
    s = socket.create_connection((host, int(port)))
    s.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer abc\r\n\r\n")
    socks.append(s)
for s in socks:
    s.recv(4096)
time.sleep(1)
print(open(f"/proc/{pid}/status").read().split("VmRSS:")[1].split("\n")[0].strip())
PY
)
	# ticks are 10 ms: µs/request = ticks × 10,000 / requests
	echo "| $mode | $(grep Requests/sec "$tmp/wrk" | awk '{print $2}') | $(((s1 - s0) * 10000 / n)) | $(((m1 - m0) * 10000 / n)) | $(awk -v a=$((y1 - y0)) -v n="$n" 'BEGIN{printf "%.2f", a/n}') | $(awk -v a=$((x1 - x0)) -v n="$n" 'BEGIN{printf "%.2f", a/n}') | $rss |"
	kill "$pid"; wait "$pid" 2>/dev/null || true
	pid=
done
