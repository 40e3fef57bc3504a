# Shared helpers of the repo's scripts; source it after defining log().
#
# apt_install PKG...: installs Debian packages as root or via sudo; fails
# (returns non-zero) when neither is possible.
apt_install() {
  local sudo=""
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { log "not root and no sudo: cannot install $*"; return 1; }
    sudo="sudo"
  fi
  command -v apt-get >/dev/null 2>&1 || { log "apt-get unavailable: cannot install $*"; return 1; }
  log "installing Debian packages: $*"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
