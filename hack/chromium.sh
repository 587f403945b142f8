#!/usr/bin/env bash
# Finds a headless-capable Chromium for the report's browser test, and installs
# Debian's package when there is none, so `make test` on a fresh machine opens
# the simulator's HTML report in a real browser instead of skipping it.
#
# Usage: hack/chromium.sh        prints the path of the chromium binary
#
# Environment:
#   NODEWRIGHT_CHROMIUM   a binary to use as it is (checked, never installed)
set -euo pipefail

log() { echo "chromium.sh: $*" >&2; }

find_chromium() {
  if [ -n "${NODEWRIGHT_CHROMIUM:-}" ]; then
    command -v "$NODEWRIGHT_CHROMIUM" && return 0
    log "NODEWRIGHT_CHROMIUM=$NODEWRIGHT_CHROMIUM is not executable"
    return 1
  fi
  # chromium-headless-shell is smaller and starts faster, but Debian ships
  # the full browser more often; either renders the report the same way.
  local b
  for b in chromium-headless-shell chromium chromium-browser; do
    command -v "$b" && return 0
  done
  return 1
}

if find_chromium; then exit 0; fi
if [ -n "${NODEWRIGHT_CHROMIUM:-}" ]; then exit 1; fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  log "chromium is not installed and installing it needs root:"
  log "  apt-get install -y --no-install-recommends chromium"
  exit 1
fi

# Several test processes may ask at once; dpkg allows only one installer, and
# the others should wait for it rather than fail on its lock.
lock="${TMPDIR:-/tmp}/nodewright-chromium.lock"
exec 9>"$lock"
flock 9
if find_chromium; then exit 0; fi

export DEBIAN_FRONTEND=noninteractive
log "installing Debian's chromium package (a few minutes the first time)"
# The package lists of a fresh machine may be empty or stale, and an install
# from them fails with 404s; refresh them first.
"${sudo[@]}" apt-get update -qq -o DPkg::Lock::Timeout=300 >&2
"${sudo[@]}" apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends chromium >&2
find_chromium || { log "chromium still missing after apt-get install"; exit 1; }
