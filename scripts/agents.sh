#!/usr/bin/env bash
# The agents suite (`make agents`): installs the agent CLIs pinned in
# test/agents/package.json (Claude Code, Codex CLI, gemini-cli, Cline) with
# npm when they are missing or the lock file changed, then runs the Go
# tests in test/agents, which drive them headless through shepherd against
# the scripted mock provider. Installs Debian's nodejs and npm when npm is
# missing. `scripts/test.sh` (`make test`) runs it with --install-only and
# then tests the package with everything else.
#
#   --install-only  install the CLIs, do not run the tests
#   GOTEST_FLAGS    extra `go test` flags (word-split), e.g. '-run Codex -v'
#   SHEPHERD_AGENTS=0  skip the suite entirely (exit 0 at once)
set -euo pipefail
cd "$(dirname "$0")/.."

GO="${GO:-go}"
GOTEST_FLAGS="${GOTEST_FLAGS:-}"
dir=test/agents

log() { echo "agents.sh: $*" >&2; }
die() { log "$*"; exit 1; }

if [[ "${SHEPHERD_AGENTS:-}" == 0 ]]; then
  log "SHEPHERD_AGENTS=0: skipping the agents suite"
  exit 0
fi

# shellcheck source=scripts/lib.sh
source "scripts/lib.sh"

if ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm || die "install Node.js and npm (Debian packages nodejs, npm)"
fi

# node_modules/.package-lock.json is npm's record of the installed tree; it
# is older than package-lock.json when the pins changed.
stamp="$dir/node_modules/.package-lock.json"
if [[ ! -f "$stamp" || "$dir/package-lock.json" -nt "$stamp" ]]; then
  log "installing the pinned agent CLIs (npm install in $dir)"
  # Not `npm ci`: the registry this runs against may lack the optional
  # platform packages of other systems (Cline's darwin/windows binaries),
  # which `npm ci` demands in the lock file. `npm install --no-save` follows
  # the lock file for everything it resolves and leaves it unchanged.
  (cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error)
fi
for b in claude codex gemini cline; do
  [[ -x "$dir/node_modules/.bin/$b" ]] || die "$b missing after npm install"
done

[[ "${1:-}" == --install-only ]] && exit 0

export SHEPHERD_AGENTS=1
# One package, one process at a time: the CLIs are heavy and the suite is
# timed for two cores.
# shellcheck disable=SC2086
exec "$GO" test -count=1 -p 1 -timeout 10m $GOTEST_FLAGS "./$dir/"
