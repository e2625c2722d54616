"""XGrammar's error messages as a client may read them.

XGrammar prefixes a message with the time and the C++ source line that raised it
(``[21:20:07] /project/cpp/regex_converter.cc:83: Regex parsing error ...``): the library's
build paths, which a server should not hand a caller (a probe of ``sa serve`` read them in its
400s). :func:`library_message` keeps the message and drops those prefixes.
"""

from __future__ import annotations

import re

__all__ = ["library_message"]

_SOURCE_LINE = re.compile(r"\[\d{2}:\d{2}:\d{2}\] [^\s:]+\.(?:cc|cpp|h|hpp):\d+: ")


def library_message(error: object) -> str:
    """``error``'s text without XGrammar's time and source-line prefixes."""
    return _SOURCE_LINE.sub("", str(error)).strip()
