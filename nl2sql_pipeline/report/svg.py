"""Small inline-SVG charts for the HTML report (no plotting library, no network): each returns an ``<svg>`` string.

Every chart has a distinct fill colour (``COLORS``) and a ``data-chart`` name, so a screenshot test can tell
that each one drew something.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

COLORS: dict[str, str] = {
    "accuracy": "#1f77b4",
    "latency": "#ff7f0e",
    "cost_accuracy": "#2ca02c",
    "causes": "#d62728",
}
WIDTH, HEIGHT = 640, 260
MARGIN_LEFT, MARGIN_BOTTOM, MARGIN_TOP, MARGIN_RIGHT = 56, 56, 16, 16


def _open(name: str, title: str, width: int = WIDTH, height: int = HEIGHT) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{name}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff" stroke="#dddddd"/>',
    ]


def _empty(name: str, title: str, message: str) -> str:
    parts = _open(name, title)
    parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" font-size="14">{escape(message)}</text>')
    return "".join(parts) + "</svg>"


def _axes(parts: list[str], y_labels: Sequence[tuple[float, str]], plot_h: float) -> None:
    x0, y0 = MARGIN_LEFT, MARGIN_TOP + plot_h
    parts.append(f'<line x1="{x0}" y1="{MARGIN_TOP}" x2="{x0}" y2="{y0}" stroke="#333"/>')
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{WIDTH - MARGIN_RIGHT}" y2="{y0}" stroke="#333"/>')
    for fraction, label in y_labels:
        y = y0 - fraction * plot_h
        parts.append(f'<line x1="{x0 - 4}" y1="{y:.1f}" x2="{x0}" y2="{y:.1f}" stroke="#333"/>')
        parts.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="10">{escape(label)}</text>')


def rate_bars(name: str, title: str, rows: Sequence[tuple[str, float, float, float, str]]) -> str:
    """Vertical bars of rates in 0..1 with interval whiskers: rows of (label, rate, low, high, annotation)."""
    if not rows:
        return _empty(name, title, "no scored case")
    parts = _open(name, title)
    plot_w, plot_h = WIDTH - MARGIN_LEFT - MARGIN_RIGHT, HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    _axes(parts, [(f, f"{int(f * 100)}%") for f in (0, 0.25, 0.5, 0.75, 1.0)], plot_h)
    slot = plot_w / len(rows)
    y0 = MARGIN_TOP + plot_h
    for i, (label, rate, low, high, note) in enumerate(rows):
        x = MARGIN_LEFT + i * slot + slot * 0.15
        w = slot * 0.7
        h = max(rate * plot_h, 1.0)  # a 0% bar still shows a hairline
        parts.append(
            f'<rect x="{x:.1f}" y="{y0 - h:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{COLORS.get(name, "#555")}">'
            f"<title>{escape(label)}: {rate:.1%} [{low:.1%}, {high:.1%}] {escape(note)}</title></rect>"
        )
        cx = x + w / 2
        parts.append(
            f'<line x1="{cx:.1f}" y1="{y0 - low * plot_h:.1f}" x2="{cx:.1f}" y2="{y0 - high * plot_h:.1f}" '
            f'stroke="#000" stroke-width="1.5"/>'
        )
        for bound in (low, high):
            parts.append(
                f'<line x1="{cx - 5:.1f}" y1="{y0 - bound * plot_h:.1f}" x2="{cx + 5:.1f}" '
                f'y2="{y0 - bound * plot_h:.1f}" stroke="#000"/>'
            )
        parts.append(
            f'<text x="{cx:.1f}" y="{y0 + 14}" text-anchor="middle" font-size="10">{escape(label[:14])}</text>'
        )
        parts.append(f'<text x="{cx:.1f}" y="{y0 + 26}" text-anchor="middle" font-size="9">{escape(note)}</text>')
    return "".join(parts) + "</svg>"


def histogram(name: str, title: str, values: Sequence[float], bins: int = 12, unit: str = "ms") -> str:
    """A histogram of ``values`` in ``bins`` equal-width bins."""
    if not values:
        return _empty(name, title, "no measured value")
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, int((value - low) / span * bins))] += 1
    top = max(counts)
    parts = _open(name, title)
    plot_w, plot_h = WIDTH - MARGIN_LEFT - MARGIN_RIGHT, HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    _axes(parts, [(0, "0"), (0.5, f"{top / 2:g}"), (1.0, str(top))], plot_h)
    y0, slot = MARGIN_TOP + plot_h, plot_w / bins
    for i, count in enumerate(counts):
        h = count / top * plot_h
        start = low + i * span / bins
        parts.append(
            f'<rect x="{MARGIN_LEFT + i * slot + 1:.1f}" y="{y0 - h:.1f}" width="{slot - 2:.1f}" height="{h:.1f}" '
            f'fill="{COLORS.get(name, "#555")}"><title>{start:.1f}-{start + span / bins:.1f} {unit}: {count}</title></rect>'
        )
    for i in range(0, bins + 1, max(1, bins // 4)):
        parts.append(
            f'<text x="{MARGIN_LEFT + i * slot:.1f}" y="{y0 + 14}" text-anchor="middle" font-size="10">'
            f"{low + i * span / bins:.0f}</text>"
        )
    parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="11">{escape(unit)}</text>')
    return "".join(parts) + "</svg>"


def scatter(
    name: str,
    title: str,
    points: Sequence[tuple[str, float, float]],
    x_label: str,
    y_label: str,
    empty: str = "no run with a known cost",
) -> str:
    """Labelled points (label, x, y) with y a rate in 0..1 and x >= 0 (e.g. cost against accuracy);
    ``empty``: what the chart says when there is no point."""
    if not points:
        return _empty(name, title, empty)
    parts = _open(name, title)
    plot_w, plot_h = WIDTH - MARGIN_LEFT - MARGIN_RIGHT, HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    _axes(parts, [(f, f"{int(f * 100)}%") for f in (0, 0.5, 1.0)], plot_h)
    x_max = max(p[1] for p in points) or 1.0
    y0 = MARGIN_TOP + plot_h
    for label, x, y in points:
        cx, cy = MARGIN_LEFT + 20 + x / x_max * (plot_w - 40), y0 - y * plot_h
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="7" fill="{COLORS.get(name, "#555")}">'
            f"<title>{escape(label)}: {y:.1%} at {x:g}</title></circle>"
        )
        parts.append(f'<text x="{cx + 10:.1f}" y="{cy - 8:.1f}" font-size="11">{escape(label)}</text>')
    parts.append(
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="11">'
        f"{escape(x_label)} (0 .. {x_max:g})</text>"
    )
    parts.append(
        f'<text x="12" y="{MARGIN_TOP + plot_h / 2}" font-size="11" transform="rotate(-90 12 {MARGIN_TOP + plot_h / 2})" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    return "".join(parts) + "</svg>"


def count_bars(
    name: str, title: str, rows: Sequence[tuple[str, int]], empty: str = "every scored case was correct"
) -> str:
    """Horizontal bars of counts (e.g. outcome causes), one row each; ``empty``: what it says without a row."""
    if not rows:
        return _empty(name, title, empty)
    row_h = 22
    height = MARGIN_TOP * 2 + row_h * len(rows)
    parts = _open(name, title, height=height)
    label_w, top = 220, max(c for _, c in rows)
    bar_w = WIDTH - label_w - 60
    for i, (label, count) in enumerate(rows):
        y = MARGIN_TOP + i * row_h
        w = max(count / top * bar_w, 2.0)
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="11">{escape(label[:36])}</text>'
        )
        parts.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{COLORS.get(name, "#555")}">'
            f"<title>{escape(label)}: {count}</title></rect>"
        )
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 15}" font-size="11">{count}</text>')
    return "".join(parts) + "</svg>"
