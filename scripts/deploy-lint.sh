#!/usr/bin/env bash
# Lints the deployment files: `helm lint --strict` on deploy/helm/shepherd,
# `helm template` with the default values and with every option on,
# `kubeconform` on the rendered manifests and on deploy/k8s, and `promtool
# check config` on deploy/prometheus (promtool from Debian's prometheus
# package, installed when missing; test/deploy also uses it).
#
# helm and kubeconform are not Debian packages: they are built with
# `go install` at pinned versions into a cache ($SHEPHERD_TOOLS, default
# ~/.cache/shepherd/tools), once; later runs reuse the binaries. A tool that
# cannot be installed is skipped with the reason printed. kubeconform needs
# the Kubernetes JSON schemas: from $KUBECONFORM_SCHEMA_LOCATION (a local
# folder or mirror, kubeconform's -schema-location syntax) when set, else
# its default location, cached under the tools folder; when they cannot be
# fetched (no network), it is skipped with the reason printed.
#
# Everything is logged on stderr; stdout gets only the helm binary's path
# when helm is available, so scripts/test.sh can hand it to the Go tests
# (SHEPHERD_HELM, test/deploy). Exit status: non-zero when a lint fails.
set -euo pipefail
cd "$(dirname "$0")/.."

GO="${GO:-go}"
HELM_VERSION=v3.22.0
KUBECONFORM_VERSION=v0.7.0
TOOLS="${SHEPHERD_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/shepherd/tools}"
CHART=deploy/helm/shepherd

log() { echo "deploy-lint: $*" >&2; }

# shellcheck source=scripts/lib.sh
source "scripts/lib.sh"

# tool NAME VERSION MODULE_PATH: prints the path of the cached binary,
# building it with go install first; fails when it cannot be built.
tool() {
  local name="$1" version="$2" pkg="$3"
  local dir="$TOOLS/$name-$version"
  if [[ ! -x "$dir/$name" ]]; then
    log "building $name $version (go install $pkg@$version, once)"
    mkdir -p "$dir"
    if ! (cd "$dir" && GOBIN="$dir" GOFLAGS= timeout 600 "$GO" install "$pkg@$version") >&2; then
      return 1
    fi
  fi
  echo "$dir/$name"
}

status=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

helm=""
if command -v helm >/dev/null 2>&1; then
  helm="$(command -v helm)"
elif ! helm="$(tool helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm)"; then
  log "SKIP helm lint and template: helm $HELM_VERSION could not be built with go install"
  helm=""
fi

rendered=()
if [[ -n "$helm" ]]; then
  log "helm lint --strict $CHART"
  "$helm" lint --strict "$CHART" >&2 || status=1
  "$helm" lint --strict "$CHART" --set replicaCount=3,redis.url=redis://redis:6379/0,serviceMonitor.enabled=true,podDisruptionBudget.enabled=true >&2 || status=1
  log "helm template $CHART (defaults; replicas on Redis with every option on)"
  if "$helm" template shepherd "$CHART" >"$tmp/defaults.yaml"; then
    rendered+=("$tmp/defaults.yaml")
  else
    status=1
  fi
  if "$helm" template shepherd "$CHART" --set replicaCount=3,redis.existingSecret=shepherd-redis,admin.existingSecret=shepherd-admin,serviceMonitor.enabled=true,podDisruptionBudget.enabled=true >"$tmp/all.yaml"; then
    rendered+=("$tmp/all.yaml")
  else
    status=1
  fi
  if "$helm" template shepherd "$CHART" --set replicaCount=3 >/dev/null 2>&1; then
    log "FAIL: replicas without Redis rendered; the chart must refuse them"
    status=1
  fi
fi

# promtool (Debian's prometheus package) checks the Prometheus config of
# deploy/compose.yaml here, and the dashboard's queries in test/deploy.
if ! command -v promtool >/dev/null 2>&1; then
  apt_install --no-install-recommends prometheus >&2 || true
fi
if command -v promtool >/dev/null 2>&1; then
  log "promtool check config deploy/prometheus/prometheus.yml"
  promtool check config deploy/prometheus/prometheus.yml >&2 || status=1
else
  log "SKIP promtool: Debian's prometheus package could not be installed"
fi

kubeconform=""
if ! kubeconform="$(tool kubeconform "$KUBECONFORM_VERSION" github.com/yannh/kubeconform/cmd/kubeconform)"; then
  log "SKIP kubeconform: $KUBECONFORM_VERSION could not be built with go install"
  kubeconform=""
fi
if [[ -n "$kubeconform" ]]; then
  mkdir -p "$TOOLS/kubeconform-cache"
  schemas=(-schema-location default
    -schema-location 'https://raw.githubusercontent.com/datreeio/CRDs-catalog/main/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json')
  if [[ -n "${KUBECONFORM_SCHEMA_LOCATION:-}" ]]; then
    schemas=(-schema-location "$KUBECONFORM_SCHEMA_LOCATION")
  fi
  kc=("$kubeconform" -strict -summary -cache "$TOOLS/kubeconform-cache" "${schemas[@]}")
  probe="$(printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\n' | "${kc[@]}" - 2>&1 || true)"
  if grep -q "failed downloading schema\|could not find schema\|no such host" <<<"$probe"; then
    log "SKIP kubeconform: the Kubernetes JSON schemas cannot be fetched (set KUBECONFORM_SCHEMA_LOCATION to a local copy)"
  else
    log "kubeconform ${rendered[*]} deploy/k8s"
    "${kc[@]}" "${rendered[@]}" deploy/k8s >&2 || status=1
  fi
fi

[[ -n "$helm" ]] && echo "$helm"
exit "$status"
