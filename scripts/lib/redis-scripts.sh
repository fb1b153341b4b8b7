# scripts/lib/redis-scripts.sh — the booking scripts loaded into the
# machine's Redis for a redis-benchmark run beside the Go package, under a
# key prefix of the run's own, removed on exit. Sourced (not run) from the
# repository root by scripts/bench.sh and scripts/bench-select.sh:
#
#   . scripts/lib/redis-scripts.sh
#   scripts_setup benchsh create_event enqueue   # RC, PREFIX, NOW, FN[<script>]
#   luascript -keys "$PREFIX" <event> <operation>  # FCALL's numkeys and keys
#
# REDIS_HOST and REDIS_PORT (127.0.0.1:6379) name the Redis.

# luascript ARGS: tools/luascript (-library: the function library Redis
# runs; NAME: an operation's function name; -keys: an event's keys).
luascript() { (cd tools && go run ./luascript "$@"); }

# scripts_setup NAME SCRIPT...: RC (redis-cli), PREFIX (NAME and the
# shell's pid), NOW (unix ms), the cleanup of PREFIX's keys on exit, the
# function library loaded (FUNCTION LOAD REPLACE) and FN[SCRIPT], the name
# FCALL calls for each script.
scripts_setup() {
	HOST=${REDIS_HOST:-127.0.0.1}
	PORT=${REDIS_PORT:-6379}
	RC="redis-cli -h $HOST -p $PORT"
	PREFIX="$1$$"
	NOW=$(date +%s%3N)
	shift
	command -v redis-benchmark >/dev/null || { echo "redis-benchmark missing (apt-get install redis-tools)" >&2; return 1; }
	trap scripts_cleanup EXIT
	luascript -library | $RC -x FUNCTION LOAD REPLACE >/dev/null || return 1
	declare -gA FN
	for s in "$@"; do
		FN[$s]=$(luascript "$s") || return 1
	done
}

scripts_cleanup() { $RC --scan --pattern "$PREFIX:*" | xargs -r -n 500 $RC unlink >/dev/null; }
