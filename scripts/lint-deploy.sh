#!/usr/bin/env bash
# lint-deploy.sh — offline checks of docker-compose.yml and deployments/,
# run by `make lint` (no Docker engine needed), and the Helm chart in
# deployments/helm (lint, render, variables; see deployments/helm/chart_test.go). See deployments/lint/lint.py
# for the list of checks. Then builds every service binary exactly as
# deployments/Dockerfile does (its own `go build` lines: CGO_ENABLED=0,
# -trimpath, from the workspace root) into a temporary directory, and checks
# each is static.
#
#   scripts/lint-deploy.sh                       # everything
#   scripts/lint-deploy.sh --no-build            # the static checks only
#   scripts/lint-deploy.sh --compose FILE        # check another compose file
#                                                # (paths resolve against the repo root)
#   scripts/lint-deploy.sh --env-table           # print the README configuration table
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

if ! command -v python3 >/dev/null 2>&1; then
	echo "lint-deploy: python3 is required" >&2
	exit 1
fi
if ! python3 -c 'import yaml' 2>/dev/null; then
	echo "lint-deploy: python3 module yaml is missing (apt-get install python3-yaml, or pip install pyyaml)" >&2
	exit 1
fi

build=1
args=()
while (($#)); do
	case $1 in
	--no-build) build=0 ;;
	--env-table) exec python3 deployments/lint/lint.py --root "$ROOT" --env-table ;;
	--compose)
		args+=(--compose "$2")
		shift
		;;
	*)
		echo "lint-deploy: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done

# The healthcheck probe builds outside the workspace; vet it the same way.
if ! out=$(GOWORK=off go vet ./deployments/healthcheck/main.go 2>&1); then
	echo "lint-deploy: go vet deployments/healthcheck:" >&2
	echo "$out" >&2
	exit 1
fi
if [[ -n $(gofmt -l deployments pkg/obs) ]]; then
	echo "lint-deploy: gofmt needed: $(gofmt -l deployments pkg/obs)" >&2
	exit 1
fi

# The Helm chart: helm lint and render with Helm's Go packages, and every
# variable the chart sets checked against the services' Config (its own
# module outside go.work: Helm's Kubernetes dependencies stay out of the
# services' builds).
if ! out=$(cd deployments/helm && GOWORK=off go vet . 2>&1 && GOWORK=off go test -count=1 . 2>&1); then
	echo "lint-deploy: deployments/helm (the Helm chart):" >&2
	echo "$out" >&2
	exit 1
fi

if ((build)); then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	args+=(--build "$tmp")
fi
start=$SECONDS
python3 deployments/lint/lint.py --root "$ROOT" "${args[@]}"
echo "lint-deploy: ok ($((SECONDS - start))s)"
