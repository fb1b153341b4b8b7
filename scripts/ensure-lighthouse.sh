#!/usr/bin/env bash
# ensure-lighthouse.sh — make sure Lighthouse (the npm package, pinned to
# LIGHTHOUSE_VERSION; 12.x runs on Node 18+) is installed in a cache outside
# git, and print the path of its CLI. Used by the opt-in Lighthouse check
# (docs/testing.md); Chromium comes from scripts/ensure-chromium.sh.
set -euo pipefail
version=${LIGHTHOUSE_VERSION:-12.8.2}
dir=${BOXOFFICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/boxoffice}/lighthouse-$version
cli=$dir/node_modules/lighthouse/cli/index.js
if [[ -s $cli ]]; then
	echo "$cli"
	exit 0
fi
command -v npm >/dev/null || "$(dirname "$0")/ensure-tool.sh" npm npm >&2 || {
	echo "ensure-lighthouse.sh: npm is needed to install lighthouse" >&2
	exit 1
}
mkdir -p "$dir"
(cd "$dir" && npm install --silent --no-audit --no-fund --no-save "lighthouse@$version" >&2) || {
	echo "ensure-lighthouse.sh: npm install lighthouse@$version failed" >&2
	exit 1
}
echo "$cli"
