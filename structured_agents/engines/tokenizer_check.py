"""Check a converted model's tokenizer before anything is generated with it.

Some transformers releases convert a GGUF tokenizer wrongly without any error: transformers
5.17 wrote Gemma 3's ``tokenizer.json`` without its BPE merges (character-level, 14.5 MB
instead of 33.4 MB) and without the BOS post-processor; the model then wrote garbage and no
call was valid. A file-size manifest cannot see that, so the model store runs this check on
every conversion (and on a cached conversion not checked yet) and keeps nothing that fails it.

The checks, on a fixed Python snippet with indentation, a tab, non-ASCII text and the tool-call
markers of both plugin families:

* BOS: an encoded text starts with the model's BOS id (Gemma: 2), when the model adds one;
* round trip: ``decode(encode(x)) == x`` without special tokens;
* size: the snippet takes between ``len(x) / 8`` and ``len(x) / 2`` tokens. A real subword
  tokenizer takes about ``len(x) / 3`` (Gemma 3: 154 tokens for 455 characters); a
  character-level one about ``len(x)`` (Gemma 3 without its merges: 454).
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structured_agents.errors import EngineError

__all__ = ["SAMPLE", "TokenizerCheck", "required_transformers", "tokenizer_problems", "verify_tokenizer"]

SAMPLE = '''def greet(name: str, *, times: int = 1) -> str:
    """Say hello to ``name`` — naïve café ☕, 日本語, Ωmega."""
    if not name:
        raise ValueError("empty name")
\tfor _ in range(times):
        print(f"Hello, {name}!")  # comment
    return name

<start_function_call>call:submit_result{docstring:<escape>Greets a user.<escape>}<end_function_call>
<tool_call>
<function=submit_result>
<parameter=docstring>
Greets.
</parameter>
</function>
</tool_call>
'''
"""The fixed text every check encodes."""


@dataclass(frozen=True, slots=True)
class TokenizerCheck:
    """What a model's tokenizer must do with :data:`SAMPLE`."""

    bos_token_id: int | None
    """The id an encoded text starts with (Gemma: 2); None for a model that adds no BOS."""
    min_chars_per_token: float = 2.0
    """Fewer characters per token than this: the tokenizer lost its merges (character-level)."""
    max_chars_per_token: float = 8.0
    """More than this: the tokenizer swallows text (a broken vocabulary)."""


def tokenizer_problems(tokenizer: Any, check: TokenizerCheck) -> list[str]:
    """What is wrong with a loaded (transformers) tokenizer; empty when it passes."""
    problems: list[str] = []
    ids = [int(i) for i in tokenizer(SAMPLE)["input_ids"]]
    if check.bos_token_id is not None and ids[:1] != [check.bos_token_id]:
        problems.append(f"an encoded text starts with {ids[:3]}, not the BOS id {check.bos_token_id}")
    plain = [int(i) for i in tokenizer(SAMPLE, add_special_tokens=False)["input_ids"]]
    decoded = tokenizer.decode(plain, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    if decoded != SAMPLE:
        at = next((i for i, (a, b) in enumerate(zip(decoded, SAMPLE, strict=False)) if a != b), None)
        at = min(len(decoded), len(SAMPLE)) if at is None else at
        problems.append(
            f"decode(encode(text)) differs from the text at character {at}: {decoded[at : at + 20]!r}"
        )
    low, high = len(SAMPLE) / check.max_chars_per_token, len(SAMPLE) / check.min_chars_per_token
    if not low <= len(plain) <= high:
        problems.append(
            f"a {len(SAMPLE)}-character snippet takes {len(plain)} tokens, not {low:.0f} to {high:.0f}"
            + (" (character-level: the BPE merges are missing)" if len(plain) >= 0.9 * len(SAMPLE) else "")
        )
    return problems


def required_transformers() -> str:
    """The transformers requirement of structured-agents' ``model`` extra (as installed)."""
    try:
        requirements = importlib.metadata.requires("structured-agents") or []
    except importlib.metadata.PackageNotFoundError:
        requirements = []
    for requirement in requirements:
        name, _, marker = requirement.partition(";")
        if name.strip().startswith("transformers") and "model" in marker:
            return name.strip()
    return "transformers (see the model extra of structured-agents)"


def verify_tokenizer(model_dir: Path, check: TokenizerCheck) -> None:
    """Load the tokenizer of ``model_dir`` as the engine does and check it; EngineError if broken."""
    import transformers
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        problems = tokenizer_problems(tokenizer, check)
    except Exception as exc:  # a tokenizer that does not even load or encode is broken too
        problems = [f"it does not load or encode: {type(exc).__name__}: {exc}"]
    if problems:
        raise EngineError(
            f"its tokenizer, loaded with transformers {transformers.__version__}, is broken: "
            + "; ".join(problems)
            + f". Install {required_transformers()} and load the model again."
        )
