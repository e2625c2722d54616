#!/usr/bin/env bash
# Install structured-agents with the CPU model stack into .venv (or $VENV).
#   torch is pinned to the CPU build (an unpinned torch pulls a multi-GB CUDA build); where the
#   index holds CUDA builds (PyPI on Linux), set TORCH_INDEX_URL to a CPU index (the CPU image does);
#   xgrammar goes in with --no-deps (its metadata pulls triton, 1 GB, GPU only);
#   everything else comes from pyproject.toml through scripts/deps.py.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@"; }
pip install --upgrade pip
pip install torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
pip install --no-deps xgrammar==0.2.8
pip install --no-deps -e .
pip install -r <("$VENV/bin/python" scripts/deps.py model dev)
"$VENV/bin/python" -c "import structured_agents, xgrammar, torch; print('structured-agents installed in $VENV')"
