"""Robustness sections of the console, Markdown and HTML reports."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Protocol

from nl2sql_pipeline.robustness.scores import ParaphraseScores, PerturbationScores


class _RunLike(Protocol):
    """A stored run, or anything naming a gold set and a model."""

    @property
    def gold_set(self) -> str: ...

    @property
    def model(self) -> str: ...


MAX_LISTED = 20
"""At most this many flipping or breaking cases are listed per section (the rest are counted)."""


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100.0 * value:.1f}%"


def _listed(ids: tuple[str, ...] | list[str]) -> str:
    shown = ", ".join(ids[:MAX_LISTED])
    return shown + (f" (+{len(ids) - MAX_LISTED} more)" if len(ids) > MAX_LISTED else "")


def robustness_lines(
    model: str, paraphrase: ParaphraseScores | None, perturbation: PerturbationScores | None
) -> list[str]:
    """Plain-text lines of a model's robustness results (empty when neither was measured)."""
    lines: list[str] = []
    if paraphrase is not None:
        lines.append(
            f"paraphrases ({model}): consistency {_pct(paraphrase.consistency)} "
            f"({paraphrase.consistent}/{paraphrase.cases} cases with the same verdict on every phrasing)"
        )
        for family in paraphrase.families:
            lines.append(
                f"  {family.family:<16} accuracy {_pct(family.accuracy):>7}  (original {_pct(family.base_accuracy)}, "
                f"{family.asked} asked)"
            )
        for flip in paraphrase.flips[:MAX_LISTED]:
            lines.append(
                f"  FLIP {flip.case_id}: original {'right' if flip.base_correct else 'wrong'}; "
                f"right on [{', '.join(flip.correct_on)}], wrong on [{', '.join(flip.wrong_on)}]"
            )
        if len(paraphrase.flips) > MAX_LISTED:
            lines.append(f"  ... {len(paraphrase.flips) - MAX_LISTED} more flipping cases")
    if perturbation is not None:
        lines.append(f"schema perturbations ({model}): accuracy drop per kind (original schema -> perturbed)")
        for kind in perturbation.kinds:
            lines.append(
                f"  {kind.family:<16} {_pct(kind.base_accuracy):>7} -> {_pct(kind.accuracy):>7}  drop {_pct(kind.drop)}"
                f"  ({kind.asked} cases; {len(kind.broken)} break, {len(kind.fixed)} fixed)"
            )
            if kind.broken:
                lines.append(f"    breaks: {_listed(kind.broken)}")
    return lines


def robustness_markdown(
    model: str, paraphrase: ParaphraseScores | None, perturbation: PerturbationScores | None
) -> str:
    """A Markdown section (tables) of a model's robustness results ('' when neither was measured)."""
    parts: list[str] = []
    if paraphrase is not None:
        parts.append(
            f"### Paraphrase consistency ({model})\n\nConsistency: **{_pct(paraphrase.consistency)}** "
            f"({paraphrase.consistent}/{paraphrase.cases} cases)\n\n| family | asked | accuracy | original |\n"
            "| --- | ---: | ---: | ---: |"
        )
        parts.extend(
            f"| {f.family} | {f.asked} | {_pct(f.accuracy)} | {_pct(f.base_accuracy)} |" for f in paraphrase.families
        )
        if paraphrase.flips:
            parts.append("\nFlips: " + _listed([f.case_id for f in paraphrase.flips]))
    if perturbation is not None:
        parts.append(
            f"\n### Schema perturbation ({model})\n\n| kind | cases | original | perturbed | drop | breaks |\n"
            "| --- | ---: | ---: | ---: | ---: | --- |"
        )
        parts.extend(
            f"| {k.family} | {k.asked} | {_pct(k.base_accuracy)} | {_pct(k.accuracy)} | {_pct(k.drop)} | "
            f"{_listed(k.broken) or '-'} |"
            for k in perturbation.kinds
        )
    return "\n".join(parts)


def robustness_html(model: str, paraphrase: ParaphraseScores | None, perturbation: PerturbationScores | None) -> str:
    """An HTML section of a model's robustness results ('' when neither was measured)."""
    if paraphrase is None and perturbation is None:
        return ""
    out = [f'<section class="robustness"><h2>Robustness: {html.escape(model)}</h2>']
    if paraphrase is not None:
        out.append(
            f"<h3>Paraphrase consistency: {_pct(paraphrase.consistency)} "
            f"({paraphrase.consistent}/{paraphrase.cases} cases)</h3>"
            "<table><tr><th>family</th><th>asked</th><th>accuracy</th><th>original</th></tr>"
        )
        out.extend(
            f"<tr><td>{html.escape(f.family)}</td><td>{f.asked}</td><td>{_pct(f.accuracy)}</td>"
            f"<td>{_pct(f.base_accuracy)}</td></tr>"
            for f in paraphrase.families
        )
        out.append("</table>")
        if paraphrase.flips:
            out.append("<p>Flips: " + html.escape(_listed([f.case_id for f in paraphrase.flips])) + "</p>")
    if perturbation is not None:
        out.append(
            "<h3>Schema perturbation</h3><table><tr><th>kind</th><th>cases</th><th>original</th><th>perturbed</th>"
            "<th>drop</th><th>breaks</th></tr>"
        )
        out.extend(
            f"<tr><td>{html.escape(k.family)}</td><td>{k.asked}</td><td>{_pct(k.base_accuracy)}</td>"
            f"<td>{_pct(k.accuracy)}</td><td>{_pct(k.drop)}</td><td>{html.escape(_listed(k.broken))}</td></tr>"
            for k in perturbation.kinds
        )
        out.append("</table>")
    out.append("</section>")
    return "".join(out)


def stored_robustness_html(runs: Iterable[_RunLike]) -> str:
    """The HTML sections of every run's stored robustness results ('' where none is stored)."""
    from nl2sql_pipeline.robustness.stored import load_robustness

    return "".join(robustness_html(run.model, *load_robustness(run.gold_set, run.model)) for run in runs)


def robustness_section(lines: Sequence[str]) -> str:
    """The console section of ``lines`` (``stored_robustness_lines``) under its heading; empty without any."""
    return "\n".join(["", "== robustness ==", *lines]) if lines else ""


def stored_robustness_lines(runs: Iterable[_RunLike]) -> list[str]:
    """The console lines of every run's stored robustness results (empty where none is stored)."""
    from nl2sql_pipeline.robustness.stored import load_robustness

    lines: list[str] = []
    for run in runs:
        lines.extend(robustness_lines(run.model, *load_robustness(run.gold_set, run.model)))
    return lines
