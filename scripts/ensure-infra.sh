#!/usr/bin/env bash
# ensure-infra.sh — make sure Redis >= 7, RabbitMQ >= 3.10 and PostgreSQL
# >= 15 answer on loopback (127.0.0.1:6379, 127.0.0.1:5672 and
# 127.0.0.1:5432), and that PostgreSQL has the development role and
# database (boxoffice / boxoffice, owner of database boxoffice).
#
# Idempotent and fast when everything is up (a TCP check, one redis-cli call
# and a package query per service). A service that is installed but stopped
# is started; a missing one is installed from Debian's packages (apt-get, as
# root or through sudo). On systems without apt-get it prints what to
# install and exits 1. Every failure says why; nothing aborts silently.
#
# Environment:
#   REDIS_PASSWORD   used by redis-cli when the local Redis requires AUTH
#   INFRA_WAIT       seconds to wait for RabbitMQ to come up (default 60)
#   INFRA_REDIS_PORT, INFRA_RABBIT_PORT, INFRA_PG_PORT  other ports (for testing this script)
#   PG_DEV_USER, PG_DEV_PASSWORD, PG_DEV_DB  the development role and database
#                    (default boxoffice / boxoffice / boxoffice; the DATABASE_URL
#                    default of tools/stack (`make run`) and the ledger tests)

set -u -o pipefail

REDIS_HOST=127.0.0.1
REDIS_PORT=${INFRA_REDIS_PORT:-6379}
REDIS_MIN=7.0
RABBIT_HOST=127.0.0.1
RABBIT_PORT=${INFRA_RABBIT_PORT:-5672}
RABBIT_MIN=3.10
WAIT_RABBIT=${INFRA_WAIT:-60}
PG_HOST=127.0.0.1
PG_PORT=${INFRA_PG_PORT:-5432}
PG_MIN=15
PG_DEV_USER=${PG_DEV_USER:-boxoffice}
PG_DEV_PASSWORD=${PG_DEV_PASSWORD:-boxoffice}
PG_DEV_DB=${PG_DEV_DB:-boxoffice}

if [[ -n ${REDIS_PASSWORD:-} ]]; then
	export REDISCLI_AUTH=$REDIS_PASSWORD
fi

say() { echo "$*"; }
err() { echo "ensure-infra: $*" >&2; }

# Privilege prefix for installing and starting system services.
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	fi
fi

# port_open HOST PORT: true when something accepts TCP connections there.
port_open() {
	timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null
}

# version_ge A B: true when version A >= version B.
version_ge() {
	[[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]
}

# pkg_version PKG: upstream version of an installed Debian package, or empty.
pkg_version() {
	command -v dpkg-query >/dev/null 2>&1 || return 0
	local v
	v=$(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$1" 2>/dev/null) || return 0
	[[ $v == ii* ]] || return 0
	v=${v##* }
	v=${v#*:}  # epoch
	v=${v%%-*} # Debian revision
	v=${v%%+*}
	echo "$v"
}

apt_updated=0
# install PKG...: install Debian packages, or explain what to install and exit.
install() {
	if ! command -v apt-get >/dev/null 2>&1; then
		err "no apt-get on this system: install $* (Redis >= $REDIS_MIN with redis-cli, RabbitMQ >= $RABBIT_MIN, PostgreSQL >= $PG_MIN) with your package manager and run this again"
		exit 1
	fi
	if [[ $(id -u) -ne 0 && ${#SUDO[@]} -eq 0 ]]; then
		err "need root to install $*: run as root, install sudo, or run: apt-get install -y $*"
		exit 1
	fi
	say "installing $* (apt-get)..."
	if [[ $apt_updated -eq 0 ]]; then
		if ! "${SUDO[@]}" apt-get update -qq; then
			err "apt-get update failed"
			exit 1
		fi
		apt_updated=1
	fi
	if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/tmp/ensure-infra-apt.log 2>&1; then
		err "apt-get install $* failed; see /tmp/ensure-infra-apt.log:"
		tail -n 20 /tmp/ensure-infra-apt.log >&2
		exit 1
	fi
}

redis_cli() {
	timeout 5 redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" "$@" 2>&1
}

ensure_redis() {
	if ! command -v redis-cli >/dev/null 2>&1; then
		install redis-tools
	fi
	if ! port_open "$REDIS_HOST" "$REDIS_PORT"; then
		if ! command -v redis-server >/dev/null 2>&1; then
			install redis-server
		fi
	fi
	if ! port_open "$REDIS_HOST" "$REDIS_PORT"; then
		local dir=/var/lib/redis logdir=/var/log/redis
		if ! "${SUDO[@]}" mkdir -p "$dir" "$logdir" 2>/dev/null || ! "${SUDO[@]}" test -w "$logdir"; then
			dir=/tmp/boxoffice-redis logdir=/tmp/boxoffice-redis
			mkdir -p "$dir"
		fi
		say "redis: starting on $REDIS_HOST:$REDIS_PORT (log $logdir/ci.log)"
		if ! "${SUDO[@]}" redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" \
			--save "" --appendonly no --dir "$dir" --logfile "$logdir/ci.log"; then
			err "redis: redis-server failed to start; see $logdir/ci.log"
			exit 1
		fi
		local i
		for ((i = 0; i < 50; i++)); do
			[[ $(redis_cli ping) == PONG ]] && break
			sleep 0.2
		done
	fi
	local pong
	pong=$(redis_cli ping)
	if [[ $pong != PONG ]]; then
		err "redis: $REDIS_HOST:$REDIS_PORT does not answer PING (got: ${pong:-nothing}); check $REDIS_HOST:$REDIS_PORT (REDIS_PASSWORD if it needs AUTH)"
		exit 1
	fi
	local ver
	ver=$(redis_cli info server | tr -d '\r' | sed -n 's/^redis_version://p')
	if [[ -z $ver ]]; then
		err "redis: cannot read the server version (INFO server)"
		exit 1
	fi
	if ! version_ge "$ver" "$REDIS_MIN"; then
		err "redis: version $ver is too old, need >= $REDIS_MIN (stop it and install a newer redis-server)"
		exit 1
	fi
	say "redis: ok ($ver)"
}

rabbit_version() {
	local v
	v=$(pkg_version rabbitmq-server)
	if [[ -z $v ]] && command -v rabbitmqctl >/dev/null 2>&1; then
		v=$(timeout 20 "${SUDO[@]}" rabbitmqctl version 2>/dev/null | tail -n1)
	fi
	echo "$v"
}

ensure_rabbit() {
	if ! port_open "$RABBIT_HOST" "$RABBIT_PORT"; then
		if ! command -v rabbitmq-server >/dev/null 2>&1 && [[ ! -x /usr/sbin/rabbitmq-server ]]; then
			install rabbitmq-server
		fi
	fi
	if ! port_open "$RABBIT_HOST" "$RABBIT_PORT"; then
		local server=rabbitmq-server
		command -v rabbitmq-server >/dev/null 2>&1 || server=/usr/sbin/rabbitmq-server
		if pgrep -f 'beam.*rabbit' >/dev/null 2>&1; then
			say "rabbitmq: already starting, waiting up to ${WAIT_RABBIT}s"
		else
			say "rabbitmq: starting (up to ${WAIT_RABBIT}s)"
			if ! "${SUDO[@]}" "$server" -detached >/tmp/ensure-infra-rabbit.log 2>&1; then
				err "rabbitmq: rabbitmq-server -detached failed:"
				cat /tmp/ensure-infra-rabbit.log >&2
				exit 1
			fi
		fi
		local deadline=$((SECONDS + WAIT_RABBIT))
		until port_open "$RABBIT_HOST" "$RABBIT_PORT"; do
			if ((SECONDS >= deadline)); then
				err "rabbitmq: not answering on $RABBIT_HOST:$RABBIT_PORT after ${WAIT_RABBIT}s; see /var/log/rabbitmq/ and /tmp/ensure-infra-rabbit.log"
				exit 1
			fi
			sleep 1
		done
		if command -v rabbitmqctl >/dev/null 2>&1; then
			if ! timeout "$WAIT_RABBIT" "${SUDO[@]}" rabbitmqctl await_startup >/dev/null 2>&1; then
				err "rabbitmq: warning: rabbitmqctl await_startup did not confirm startup (the port answers)"
			fi
		fi
	fi
	local ver
	ver=$(rabbit_version)
	if [[ -z $ver ]]; then
		err "rabbitmq: warning: cannot tell the version (need >= $RABBIT_MIN)"
		say "rabbitmq: ok (version unknown)"
		return
	fi
	if ! version_ge "$ver" "$RABBIT_MIN"; then
		err "rabbitmq: version $ver is too old, need >= $RABBIT_MIN"
		exit 1
	fi
	say "rabbitmq: ok ($ver)"
}

# ensure_rabbit_shovel enables rabbitmq_shovel (scripts/replay-dlq.sh needs
# it; the fault suite replays its poison messages with it). --online
# enables it in the running broker without a restart.
ensure_rabbit_shovel() {
	command -v rabbitmq-plugins >/dev/null 2>&1 || return 0
	if timeout 30 "${SUDO[@]}" rabbitmq-plugins is_enabled rabbitmq_shovel >/dev/null 2>&1; then
		return 0
	fi
	if timeout 60 "${SUDO[@]}" rabbitmq-plugins enable --online rabbitmq_shovel >/tmp/ensure-infra-shovel.log 2>&1; then
		say "rabbitmq: plugin rabbitmq_shovel enabled"
	else
		err "rabbitmq: warning: could not enable rabbitmq_shovel (scripts/replay-dlq.sh needs it): $(tail -n3 /tmp/ensure-infra-shovel.log)"
	fi
}

# pg_admin ARGS...: psql as the postgres superuser (the local socket with
# peer auth, as Debian installs it; TCP as user postgres when that fails).
pg_admin() {
	local out
	if [[ $(id -u) -eq 0 ]] && command -v runuser >/dev/null 2>&1; then
		out=$(cd / && timeout 20 runuser -u postgres -- psql -X -q -At -p "$PG_PORT" -v ON_ERROR_STOP=1 "$@" 2>&1) && { echo "$out"; return 0; }
	elif [[ ${#SUDO[@]} -gt 0 ]]; then
		out=$(cd / && timeout 20 sudo -n -u postgres psql -X -q -At -p "$PG_PORT" -v ON_ERROR_STOP=1 "$@" 2>&1) && { echo "$out"; return 0; }
	fi
	timeout 20 psql -X -q -At -h "$PG_HOST" -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 "$@" 2>&1
}

ensure_postgres() {
	if ! port_open "$PG_HOST" "$PG_PORT"; then
		if ! command -v pg_ctlcluster >/dev/null 2>&1 || [[ -z $(ls /etc/postgresql 2>/dev/null) ]]; then
			install postgresql
		fi
	fi
	if ! port_open "$PG_HOST" "$PG_PORT"; then
		local ver
		ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)
		say "postgresql: starting cluster $ver/main"
		if ! "${SUDO[@]}" pg_ctlcluster --skip-systemctl-redirect "$ver" main start >/tmp/ensure-infra-pg.log 2>&1; then
			# already running on another port, or a real failure: the log says which
			err "postgresql: pg_ctlcluster $ver main start failed:"
			cat /tmp/ensure-infra-pg.log >&2
		fi
		local i
		for ((i = 0; i < 50; i++)); do
			port_open "$PG_HOST" "$PG_PORT" && break
			sleep 0.2
		done
		if ! port_open "$PG_HOST" "$PG_PORT"; then
			err "postgresql: not answering on $PG_HOST:$PG_PORT; see /var/log/postgresql/ and /tmp/ensure-infra-pg.log"
			exit 1
		fi
	fi
	local ver
	if ! ver=$(pg_admin -c 'SHOW server_version'); then
		err "postgresql: cannot connect as the postgres superuser: $ver"
		exit 1
	fi
	ver=${ver%% *}
	if ! version_ge "$ver" "$PG_MIN"; then
		err "postgresql: version $ver is too old, need >= $PG_MIN"
		exit 1
	fi
	# The development role and database, created once (idempotent).
	local out
	if [[ $(pg_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$PG_DEV_USER'") != 1 ]]; then
		say "postgresql: creating role $PG_DEV_USER"
		if ! out=$(pg_admin -c "CREATE ROLE \"$PG_DEV_USER\" LOGIN PASSWORD '$PG_DEV_PASSWORD'"); then
			err "postgresql: create role $PG_DEV_USER failed: $out"
			exit 1
		fi
	fi
	if [[ $(pg_admin -c "SELECT 1 FROM pg_database WHERE datname = '$PG_DEV_DB'") != 1 ]]; then
		say "postgresql: creating database $PG_DEV_DB"
		if ! out=$(pg_admin -c "CREATE DATABASE \"$PG_DEV_DB\" OWNER \"$PG_DEV_USER\""); then
			err "postgresql: create database $PG_DEV_DB failed: $out"
			exit 1
		fi
	fi
	if ! out=$(PGPASSWORD=$PG_DEV_PASSWORD timeout 10 psql -X -q -At -h "$PG_HOST" -p "$PG_PORT" -U "$PG_DEV_USER" -d "$PG_DEV_DB" -c 'SELECT 1' 2>&1); then
		err "postgresql: $PG_DEV_USER cannot log in to $PG_DEV_DB over TCP: $out"
		exit 1
	fi
	say "postgresql: ok ($ver, database $PG_DEV_DB)"
}

ensure_redis
ensure_rabbit
ensure_rabbit_shovel
ensure_postgres
