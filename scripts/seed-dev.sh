#!/usr/bin/env bash
# seed-dev.sh — create demo events through the gateway's admin API with a
# dev token (`make run`, tools/stack, calls it once the stack is up; needs
# DEV_TOKENS=true on the gateway). Idempotent: an event that exists is left
# as it is.
#
#   GATEWAY_URL=http://127.0.0.1:8080 scripts/seed-dev.sh
set -euo pipefail
GW=${GATEWAY_URL:-http://127.0.0.1:8080}

tok=$(curl -fsS -X POST "$GW/api/auth/dev-token" -H 'Content-Type: application/json' \
	-d '{"user_id":"dev-admin","role":"admin"}' | sed -E 's/.*"token":"([^"]+)".*/\1/')
[ -n "$tok" ] || { echo "seed-dev: no dev token (is DEV_TOKENS=true?)" >&2; exit 1; }

create() { # JSON body
	local code
	code=$(curl -sS -o /tmp/seed-dev.$$ -w '%{http_code}' -X POST "$GW/api/admin/events" \
		-H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d "$1")
	case $code in
	201) echo "seed-dev: created $(sed -E 's/.*"id":"([^"]+)".*/\1/' /tmp/seed-dev.$$)" ;;
	409) echo "seed-dev: event already exists, left as it is" ;;
	*) echo "seed-dev: create failed ($code): $(cat /tmp/seed-dev.$$)" >&2; rm -f /tmp/seed-dev.$$; exit 1 ;;
	esac
	rm -f /tmp/seed-dev.$$
}

# A big show: 20 rows of 25 in three priced sections (orders of
# up to 4 seats), a room of 50, 10-minute holds.
create '{"id":"stadium-tour","name":"Stadium Tour — opening night","capacity":50,"hold_seconds":600,"grace_seconds":120,"max_seats_per_order":4,"sections":[{"name":"Floor","rows":5,"seats_per_row":25,"price_cents":9500},{"name":"Lower tier","rows":8,"seats_per_row":25,"price_cents":6500},{"name":"Upper tier","rows":7,"seats_per_row":25,"price_cents":3900}]}'
# A small club night with short holds, to watch the queue move: 4 × 10 seats,
# a room of 5, 2-minute holds.
create '{"id":"club-night","name":"Club Night","rows":4,"seats_per_row":10,"capacity":5,"hold_seconds":120,"grace_seconds":30}'
