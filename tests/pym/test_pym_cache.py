"""The on-disk cache of check results and schemas, keyed by content hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from structured_agents.pym import PymCache, PymCheckError, ScriptLoader, load_source
from structured_agents.pym.cache import content_hash
from structured_agents.settings import CACHE_DIR_ENV

SOURCE = 'from grail import Input\nx: int = Input("x", default=2)\nx * 2\n'


def test_second_load_is_a_disk_hit(tmp_path: Path) -> None:
    path = tmp_path / "double.pym"
    path.write_text(SOURCE)
    first = PymCache(tmp_path / "c")
    script = load_source(SOURCE, path, cache=first)
    assert (first.hits, first.misses) == (0, 1)
    entry = tmp_path / "c" / "pym" / script.source_hash[:2] / f"{script.source_hash}.json"
    assert entry.is_file()

    second = PymCache(tmp_path / "c")  # a new process would start like this
    again = load_source(SOURCE, path, cache=second)
    assert (second.hits, second.misses) == (1, 0)
    assert again == script


def test_rejections_are_cached_too(tmp_path: Path) -> None:
    cache = PymCache(tmp_path)
    for expected_hits in (0, 1):
        with pytest.raises(PymCheckError, match="PYM007"):
            load_source("a = 1\ndel a\n", tmp_path / "t.pym", cache=cache)
        assert cache.hits == expected_hits


def test_content_change_is_a_miss_and_corrupt_entries_are_ignored(tmp_path: Path) -> None:
    cache = PymCache(tmp_path)
    load_source(SOURCE, tmp_path / "t.pym", cache=cache)
    load_source(SOURCE + "\n", tmp_path / "t.pym", cache=cache)
    assert cache.misses == 2 and content_hash(SOURCE) != content_hash(SOURCE + "\n")
    key = content_hash(SOURCE)
    (tmp_path / "pym" / key[:2] / f"{key}.json").write_text("{not json")
    assert cache.get(key) is None
    load_source(SOURCE, tmp_path / "t.pym", cache=cache)  # rewrites the entry
    assert cache.get(key) is not None


def test_directory_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "env"))
    assert PymCache().directory == tmp_path / "env" / "pym"
    assert PymCache(tmp_path / "arg").directory == tmp_path / "arg" / "pym"


def test_loader_memo_follows_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "t.pym"
    path.write_text(SOURCE)
    loader = ScriptLoader(PymCache(tmp_path / "c"))
    first = loader.load(path)
    assert loader.load(path) is first
    path.write_text(SOURCE.replace("x * 2", "x * 3") + "# changed size\n")
    assert loader.load(path).code != first.code
