#!/usr/bin/env bash
# ensure-chromium.sh — make sure a headless-capable Chromium is installed for
# the browser test. Prints the binary's path. Installs Debian's `chromium`
# package (scripts/ensure-tool.sh) when it is missing; exits 1 with the
# reason when it cannot.
set -u -o pipefail
for b in "${CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
	if [[ -n $b && -x $b ]]; then
		echo "$b"
		exit 0
	fi
done
"$(dirname "$0")/ensure-tool.sh" chromium chromium || {
	echo "set CHROMIUM=/path/to/chromium to use another build" >&2
	exit 1
}
command -v chromium
