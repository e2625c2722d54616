"""Run the ``sa`` command line, pausing for good at one point of an apply (for a SIGKILL).

    python pausing_apply.py MARKER POINT N sa-arguments...

POINT is where the Nth time it is reached, the process writes MARKER and sleeps until killed:

* ``mkstemp``: before the temporary file of the Nth written file is created (files before it
  are written and recorded: *between files* when N > 1);
* ``before-replace``: the Nth temporary file is written, its target not yet replaced;
* ``after-replace``: the Nth target is replaced, its patches not yet recorded;
* ``after-record``: the Nth ``SqlStore.set_result_status`` call has committed.

Only the apply's own temporary files count (their names carry ``.sa-apply-``), so nothing
else that calls ``os.replace`` or ``mkstemp`` moves the count. The command itself is the real
``sa`` app (``structured_agents.cli.main:app``) with no other change.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MARK = ".sa-apply-"


def main() -> None:
    marker, point, nth, *argv = sys.argv[1:]
    count = 0

    def pause_if_due(reached: str) -> None:
        nonlocal count
        if reached != point:
            return
        count += 1
        if count == int(nth):
            Path(marker).write_text(point)
            while True:
                time.sleep(60)

    def wrap(function: Callable[..., Any], before: str, after: str, counts: Callable[..., bool]) -> Any:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if counts(*args, **kwargs):
                pause_if_due(before)
            result = function(*args, **kwargs)
            if counts(*args, **kwargs):
                pause_if_due(after)
            return result

        return wrapper

    tempfile.mkstemp = wrap(tempfile.mkstemp, "mkstemp", "", lambda *a, **k: MARK in k.get("prefix", ""))
    os.replace = wrap(os.replace, "before-replace", "after-replace", lambda src, *a, **k: MARK in str(src))

    from structured_agents.cli.main import app
    from structured_agents.store import SqlStore

    SqlStore.set_result_status = wrap(SqlStore.set_result_status, "", "after-record", lambda *a, **k: True)
    sys.argv = ["sa", *argv]
    app()


if __name__ == "__main__":
    main()
