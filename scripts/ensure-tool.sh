#!/usr/bin/env bash
# ensure-tool.sh — make sure a command is installed, installing its Debian
# package with apt-get (as root or through sudo) when it is missing. Exits 1
# with the reason when it cannot.
#
#   scripts/ensure-tool.sh wrk wrk
#   scripts/ensure-tool.sh redis-benchmark redis-tools
set -u -o pipefail
cmd=${1:?usage: ensure-tool.sh <command> <debian-package>}
pkg=${2:?usage: ensure-tool.sh <command> <debian-package>}
command -v "$cmd" >/dev/null && exit 0
if ! command -v apt-get >/dev/null; then
	echo "$cmd not found and apt-get unavailable: install $pkg with your package manager" >&2
	exit 1
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "$cmd not found; run as root or install it: apt-get install $pkg" >&2
		exit 1
	fi
	sudo="sudo -n"
fi
echo "installing $pkg (Debian package)…" >&2
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq "$pkg"; } >&2; then
	echo "apt-get install $pkg failed" >&2
	exit 1
fi
command -v "$cmd" >/dev/null || { echo "$pkg installed but $cmd is still missing" >&2; exit 1; }
