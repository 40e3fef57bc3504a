#!/usr/bin/env bash
# Makes sure a headless-capable Chromium is installed for the console's
# browser tests (test/console, driven by chromedp). When none is found it
# installs Debian's `chromium` package (as root or via sudo, like
# redis-server in scripts/test.sh). When Chromium cannot be installed it
# fails, so `make test` never passes with the browser tests skipped.
#
#   SHEPHERD_CHROMIUM=0   do not install anything (the tests skip unless a
#                         browser is already there)
#
# It prints nothing on success when a browser is already present.
set -uo pipefail
cd "$(dirname "$0")/.."

log() { echo "ensure-chromium.sh: $*" >&2; }

# shellcheck source=scripts/lib.sh
source "scripts/lib.sh"

find_chromium() {
  local b
  for b in chromium chromium-browser google-chrome-stable google-chrome headless-shell chrome; do
    if command -v "$b" >/dev/null 2>&1; then
      command -v "$b"
      return 0
    fi
  done
  return 1
}

if path="$(find_chromium)"; then
  exit 0
fi
if [[ "${SHEPHERD_CHROMIUM:-}" == 0 ]]; then
  log "no Chromium and SHEPHERD_CHROMIUM=0: the console's browser tests will skip"
  exit 0
fi
log "Chromium not found: installing Debian's chromium for the console's browser tests"
if ! apt_install chromium; then
  log "ERROR: could not install chromium (SHEPHERD_CHROMIUM=0 skips the browser tests)"
  exit 1
fi
if path="$(find_chromium)"; then
  log "installed: $path"
else
  log "ERROR: chromium still missing after install (SHEPHERD_CHROMIUM=0 skips the browser tests)"
  exit 1
fi
exit 0
