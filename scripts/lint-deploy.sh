#!/usr/bin/env bash
# lint-deploy.sh — the deployment checks, run by `make lint` (no Docker
# engine needed): deployments/check's tests (docker-compose.yml, the
# Dockerfile, Prometheus with promtool, the Grafana dashboards and
# pkg/stacktest's service list against the code; its package comment lists
# every check), then the Helm chart in deployments/helm (lint, render,
# variables; see deployments/helm/chart_test.go). Unless --no-build, the
# check also builds every service binary exactly as deployments/Dockerfile
# does (its own `go build` lines: CGO_ENABLED=0, -trimpath, from the
# workspace root) into a temporary directory, and checks each is static.
#
#   scripts/lint-deploy.sh                # everything
#   scripts/lint-deploy.sh --no-build     # the static checks only
#   scripts/lint-deploy.sh --env-table    # print the README configuration table
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

build=1
while (($#)); do
	case $1 in
	--no-build) build=0 ;;
	--env-table) exec go run ./deployments/check -env-table ;;
	*)
		echo "lint-deploy: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done

# promtool (Debian's prometheus package) checks the Prometheus files.
scripts/ensure-tool.sh promtool prometheus

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

start=$SECONDS
if ! out=$(BOXOFFICE_DEPLOY_BUILD=$build go test -count=1 -timeout 30m ./deployments/check 2>&1); then
	echo "lint-deploy: deployments/check:" >&2
	echo "$out" >&2
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
echo "lint-deploy: ok ($((SECONDS - start))s)"
