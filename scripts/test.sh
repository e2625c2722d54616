#!/usr/bin/env bash
# The test command: installs what the tests need on a fresh machine, then runs the checks.
#   system: redis-server, PostgreSQL, Chromium, patch and a C compiler (Debian packages) when missing;
#   python: scripts/install.sh into .venv;
#   checks: ruff, mypy --strict on the package, pytest (extra args go to pytest).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v patch >/dev/null 2>&1 || missing+=(patch)  # sa diff --plain is checked with it
command -v cc >/dev/null 2>&1 || missing+=(gcc)  # the CPU engine's int8 kernel (engines/int8_gemv.c)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing ${missing[*]} from Debian packages"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

bash scripts/install.sh
V=${VENV:-.venv}/bin
"$V/ruff" check .
"$V/ruff" format --check .
"$V/mypy" --strict structured_agents
"$V/pytest" "$@"
