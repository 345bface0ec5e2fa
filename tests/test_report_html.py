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
from pathlib import Path

import pytest

from nl2sql_pipeline.report.console import console_pairwise
from nl2sql_pipeline.report.html import comparison_html, run_html
from nl2sql_pipeline.report.svg import COLORS
from nl2sql_pipeline.report.tables import build_run_report
from nl2sql_pipeline.run_comparison import compare_verdicts
from test_run_report import fixture_verdicts

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's `chromium` is not installed (apt-get install -y chromium); the page test needs it"
)
OFFLINE_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--disable-background-networking",
                 "--virtual-time-budget=3000"]


def _report(model="m"):
    return build_run_report(fixture_verdicts(), model=model, gold_set="g", warnings=["a warning"])


def _png_pixels(path: Path) -> tuple[int, int, int, bytes]:
    """Width, height, bytes per pixel and the unfiltered pixel bytes of an 8-bit RGB/RGBA PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
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
        kind, line = raw[row * (stride + 1)], bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
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
    return sum(1 for i in range(0, len(pixels), bpp) if pixels[i:i + 3] == rgb)


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
    subprocess.run([CHROMIUM, *OFFLINE_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                    "--window-size=1400,800", page.as_uri()], check=True, capture_output=True, timeout=120)
    width, height, bpp, pixels = _png_pixels(shot)
    assert (width, height) == (1400, 800)
    for chart, colour in COLORS.items():
        assert _count_colour(pixels, bpp, colour) > 50, f"chart {chart} drew nothing in the screenshot"
    dom = subprocess.run([CHROMIUM, *OFFLINE_FLAGS, f"--user-data-dir={tmp_path / 'profile2'}", "--dump-dom",
                          page.as_uri()], check=True, capture_output=True, text=True, timeout=120).stdout
    assert dom.count('<tr class="case">') == len(fixture_verdicts())
    assert dom.count("<svg") == len(COLORS)


def test_a_systems_answer_and_its_disagreement_flag_are_in_the_case_table():
    from dataclasses import replace

    verdicts = fixture_verdicts()
    answered = [replace(verdicts[0], answer="There are 12 studios.", system_rows_disagree=True,
                        system_rows_reason="it showed 3 rows, its SQL returns 12")] + list(verdicts[1:])
    page = run_html([build_run_report(answered, model="sys", gold_set="g", warnings=[])])
    assert "<th>answer</th>" in page and "There are 12 studios." in page
    assert "rows shown differ from its SQL: it showed 3 rows, its SQL returns 12" in page
    plain = run_html([_report("m")])
    assert "<th>answer</th>" not in plain, "a model without answers gets no answer column"


def test_the_console_report_shows_a_systems_answers_and_disagreements():
    from dataclasses import replace

    from nl2sql_pipeline.report.console import console_run_report

    verdicts = fixture_verdicts()
    answered = [replace(verdicts[0], answer="There are 12 studios.", system_rows_disagree=True,
                        system_rows_reason="it showed 3 rows, its SQL returns 12")] + list(verdicts[1:])
    text = console_run_report(build_run_report(answered, model="sys", gold_set="g", warnings=[]))
    assert f"1 of {len(answered)} cases answered in prose; rows shown differ from the system's own SQL in 1" in text
    assert "it showed 3 rows, its SQL returns 12" in text and "There are 12 studios." in text
    assert "answered in prose" not in console_run_report(_report("m"))
