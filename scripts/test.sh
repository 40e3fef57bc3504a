#!/usr/bin/env bash
# The project's test command (`make test`): go vet, then go test -race.
#
# Redis-backed tests need REDIS_URL. When it is unset this script starts a
# private, throwaway redis-server on a free 127.0.0.1 port (installing
# Debian's redis-server package if missing), points REDIS_URL at it, and stops
# it on exit. It never uses a system Redis on 6379.
#
#   REDIS_URL     use this server instead of a private one (tests only touch
#                 keys under a random per-test prefix and delete them)
#   GOTEST_PKGS   packages to vet and test (default ./...)
#   GOTEST_FLAGS  extra `go test` flags (word-split), e.g. '-run Redis -v'
#   SHEPHERD_CHROMIUM=0  do not install Chromium (test/console's browser
#                 tests then skip unless one is installed)
#   SHEPHERD_AGENTS=0  skip the agents suite (test/agents), which otherwise
#                 runs with the rest after scripts/agents.sh installed the CLIs
#   SHEPHERD_DEPLOY_LINT=0  skip scripts/deploy-lint.sh (helm lint/template,
#                 kubeconform on deploy/); test/deploy's chart test then
#                 skips unless helm is on the PATH
set -euo pipefail
cd "$(dirname "$0")/.."

GO="${GO:-go}"
GOTEST_PKGS="${GOTEST_PKGS:-./...}"
GOTEST_FLAGS="${GOTEST_FLAGS:-}"

log() { echo "test.sh: $*" >&2; }
die() { log "$*"; exit 1; }

redis_pid=""
redis_dir=""
cleanup() {
  if [[ -n "$redis_pid" ]] && kill -0 "$redis_pid" 2>/dev/null; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  if [[ -n "$redis_dir" ]]; then
    rm -rf "$redis_dir"
  fi
}
trap cleanup EXIT

# shellcheck source=scripts/lib.sh
source "scripts/lib.sh"

ensure_redis_server() {
  command -v redis-server >/dev/null 2>&1 && return 0
  log "redis-server not found"
  apt_install redis-server || die "install redis-server (Debian package redis-server), or set REDIS_URL"
  command -v redis-server >/dev/null 2>&1 || die "redis-server still missing after install"
}

# race_flag prints -race when the race detector can work: it needs cgo and a
# C compiler, which a bare Go install on Debian may lack (gcc is installed
# then, as for redis-server). Without one it warns and prints nothing. It runs
# in a subshell, so the caller sets CGO_ENABLED.
race_flag() {
  if [[ "$("$GO" env CGO_ENABLED)" == 1 ]]; then
    echo "-race"
    return
  fi
  local cc
  cc="$("$GO" env CC)"
  if ! command -v "${cc:-gcc}" >/dev/null 2>&1; then
    apt_install gcc libc6-dev >&2 || true
  fi
  if command -v "${cc:-gcc}" >/dev/null 2>&1; then
    echo "-race"
    return
  fi
  log "WARNING: no C compiler, so no cgo: running tests WITHOUT the race detector"
}

# port_in_use PORT: something accepts connections on 127.0.0.1:PORT.
port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port prints a TCP port on 127.0.0.1 that is free right now. The caller
# still retries if redis-server loses a race for it.
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' && return 0
  fi
  local p i
  for i in $(seq 1 50); do
    p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    port_in_use "$p" || { echo "$p"; return 0; }
  done
  return 1
}

# redis_ping PORT: the server on PORT answers PING with PONG.
redis_ping() {
  if command -v redis-cli >/dev/null 2>&1; then
    [[ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" == "PONG" ]]
    return
  fi
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'PING\r\n' >&3
    IFS= read -r -t 1 reply <&3 || exit 1
    [[ "$reply" == "+PONG"* ]]
  ) 2>/dev/null
}

start_private_redis() {
  ensure_redis_server
  redis_dir="$(mktemp -d "${TMPDIR:-/tmp}/shepherd-redis.XXXXXX")"
  local attempt port i
  for attempt in 1 2 3 4 5; do
    port="$(free_port)" || die "no free TCP port found"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --daemonize no --dir "$redis_dir" --logfile "$redis_dir/redis.log" &
    redis_pid=$!
    for i in $(seq 1 100); do # up to ~10s
      if ! kill -0 "$redis_pid" 2>/dev/null; then
        break # exited, e.g. lost the port to someone else: try another
      fi
      if redis_ping "$port"; then
        export REDIS_URL="redis://127.0.0.1:$port/0"
        log "private redis-server (pid $redis_pid) at $REDIS_URL"
        return 0
      fi
      sleep 0.1
    done
    log "redis-server on port $port did not come up (attempt $attempt); log:"
    tail -n 20 "$redis_dir/redis.log" >&2 2>/dev/null || true
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=""
  done
  die "could not start a private redis-server"
}

if [[ -n "${REDIS_URL:-}" ]]; then
  log "using REDIS_URL from the environment"
else
  start_private_redis
fi

# The cluster suites (test/cluster, state's TestRedisClusterContracts) start
# their own Redis Cluster and Sentinel processes (redis-server; redis-cli,
# from redis-tools, which redis-server depends on) and an nginx balancer:
# install them when missing. The suites skip, saying why, only if that
# fails.
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  apt_install redis-server redis-tools || log "WARNING: no redis-server/redis-cli: the cluster suites will skip"
fi
if ! command -v nginx >/dev/null 2>&1 && [[ ! -x /usr/sbin/nginx ]]; then
  apt_install nginx-light || log "WARNING: no nginx: the multi-replica suites will skip"
fi

# The console's browser tests (test/console) drive a headless Chromium:
# install Debian's chromium when none is there; failing to is a failure, not a
# skip (SHEPHERD_CHROMIUM=0 opts out).
bash scripts/ensure-chromium.sh
if [[ "${SHEPHERD_CHROMIUM:-}" != 0 ]]; then
  export SHEPHERD_REQUIRE_BROWSER=1
fi

# The agents suite (test/agents) needs the pinned agent CLIs: install them
# and make their absence a failure rather than a skip.
if [[ "${SHEPHERD_AGENTS:-}" != 0 ]]; then
  bash scripts/agents.sh --install-only
  export SHEPHERD_AGENTS=1
fi

# The deployment files: helm and kubeconform are built once with go install
# (cached) and skipped with a reason when they cannot be; a lint that fails
# fails the run. The helm it used renders the chart in test/deploy too.
deploy_status=0
if [[ "${SHEPHERD_DEPLOY_LINT:-}" != 0 ]]; then
  SHEPHERD_HELM="$(bash scripts/deploy-lint.sh)" || deploy_status=$?
  export SHEPHERD_HELM
fi

# shellcheck disable=SC2086 # GOTEST_PKGS and GOTEST_FLAGS are word lists
"$GO" vet $GOTEST_PKGS
race="$(race_flag)"
if [[ -n "$race" ]]; then
  export CGO_ENABLED=1 # the default is 0 where no compiler was found at Go's install
fi
status=0
# shellcheck disable=SC2086
"$GO" test $race -count=1 $GOTEST_FLAGS $GOTEST_PKGS || status=$?
if [[ "$deploy_status" != 0 ]]; then
  log "scripts/deploy-lint.sh failed (see above)"
  status=1
fi
exit "$status"
