"""The HTML report is self-contained and renders offline in headless Chromium (Debian's ``chromium`` package).

The page is opened with every host mapped to nowhere; a screenshot must show each chart's own fill colour
(a chart that drew nothing has none), and the DOM as Chromium parsed it must hold the per-case table.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from dataclasses import replace
from pathlib import Path

import pytest
from verdict_factory import fixture_verdicts

from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.report.console import console_pairwise
from nl2sql_pipeline.report.html import comparison_html, run_html
from nl2sql_pipeline.report.samples import result_samples
from nl2sql_pipeline.report.svg import COLORS
from nl2sql_pipeline.report.tables import build_run_report
from nl2sql_pipeline.results.comparison import compare_verdicts
from nl2sql_pipeline.stages.records import Attempt, OracleRow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's `chromium` is not installed (apt-get install -y chromium); the page test needs it",
)
OFFLINE_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
    "--disable-background-networking",
    "--virtual-time-budget=3000",
]


EXPECTED = QueryResult(ok=True, columns=["studio", "n"], rows=[("A", 3), ("B", 2), ("C", 1), ("D", 1)])
WRONG = QueryResult(ok=True, columns=["studio", "n"], rows=[("A", 3), ("B", 2), ("E", 9)])
BROKEN = QueryResult.failure("binder", "Referenced column x not found")


def _verdicts():
    """The fixture run, with c2's diagnosis, row counts and clause scores filled in."""
    return [
        replace(
            v,
            diagnosis="missing_filter",
            diagnosis_detail=(("missing_filter", "no WHERE on the year"),),
            expected_row_count=4,
            candidate_row_count=3,
            row_precision=2 / 3,
            row_recall=0.5,
            clause_scores={"where": 0.5, "select": 1.0, "from": 0.75},
        )
        if v.case_id == "c2"
        else v
        for v in fixture_verdicts()
    ]


def _samples(verdicts):
    oracle = [OracleRow(c, "fp", 0, EXPECTED) for c in ("c1", "c2", "c4")]
    attempts = [
        Attempt(c, "fp", "model", 0, 0, "SELECT", executed=True, result=result)
        for c, result in (("c1", EXPECTED), ("c2", WRONG), ("c4", BROKEN))
    ]
    return result_samples(verdicts, oracle, attempts)


def _report(model="m"):
    verdicts = _verdicts()
    return build_run_report(verdicts, model=model, gold_set="g", warnings=["a warning"], samples=_samples(verdicts))


def _png_pixels(path: Path) -> tuple[int, int, int, bytes]:
    """Width, height, bytes per pixel and the unfiltered pixel bytes of an 8-bit RGB/RGBA PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, color_type, _, _, interlace = header
    assert depth == 8 and color_type in (2, 6) and interlace == 0, header
    bpp = 3 if color_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    out, previous = bytearray(), bytearray(stride)
    for row in range(height):
        kind, line = raw[row * (stride + 1)], bytearray(raw[row * (stride + 1) + 1 : (row + 1) * (stride + 1)])
        for i in range(stride) if kind else ():
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            else:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        out += line
        previous = line
    return width, height, bpp, bytes(out)


def _count_colour(pixels: bytes, bpp: int, hex_colour: str) -> int:
    rgb = bytes.fromhex(hex_colour.lstrip("#"))
    return sum(1 for i in range(0, len(pixels), bpp) if pixels[i : i + 3] == rgb)


def test_page_is_self_contained():
    page = run_html([_report("a"), _report("b")], pairwise=console_pairwise([_report("a"), _report("b")]))
    assert "<script" not in page and "<link" not in page
    assert re.findall(r"https?://", page) == ["http://"] * page.count('xmlns="http://www.w3.org/2000/svg"')
    for chart in COLORS:
        assert f'data-chart="{chart}"' in page
    assert page.count('<tr class="case">') == 2 * len(fixture_verdicts())
    assert "not significant (p=1.0000)" in page
    comparison = compare_verdicts(fixture_verdicts(), fixture_verdicts(), label_a="A run", label_b="B run")
    assert "difference: not significant (p=1.0000)" in comparison_html(comparison, [_report("a"), _report("b")])


@needs_chromium
def test_page_renders_offline_in_headless_chromium(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(run_html([_report()]), encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            CHROMIUM,
            *OFFLINE_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1400,800",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    width, height, bpp, pixels = _png_pixels(shot)
    assert (width, height) == (1400, 800)
    for chart, colour in COLORS.items():
        assert _count_colour(pixels, bpp, colour) > 50, f"chart {chart} drew nothing in the screenshot"
    dom = subprocess.run(
        [CHROMIUM, *OFFLINE_FLAGS, f"--user-data-dir={tmp_path / 'profile2'}", "--dump-dom", page.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert dom.count('<tr class="case">') == len(fixture_verdicts())
    assert dom.count("<svg") == len(COLORS)
    assert dom.count('<td class="expected-rows">') == len(fixture_verdicts()) and "missing 2 row(s)" in dom


def test_a_systems_answer_and_its_disagreement_flag_are_in_the_case_table():
    from dataclasses import replace

    verdicts = fixture_verdicts()
    answered = [
        replace(
            verdicts[0],
            answer="There are 12 studios.",
            system_rows_disagree=True,
            system_rows_reason="it showed 3 rows, its SQL returns 12",
        )
    ] + list(verdicts[1:])
    page = run_html([build_run_report(answered, model="sys", gold_set="g", warnings=[])])
    assert "<th>answer</th>" in page and "There are 12 studios." in page
    assert "rows shown differ from its SQL: it showed 3 rows, its SQL returns 12" in page
    plain = run_html([_report("m")])
    assert "<th>answer</th>" not in plain, "a model without answers gets no answer column"


def test_the_console_report_shows_a_systems_answers_and_disagreements():
    from dataclasses import replace

    from nl2sql_pipeline.report.console import console_run_report

    verdicts = fixture_verdicts()
    answered = [
        replace(
            verdicts[0],
            answer="There are 12 studios.",
            system_rows_disagree=True,
            system_rows_reason="it showed 3 rows, its SQL returns 12",
        )
    ] + list(verdicts[1:])
    text = console_run_report(build_run_report(answered, model="sys", gold_set="g", warnings=[]))
    queries = sum(not v.is_probe for v in answered)  # probes are never asked
    assert queries < len(answered)
    assert f"1 of {queries} cases answered in prose; rows shown differ from the system's own SQL in 1" in text
    assert "it showed 3 rows, its SQL returns 12" in text and "There are 12 studios." in text
    assert "answered in prose" not in console_run_report(_report("m"))


def test_result_samples_are_bounded_and_name_the_missing_and_extra_rows():
    samples = _samples(_verdicts())
    right, wrong, broken = samples[("c1", 0)], samples[("c2", 0)], samples[("c4", 0)]
    assert right.expected.rows == (("A", "3"), ("B", "2"), ("C", "1")) and right.expected.total_rows == 4
    assert (right.missing_rows, right.extra_rows) == (None, None)  # correct: the report shows no difference
    assert (wrong.missing_rows, wrong.extra_rows) == (2, 1)
    assert wrong.missing_examples == (("C", "1"), ("D", "1")) and wrong.extra_examples == (("E", "9"),)
    assert broken.generated.error == "binder: Referenced column x not found" and broken.missing_rows is None
    assert ("c3", 0) in samples and samples[("c3", 0)].generated is None  # no SQL: nothing ran
    assert ("p1", 0) not in samples  # probes have no result to show
    long = QueryResult(ok=True, columns=["t"], rows=[("x" * 100,)] * 10)
    from nl2sql_pipeline.report.samples import case_sample

    sample = case_sample(long, long, limit=2)
    assert len(sample.expected.rows) == 2 and len(sample.expected.rows[0][0]) == 40


def test_the_case_table_shows_result_samples_and_the_diff():
    page = run_html([_report("m")])
    assert "<th>expected rows</th><th>generated rows</th>" in page and "<th>diff</th>" in page
    row = next(r for r in page.split('<tr class="case">') if r.startswith("<td>c2</td>"))
    assert "first 3 of 4 rows" in row and "<th>studio</th><th>n</th>" in row
    assert "<b>missing_filter</b>: no WHERE on the year" in row
    assert "rows: expected 4, generated 3" in row and "missing 2 row(s)" in row and "extra 1 row(s)" in row
    assert "<td>E</td><td>9</td>" in row and "row precision 0.67, recall 0.50" in row
    assert "clauses differ: where 0.50, from 0.75" in row
    broken = next(r for r in page.split('<tr class="case">') if r.startswith("<td>c4</td>"))
    assert "binder: Referenced column x not found" in broken
    correct = next(r for r in page.split('<tr class="case">') if r.startswith("<td>c1</td>"))
    assert correct.endswith('<td class="diff"></td></tr>') or '<td class="diff"></td>' in correct
    plain = run_html([build_run_report(fixture_verdicts(), model="m", gold_set="g")])
    assert "<th>expected rows</th>" not in plain, "no stored results: no sample columns"


def test_row_differences_are_found_only_where_the_report_shows_them():
    from nl2sql_pipeline.report.samples import case_sample

    assert case_sample(EXPECTED, WRONG).missing_rows == 2
    skipped = case_sample(EXPECTED, WRONG, differences=False)
    assert skipped.missing_rows is None and skipped.expected.rows and skipped.generated.rows


def _figure(page: str, name: str) -> str:
    return re.search(rf'<figure data-figure="{name}">.*?</figure>', page, re.S).group(0)


def test_a_run_with_nothing_scored_says_so_in_the_causes_and_cost_charts():
    probes_only = [replace(v, cost_usd=0.0) for v in fixture_verdicts() if v.is_probe]
    assert probes_only
    report = build_run_report(probes_only, model="m", gold_set="g", warnings=[])
    page = run_html([report])
    causes, cost = _figure(page, "causes"), _figure(page, "cost_accuracy")
    assert "no scored case (n/a)" in causes and "every scored case was correct" not in causes
    assert "no scored case (n/a)" in cost and "no run with a known cost" not in cost


def test_a_run_with_every_scored_case_correct_says_so():
    correct = [v for v in fixture_verdicts() if v.case_id == "c1"]
    page = run_html([build_run_report(correct, model="m", gold_set="g", warnings=[])])
    assert "every scored case was correct" in _figure(page, "causes")
