#!/usr/bin/env bash
# replay-dlq.sh — move the messages of a dead-letter queue back to its work
# queue, once the cause is fixed (see docs/runbook.md).
#
#   scripts/replay-dlq.sh [--list] [--vhost V] QUEUE
#
# QUEUE is the work queue: slot-released-queue or timeout-queue; the
# messages of QUEUE.dlq go back to QUEUE. --list only prints the depth of
# the work queues and their DLQs.
#
# How: a dynamic shovel (plugin rabbitmq_shovel) with
# src-delete-after=queue-length moves exactly the messages in the DLQ when it
# starts, acking each only after the broker confirmed its republish
# (ack-mode on-confirm), then deletes itself. Messages keep their
# properties, message id and headers — x-retry-count is already at the
# consumer's MAX_RETRIES, so a replayed message that fails again goes
# straight back to the DLQ instead of being retried: replaying is one more
# attempt, never a loop. Handlers are idempotent, so a message whose effect
# already happened changes nothing.
#
# rabbitmqctl is used, not the management API (which may be off locally):
#   RABBITMQCTL   command to run rabbitmqctl (default: rabbitmqctl; with
#                 docker compose: "docker compose exec -T rabbitmq rabbitmqctl")
# The shovel plugin must be enabled on the broker (docker-compose enables it
# in deployments/rabbitmq/enabled_plugins; elsewhere:
# rabbitmq-plugins enable rabbitmq_shovel).
set -euo pipefail

RABBITMQCTL=${RABBITMQCTL:-rabbitmqctl}
read -r -a CTL <<<"$RABBITMQCTL"
vhost=/
list=0
queue=""
while (($#)); do
	case $1 in
	--list) list=1 ;;
	--vhost)
		vhost=$2
		shift
		;;
	-h | --help)
		sed -n '2,27p' "$0"
		exit 0
		;;
	*) queue=$1 ;;
	esac
	shift
done

depths() {
	"${CTL[@]}" -q list_queues -p "$vhost" name messages_ready messages_unacknowledged |
		awk '$1 ~ /^(slot-released-queue|timeout-queue)(\.dlq)?$/ {printf "%-26s ready %-8s unacked %s\n", $1, $2, $3}'
}

if ((list)); then
	depths
	exit 0
fi
case $queue in
slot-released-queue | timeout-queue) ;;
*)
	echo "usage: $0 [--list] [--vhost V] slot-released-queue|timeout-queue" >&2
	exit 2
	;;
esac

# urlencode S: S with every byte but [A-Za-z0-9._~-] percent-encoded.
urlencode() {
	local s=$1 out="" c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[A-Za-z0-9._~-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf '%s' "$out"
}

dlq=$queue.dlq
count() { "${CTL[@]}" -q list_queues -p "$vhost" name messages | awk -v q="$1" '$1 == q {print $2}'; }
n=$(count "$dlq")
if [[ -z $n ]]; then
	echo "replay-dlq: queue $dlq does not exist in vhost $vhost" >&2
	exit 1
fi
if ((n == 0)); then
	echo "replay-dlq: $dlq is empty"
	exit 0
fi

name="boxoffice-replay-$queue-$(date +%s)"
echo "replay-dlq: moving $n message(s) from $dlq to $queue (shovel $name)"
# The shovel's URIs name the vhost: a bare "amqp://" is the default vhost
# "/" whatever vhost the shovel is declared in (it would move another
# vhost's DLQ, or nothing).
uri="amqp:///$(urlencode "$vhost")"
if [[ $vhost == / ]]; then
	uri="amqp://"
fi
def=$(printf '{"src-protocol":"amqp091","src-uri":"%s","src-queue":"%s","src-delete-after":"queue-length","dest-protocol":"amqp091","dest-uri":"%s","dest-queue":"%s","ack-mode":"on-confirm"}' "$uri" "$dlq" "$uri" "$queue")
if ! "${CTL[@]}" -q set_parameter -p "$vhost" shovel "$name" "$def"; then
	echo "replay-dlq: could not create the shovel; is rabbitmq_shovel enabled? (rabbitmq-plugins enable rabbitmq_shovel)" >&2
	exit 1
fi

# The shovel deletes itself after moving the messages present at its start.
for _ in $(seq 1 120); do
	if ! "${CTL[@]}" -q list_parameters -p "$vhost" 2>/dev/null | grep -q "$name"; then
		break
	fi
	sleep 1
done
if "${CTL[@]}" -q list_parameters -p "$vhost" 2>/dev/null | grep -q "$name"; then
	echo "replay-dlq: shovel $name still running after 120 s; check: ${RABBITMQCTL} shovel_status" >&2
	exit 1
fi
echo "replay-dlq: done; now:"
depths
