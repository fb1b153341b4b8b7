#!/usr/bin/env bash
# ensure-chromium.sh — make sure a headless-capable Chromium is installed for
# the browser test. Prints the binary's path. Installs Debian's `chromium`
# package with apt-get (as root or through sudo) when it is missing; exits 1
# with the reason when it cannot.
set -u -o pipefail
for b in "${CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
	if [[ -n $b && -x $b ]]; then
		echo "$b"
		exit 0
	fi
done
if ! command -v apt-get >/dev/null; then
	echo "chromium not found and apt-get unavailable: install Chromium and set CHROMIUM=/path/to/chromium" >&2
	exit 1
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "chromium not found; run as root or install it: apt-get install chromium" >&2
		exit 1
	fi
	sudo="sudo -n"
fi
echo "installing chromium (Debian package)…" >&2
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium; } >&2; then
	echo "apt-get install chromium failed" >&2
	exit 1
fi
echo /usr/bin/chromium
