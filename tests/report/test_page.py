"""The report page: self-contained, its charts standalone SVGs, every stored value escaped."""

from __future__ import annotations

import base64
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from scripted_batch import Filled

from structured_agents.jobs.spec import JobSpec
from structured_agents.report import QualityFileError, build_report, load_quality
from structured_agents.store import SqlStore

SVG_URI = re.compile(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')
NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


def _svgs(html: str) -> list[str]:
    return [base64.b64decode(data).decode("utf-8") for data in SVG_URI.findall(html)]


def test_the_page_names_the_batch_and_draws_every_chart(sqlite_filled: Filled) -> None:
    store, batch = sqlite_filled
    html = build_report(store, batch.batch_id)

    assert f"Batch <code>{batch.batch_id}</code>" in html
    for text in ("docstring_calls 2.1", "function_gemma", "ebnf", "submit_result"):
        assert text in html
    assert len(_svgs(html)) == 6 and "Nothing to draw" not in html
    for run_id in batch.failing:  # every failed run is listed, with an anchor the reasons link to
        assert f'id="run-{run_id}"' in html and f'href="#run-{run_id}"' in html
    assert html.count('<details class="diff"') == 8 and '<span class="add">+' in html


def test_the_page_refers_to_nothing_outside_itself(sqlite_filled: Filled) -> None:
    store, batch = sqlite_filled
    html = build_report(store, batch.batch_id)

    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert all(value.startswith("#") for value in re.findall(r'href="([^"]*)"', html))
    assert all(value.startswith("data:image/svg+xml;base64,") for value in re.findall(r'src="([^"]*)"', html))
    assert not re.search(r"<(script|link|iframe|object|embed)\b|@import|url\(", html, re.IGNORECASE)


def test_the_charts_are_svg_documents_with_no_external_reference(sqlite_filled: Filled) -> None:
    store, batch = sqlite_filled
    for svg in _svgs(build_report(store, batch.batch_id)):
        root = ET.fromstring(svg)  # well-formed
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert float(root.attrib["width"].removesuffix("pt")) > 100
        assert not re.search(r"<script|<foreignObject|@import|<image", svg, re.IGNORECASE)
        for element in root.iter():
            for name, value in element.attrib.items():
                if name.endswith("href"):
                    assert value.startswith("#"), (name, value)
                assert not value.startswith(("http:", "https:", "//", "file:")), (name, value)
        assert all(ref.startswith("#") for ref in re.findall(r"url\(([^)]*)\)", svg))
        assert {uri for uri in re.findall(r"https?://[^\"' >]+", svg)} <= NAMESPACES | {
            "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd"  # a DOCTYPE's identifier: never fetched
        }


def test_stored_text_is_escaped(tmp_path: Path) -> None:
    with SqlStore(f"sqlite:///{tmp_path / 'sa.db'}") as store:
        batch = store.create_batch("<b>bundle</b>", "1", "/src/<i>x</i>")
        job = JobSpec(job_id="<img src=x>", kind="docstring", path="a.py", qualname="f", source_hash="0" * 64)
        store.add_jobs(batch.id, [job])
        store.claim(job.job_id)
        store.save_result(
            job.job_id, target_path="a.py", original_hash="0", diff="+<script>alert(1)</script>\n"
        )
        store.finish(job.job_id, "failed", error='<script>alert("x")</script>')
        html = build_report(store, batch.id)

    assert "<script" not in html and "<img src=x>" not in html and "<b>bundle" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;bundle&lt;/b&gt;" in html
    assert 'id="run-&lt;img src=x&gt;"' in html


def test_a_batch_with_no_run_yet_renders_without_charts(tmp_path: Path) -> None:
    with SqlStore(f"sqlite:///{tmp_path / 'sa.db'}") as store:
        batch = store.create_batch("docstring", "1.0", "/src")
        html = build_report(store, batch.id)

    assert html.count("Nothing to draw yet.") == 6 and not _svgs(html)
    assert "No run failed." in html and "No tool was called." in html and "No run stored a change." in html


def test_the_quality_section_shows_an_evaluations_figures(sqlite_filled: Filled, tmp_path: Path) -> None:
    store, batch = sqlite_filled
    path = tmp_path / "eval.json"
    metrics = {"accepted_rate": 0.8125, "mean_score": {"value": 3.5, "detail": "1-5 <judged>"}}
    path.write_text(
        json.dumps({"batch_id": batch.batch_id, "title": "Docstring quality", "metrics": metrics})
    )
    quality = load_quality(path, batch_id=batch.batch_id)

    assert [(m.name, m.value, m.detail) for m in quality.metrics] == [
        ("accepted_rate", 0.8125, ""),
        ("mean_score", 3.5, "1-5 <judged>"),
    ]
    html = build_report(store, batch.batch_id, quality=quality)
    assert 'id="quality"' in html and "Docstring quality" in html and "1-5 &lt;judged&gt;" in html
    assert 'id="quality"' not in build_report(store, batch.batch_id)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"metrics": {"a": 1,}}', r"eval\.json:1:21: not JSON"),
        ('{"metrics": {"a": "high"}}', r"eval\.json: metrics\.a: "),
        ('{"metrics": {"a": {"value": 1, "unit": "%"}}}', r"eval\.json: metrics\.a\.unit: Extra inputs"),
        ('{"metric": {}}', r"eval\.json: metrics: Field required"),
        ('{"batch_id": "other", "metrics": {}}', r"batch_id is 'other', not 'mine'"),
    ],
)
def test_a_malformed_quality_file_is_refused_naming_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "eval.json"
    path.write_text(text)
    with pytest.raises(QualityFileError, match=message):
        load_quality(path, batch_id="mine")


def test_a_missing_quality_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(QualityFileError, match=r"missing\.json: cannot read it"):
        load_quality(tmp_path / "missing.json")
