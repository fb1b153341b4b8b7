#!/usr/bin/env bash
# redis-cluster.sh {start|stop|addrs|status} — a 3-master Redis Cluster on
# loopback ports 7101-7103 for tests and development.
#
#   start   start the nodes that are not running, form the cluster if it is
#           not formed (re-create it from scratch when its state is broken),
#           and wait until every node reports cluster_state:ok. Idempotent and
#           safe to run concurrently (serialised with flock).
#   stop    shut the nodes down (data is not persisted).
#   addrs   print the seed addresses, comma separated.
#   status  print cluster_state of each node.
#
# Node data and logs live in /tmp/boxoffice-redis-cluster/<port>/.

set -u -o pipefail

BASE=${REDIS_CLUSTER_DIR:-/tmp/boxoffice-redis-cluster}
PORTS=(7101 7102 7103)
HOST=127.0.0.1

err() { echo "redis-cluster: $*" >&2; }

addrs() {
	local IFS=,
	local a=()
	local p
	for p in "${PORTS[@]}"; do a+=("$HOST:$p"); done
	echo "${a[*]}"
}

cli() {
	local port=$1
	shift
	timeout 10 redis-cli -h "$HOST" -p "$port" "$@" 2>&1
}

# info_field PORT FIELD: one field of CLUSTER INFO.
info_field() {
	cli "$1" cluster info | tr -d '\r' | sed -n "s/^$2://p"
}

start_node() {
	local port=$1 dir=$BASE/$1
	if [[ $(cli "$port" ping) == PONG ]]; then
		if [[ $(cli "$port" info cluster | tr -d '\r' | sed -n 's/^cluster_enabled://p') != 1 ]]; then
			err "port $port answers but is not a cluster-enabled Redis; stop it first"
			return 1
		fi
		return 0
	fi
	mkdir -p "$dir" || return 1
	if ! redis-server --cluster-enabled yes --port "$port" --cluster-config-file "nodes-$port.conf" \
		--dir "$dir" --daemonize yes --save "" --appendonly no --bind "$HOST" \
		--pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --cluster-node-timeout 5000 9>&-; then
		err "redis-server on port $port failed to start; see $dir/redis.log"
		return 1
	fi
	local i
	for ((i = 0; i < 50; i++)); do
		[[ $(cli "$port" ping) == PONG ]] && return 0
		sleep 0.1
	done
	err "node on port $port does not answer PING; see $dir/redis.log"
	return 1
}

# healthy: every node sees a complete cluster of all nodes, state ok.
healthy() {
	local p
	for p in "${PORTS[@]}"; do
		local info
		info=$(cli "$p" cluster info | tr -d '\r')
		grep -q '^cluster_state:ok$' <<<"$info" || return 1
		grep -q '^cluster_slots_assigned:16384$' <<<"$info" || return 1
		grep -q "^cluster_known_nodes:${#PORTS[@]}$" <<<"$info" || return 1
	done
}

# fresh: no node knows another node or owns a slot.
fresh() {
	local p
	for p in "${PORTS[@]}"; do
		[[ $(info_field "$p" cluster_known_nodes) == 1 ]] || return 1
		[[ $(info_field "$p" cluster_slots_assigned) == 0 ]] || return 1
	done
}

# formed: every node has all slots assigned (it may still be converging).
formed() {
	local p
	for p in "${PORTS[@]}"; do
		[[ $(info_field "$p" cluster_slots_assigned) == 16384 ]] || return 1
	done
}

wait_healthy() {
	local tries=$1 i
	for ((i = 0; i < tries; i++)); do
		healthy && return 0
		sleep 0.2
	done
	return 1
}

reset_all() {
	local p
	for p in "${PORTS[@]}"; do
		# FLUSHALL fails on a replica; CLUSTER RESET HARD turns it into an empty master.
		cli "$p" flushall >/dev/null
		local out
		out=$(cli "$p" cluster reset hard)
		if [[ $out != OK ]]; then
			cli "$p" flushall >/dev/null
			out=$(cli "$p" cluster reset hard)
			if [[ $out != OK ]]; then
				err "cluster reset on port $p failed: $out"
				return 1
			fi
		fi
	done
}

create() {
	local nodes=() p
	for p in "${PORTS[@]}"; do nodes+=("$HOST:$p"); done
	local out
	if ! out=$(timeout 60 redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes 2>&1); then
		err "redis-cli --cluster create failed:"
		echo "$out" >&2
		return 1
	fi
}

start() {
	if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
		err "redis-server and redis-cli are needed (scripts/ensure-infra.sh installs them)"
		return 1
	fi
	mkdir -p "$BASE" || return 1
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$BASE/.lock"
		if ! flock -w 120 9; then
			err "timed out waiting for another redis-cluster.sh"
			return 1
		fi
	fi
	local p
	for p in "${PORTS[@]}"; do
		start_node "$p" || return 1
	done
	healthy && return 0
	if formed && wait_healthy 50; then
		return 0
	fi
	if ! fresh; then
		err "cluster state is broken; flushing and re-creating it"
		reset_all || return 1
	fi
	create || return 1
	if ! wait_healthy 150; then
		err "cluster did not reach cluster_state:ok in 30s:"
		status >&2
		return 1
	fi
}

stop() {
	local p
	for p in "${PORTS[@]}"; do
		if [[ $(cli "$p" ping) == PONG ]]; then
			cli "$p" shutdown nosave >/dev/null
		fi
	done
	for p in "${PORTS[@]}"; do
		local i
		for ((i = 0; i < 50; i++)); do
			[[ $(cli "$p" ping) == PONG ]] || break
			sleep 0.1
		done
	done
}

status() {
	local p
	for p in "${PORTS[@]}"; do
		local s
		s=$(info_field "$p" cluster_state)
		echo "$HOST:$p ${s:-down}"
	done
}

case ${1:-} in
start) start ;;
stop) stop ;;
addrs) addrs ;;
status) status ;;
*)
	echo "usage: $0 {start|stop|addrs|status}" >&2
	exit 2
	;;
esac
