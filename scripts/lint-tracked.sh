#!/usr/bin/env bash
# lint-tracked.sh — nothing built is tracked; run by `make lint`.
#
# Fails when git tracks (in the index, so a file staged for the next commit
# counts too):
#   - a file larger than 1 MiB, or
#   - an ELF file (its first four bytes are \x7fELF: a Go binary, a test
#     binary, a shared object),
# unless the path is in ALLOW below. It also fails when .gitignore does not
# cover the binary a plain `go build` leaves for a main package: for
# <dir>/<name> holding `package main`, both <dir>/<name>/<name> (built in
# that directory) and /<name> (built from the repository root) must be
# ignored.
#
#   scripts/lint-tracked.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# Paths (relative to the repository root) allowed to be large or ELF
# despite the rules above, one per line. Empty: nothing needs it.
ALLOW=""

MAX_BYTES=$((1024 * 1024))

allowed() {
	local p
	while IFS= read -r p; do
		[[ -n $p && $p == "$1" ]] && return 0
	done <<<"$ALLOW"
	return 1
}

fail=0
export LC_ALL=C

# Sizes of the indexed blobs: "<mode> <hash> <stage>\t<path>" from
# ls-files, then one cat-file call for every size.
declare -A size
while IFS=$'\t' read -r bytes path; do
	size[$path]=$bytes
done < <(git ls-files -s -z | tr '\0' '\n' |
	awk -F'\t' '{ split($1, a, " "); if (a[1] != "160000") print a[2] "\t" $2 }' |
	git cat-file --batch-check=$'%(objectsize)\t%(rest)')

for path in "${!size[@]}"; do
	allowed "$path" && continue
	if ((size[$path] > MAX_BYTES)); then
		echo "lint-tracked: $path is tracked and $((size[$path] / 1024)) KiB (over 1 MiB): git rm --cached it, or add it to ALLOW in $0 with a reason" >&2
		fail=1
	fi
done

# ELF files, by their magic number in the index (the worktree copy may
# differ): one git grep when git has PCRE, else one blob at a time.
if ! elf=$(git grep --cached -l -P '\A\x7fELF' 2>/dev/null; rc=$?; ((rc <= 1)) || exit $rc); then
	elf=$(for path in "${!size[@]}"; do
		magic=$(git cat-file blob ":$path" | head -c4 | od -An -tx1 | tr -d ' \n')
		if [[ $magic == 7f454c46 ]]; then echo "$path"; fi
	done)
fi
while IFS= read -r path; do
	[[ -z $path ]] && continue
	allowed "$path" && continue
	echo "lint-tracked: $path is a tracked ELF binary: git rm --cached it and ignore it in .gitignore" >&2
	fail=1
done <<<"$elf"

# Every main package's `go build` output is ignored.
while IFS= read -r dir; do
	name=$(basename "$dir")
	for p in "$dir/$name" "$name"; do
		if ! git check-ignore -q --no-index "$p"; then
			echo "lint-tracked: .gitignore does not cover /$p (the binary of \`go build\` for $dir)" >&2
			fail=1
		fi
	done
done < <(git ls-files -- '*.go' | grep -v '_test\.go$' |
	xargs grep -l -m1 -E '^package main$' | xargs -n1 dirname | sort -u)

if ((fail)); then
	exit 1
fi
echo "lint-tracked: ok (${#size[@]} tracked files)"
