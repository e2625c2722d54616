"""Ruff's findings on a text, as JSON, under the rules a test selects (real ruff, no config)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def ruff_json(root: Path, path: str, text: str, rules: str, *options: str) -> list[dict[str, object]]:
    """``ruff check --isolated --select rules`` on ``text`` as the file ``root/path``."""
    command = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", rules, "--no-cache", *options]
    command += ["--output-format", "json", "--exit-zero", "--stdin-filename", str(root / path), "-"]
    done = subprocess.run(command, input=text, capture_output=True, text=True, check=True)
    found: list[dict[str, object]] = json.loads(done.stdout)
    return found
