#!/usr/bin/env bash
# ensure-axe.sh — make sure axe-core's axe.min.js (the accessibility engine
# the browser test runs on every page state) is in a cache outside git, and
# print its path. Fetched once with `npm pack` from the npm registry, pinned
# to AXE_VERSION, and checked against its published integrity by npm.
# axe-core is MPL-2.0; it is used unmodified and never committed.
set -euo pipefail
version=${AXE_VERSION:-4.14.1}
cache=${BOXOFFICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/boxoffice}/axe-core-$version
file=$cache/axe.min.js
if [[ -s $file ]]; then
	echo "$file"
	exit 0
fi
command -v npm >/dev/null || "$(dirname "$0")/ensure-tool.sh" npm npm >&2 || {
	echo "ensure-axe.sh: npm is needed to fetch axe-core" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "axe-core@$version" >/dev/null 2>"$tmp/npm.log") || {
	cat "$tmp/npm.log" >&2
	echo "ensure-axe.sh: npm pack axe-core@$version failed" >&2
	exit 1
}
tar -xzf "$tmp"/axe-core-*.tgz -C "$tmp" package/axe.min.js package/LICENSE
mkdir -p "$cache"
mv "$tmp/package/LICENSE" "$cache/LICENSE"
mv "$tmp/package/axe.min.js" "$file.part" && mv "$file.part" "$file"
echo "$file"
