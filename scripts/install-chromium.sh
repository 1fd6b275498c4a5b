#!/usr/bin/env bash
# Install Debian's chromium for the browser tests (tests/report/test_report.py and
# tests/docs/test_site.py look for /usr/bin/chromium and skip without it). Idempotent: does nothing when present.
# Needs root (or sudo) and apt-get; CI runs it before `make test`.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && [ -x /usr/bin/chromium ]; then
    echo "chromium already installed: $(chromium --version 2>/dev/null || echo /usr/bin/chromium)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium.sh: apt-get not found; install chromium at /usr/bin/chromium by hand" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium
chromium --version
