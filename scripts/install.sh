#!/usr/bin/env bash
# Install structured-agents with the CPU model stack into .venv (or $VENV).
#
#   [EXTRAS="model dev"] bash scripts/install.sh [--deps-only]
#
# EXTRAS: pyproject.toml's optional dependencies to add (default: model dev). --deps-only installs
# everything but the project itself (the images install it in a later layer, so a code change
# does not reinstall the dependencies).
#   torch (with `model`) is pinned to the CPU build (an unpinned torch pulls a multi-GB CUDA
#   build); where the index holds CUDA builds (PyPI on Linux), set TORCH_INDEX_URL to a CPU index
#   (the model image does by default);
#   xgrammar goes in with --no-deps (its metadata pulls triton, 1 GB, GPU only);
#   everything else comes from pyproject.toml through scripts/deps.py.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS_ONLY=false
[ "${1:-}" != --deps-only ] || DEPS_ONLY=true
read -r -a EXTRAS <<<"${EXTRAS-model dev}"
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@"; }
pip install --upgrade pip
modules=()  # imported at the end as a check (xgrammar imports torch: only with `model`)
if [[ " ${EXTRAS[*]} " == *" model "* ]]; then
  pip install torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
  modules+=(torch xgrammar)
fi
pip install --no-deps xgrammar==0.2.8
if [ "$DEPS_ONLY" = false ]; then
  pip install --no-deps -e .
  modules+=(structured_agents)
fi
pip install -r <("$VENV/bin/python" scripts/deps.py "${EXTRAS[@]}")
[ ${#modules[@]} -eq 0 ] || "$VENV/bin/python" -c "import $(IFS=,; echo "${modules[*]}")"
echo "structured-agents installed in $VENV$([ "$DEPS_ONLY" = false ] || echo ' (dependencies only)'), extras: ${EXTRAS[*]:-none}"
