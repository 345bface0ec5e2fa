"""The working state the step rules pass along: inputs, the column alignment, canonical rows per alignment."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypedDict, TypeGuard

from nl2sql_pipeline.compare.matching import RowMatch, match_rows
from nl2sql_pipeline.compare.model import CompareConfig, Comparison, ComparisonInputError
from nl2sql_pipeline.compare.values import Canonicaliser, ColumnPair, canonicalise_pair
from nl2sql_pipeline.compare.wording import plural


@dataclass
class Aligned:
    """Both results canonicalised under one column alignment, and how their rows match."""

    alignment: tuple[int, ...]  # alignment[i] = the candidate column compared with expected column i
    pairs: list[ColumnPair]
    expected_rows: Sequence[tuple]
    candidate_rows: Sequence[tuple]
    rows: RowMatch

    def value_rules_used(self) -> set[str]:
        """Names of the value rules that bridged a type difference in some column."""
        used: set[str] = set()
        for pair in self.pairs:
            used |= pair.rules_used()
        return used


class Credit(TypedDict):
    """The partial credit of a comparison (the ``Comparison`` fields of the same names)."""

    row_precision: float
    row_recall: float
    cell_f1: float


def credit(rows: RowMatch, width: int) -> Credit:
    """Row precision and recall, and the cell F1: every cell of a matched row counts, and for the rows
    left unmatched, the values each column has in common on both sides (as multisets)."""
    matched = rows.matched
    precision = 1.0 if rows.candidate_count == 0 else matched / rows.candidate_count
    recall = 1.0 if rows.expected_count == 0 else matched / rows.expected_count
    cells = width * matched
    missing, extra = list(rows.missing.elements()), list(rows.extra.elements())
    if missing and extra:
        for exp_values, cand_values in zip(zip(*missing), zip(*extra)):
            cells += sum((Counter(exp_values) & Counter(cand_values)).values())
    total = width * (rows.expected_count + rows.candidate_count)
    cell_f1 = 1.0 if total == 0 else 2.0 * cells / total
    return Credit(
        row_precision=round(precision, 6),
        row_recall=round(recall, 6),
        cell_f1=round(min(cell_f1, 1.0), 6),
    )


def all_rows_match(count: int) -> str:
    """The reason of a match over ``count`` rows."""
    if count == 0:
        return "both results are empty"
    return "the only row matches" if count == 1 else f"all {count} rows match"


def _transpose(rows: Sequence[Sequence[Any]], width: int) -> list[Sequence[Any]]:
    return list(zip(*rows)) if rows else [()] * width


def _all_tuples(rows: Sequence[Sequence[Any]]) -> TypeGuard[Sequence[tuple]]:
    """True when every row is a tuple (other sequences are compared as the tuples they canonicalise to)."""
    return set(map(type, rows)) <= {tuple}


def _check_shape(side: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    widths = set(map(len, rows))
    if widths - {len(columns)}:
        bad = next(i for i, row in enumerate(rows) if len(row) != len(columns))
        raise ComparisonInputError(
            f"{side} row {bad} has {len(rows[bad])} values but there are {len(columns)} columns "
            f"({', '.join(map(repr, columns))}): pass rows as tuples aligned with the column names"
        )


class ComparisonState:
    """What the step rules read and extend while comparing one expected and one candidate result."""

    def __init__(
        self,
        expected_columns: Sequence[str],
        expected_rows: Sequence[Sequence[Any]],
        candidate_columns: Sequence[str],
        candidate_rows: Sequence[Sequence[Any]],
        config: CompareConfig,
        canonicaliser: Canonicaliser,
        rule_order: Sequence[str],
    ):
        self.expected_columns = [str(c) for c in expected_columns]
        self.candidate_columns = [str(c) for c in candidate_columns]
        _check_shape("expected", self.expected_columns, expected_rows)
        _check_shape("candidate", self.candidate_columns, candidate_rows)
        self.expected_rows = expected_rows
        self.candidate_rows = candidate_rows
        self.config = config
        self.canonicaliser = canonicaliser
        self.rule_order = {name: index for index, name in enumerate(rule_order)}
        self.alignment: tuple[int, ...] | None = None
        self.alignment_rules: list[str] = []  # column rules that shaped the alignment
        self.notes: list[str] = []  # explanations added to the reason
        self._pairs: dict[tuple[int, int], ColumnPair] = {}
        self._aligned: dict[tuple[int, ...], Aligned] = {}
        self._counters: dict[int, tuple[Sequence[Any], Counter]] = {}

    @cached_property
    def expected_cols(self) -> list[Sequence[Any]]:
        """Expected values column by column."""
        return _transpose(self.expected_rows, len(self.expected_columns))

    @cached_property
    def candidate_cols(self) -> list[Sequence[Any]]:
        """Candidate values column by column."""
        return _transpose(self.candidate_rows, len(self.candidate_columns))

    @cached_property
    def expected_types(self) -> list[set[type]]:
        """The Python types present in each expected column."""
        return [set(map(type, col)) for col in self.expected_cols]

    @cached_property
    def candidate_types(self) -> list[set[type]]:
        """The Python types present in each candidate column."""
        return [set(map(type, col)) for col in self.candidate_cols]

    def pair(self, expected_index: int, candidate_index: int) -> ColumnPair:
        """Expected column ``expected_index`` and candidate column ``candidate_index``, canonicalised together."""
        key = (expected_index, candidate_index)
        pair = self._pairs.get(key)
        if pair is None:
            pair = canonicalise_pair(
                self.canonicaliser,
                self.expected_cols[expected_index],
                self.candidate_cols[candidate_index],
                self.expected_types[expected_index],
                self.candidate_types[candidate_index],
            )
            self._pairs[key] = pair
        return pair

    def aligned(self, alignment: tuple[int, ...] | None = None) -> Aligned:
        """Both results canonicalised under ``alignment`` (default: the state's current alignment)."""
        alignment = self.alignment if alignment is None else alignment
        if alignment is None:
            raise RuntimeError("no column alignment yet: a column rule must run before the row rules")
        aligned = self._aligned.get(alignment)
        if aligned is None:
            pairs = [self.pair(i, j) for i, j in enumerate(alignment)]
            given_expected, given_candidate = self.expected_rows, self.candidate_rows
            expected_rows: Sequence[tuple]
            candidate_rows: Sequence[tuple]
            if (
                pairs
                and self._unchanged(pairs, alignment)
                and _all_tuples(given_expected)
                and _all_tuples(given_candidate)
            ):  # already canonical: count the rows as given
                expected_rows, candidate_rows = given_expected, given_candidate
            elif pairs:
                expected_rows = list(zip(*(p.expected for p in pairs)))
                candidate_rows = list(zip(*(p.candidate for p in pairs)))
            else:
                expected_rows = [()] * len(self.expected_rows)
                candidate_rows = [()] * len(self.candidate_rows)
            aligned = Aligned(
                alignment=alignment,
                pairs=pairs,
                expected_rows=expected_rows,
                candidate_rows=candidate_rows,
                rows=match_rows(
                    expected_rows,
                    candidate_rows,
                    self.config,
                    [i for i, p in enumerate(pairs) if "float" in p.expected_kinds | p.candidate_kinds],
                ),
            )
            self._aligned[alignment] = aligned
        return aligned

    def column_counter(self, values: Sequence[Any]) -> Counter:
        """The value counts of a canonical column (cached: one column often serves many pairs)."""
        cached = self._counters.get(id(values))
        if cached is None or cached[0] is not values:
            cached = (values, Counter(values))
            self._counters[id(values)] = cached
        return cached[1]

    def _unchanged(self, pairs: list[ColumnPair], alignment: tuple[int, ...]) -> bool:
        """True when every input column is already canonical, in aligned order (rows as tuples: ``_all_tuples``)."""
        if alignment != tuple(range(len(alignment))):
            return False
        for index, pair in enumerate(pairs):
            if pair.expected is not self.expected_cols[index] or pair.candidate is not self.candidate_cols[index]:
                return False
        return True

    def original_row(self, side: str, canonical_row: tuple, aligned: Aligned) -> tuple:
        """The first original row (in expected column order) whose canonical form is ``canonical_row``."""
        if side == "expected":
            return tuple(self.expected_rows[aligned.expected_rows.index(canonical_row)])
        row = self.candidate_rows[aligned.candidate_rows.index(canonical_row)]
        return tuple(row[j] for j in aligned.alignment)

    def column_label(self, expected_index: int, aligned: Aligned) -> str:
        """``'genre'``, or ``'n' (candidate 'count_star()')`` when the aligned names differ."""
        exp_name = self.expected_columns[expected_index]
        cand_name = self.candidate_columns[aligned.alignment[expected_index]]
        if exp_name.casefold() == cand_name.casefold():
            return repr(exp_name)
        return f"{exp_name!r} (candidate {cand_name!r})"

    def rule_name(self, names: Sequence[str] | set[str]) -> str:
        """Rule names joined by ``+``: column alignment first, then the others in ``RULES`` order."""
        unique = sorted(
            set(names),
            key=lambda n: (n not in self.alignment_rules, self.rule_order.get(n, len(self.rule_order)), n),
        )
        return "+".join(unique)

    def matched(self, aligned: Aligned) -> Comparison:
        """A match under ``aligned``, named after every non-trivial rule it needed (else ``multiset_exact``)."""
        rules = [*self.alignment_rules, *aligned.value_rules_used()]
        if aligned.rows.tolerance_matched:
            rules.append("float_tolerance")
        details = [self.alignment_note(aligned)] if self.alignment_rules else []
        for index, pair in enumerate(aligned.pairs):
            used = pair.rules_used()
            if used:
                details.append(
                    f"column {self.column_label(index, aligned)}: {pair.describe()} ({self.rule_name(used)})"
                )
        if aligned.rows.tolerance_matched:
            details.append(
                f"{plural(aligned.rows.tolerance_matched, 'row')} equal within float tolerance "
                f"(rel_tol={self.config.rel_tol:g}, abs_tol={self.config.abs_tol:g})"
            )
        reason = all_rows_match(aligned.rows.expected_count)
        return Comparison(
            match=True,
            rule=self.rule_name(rules) or "multiset_exact",
            reason=self._with_notes("; ".join([reason, *details])),
            score=1.0,
            alignment=aligned.alignment,
            **credit(aligned.rows, len(self.expected_columns)),
        )

    def mismatched(self, rule: str, reason: str, score: float) -> Comparison:
        """A mismatch: ``rule`` is the check that failed."""
        if self.alignment_rules and self.alignment is not None:
            reason = f"{reason}; {self.alignment_note(self.aligned())}"
        comparison = Comparison(
            match=False, rule=rule, reason=self._with_notes(reason), score=round(score, 6), alignment=self.alignment
        )
        if self.alignment is None:
            return comparison
        return comparison.evolve(**credit(self.aligned().rows, len(self.expected_columns)))

    def alignment_note(self, aligned: Aligned) -> str:
        """How the candidate columns were aligned, for the reason."""
        if "column_positional" in self.alignment_rules:
            return (
                f"columns compared by position (names differ: expected {self.expected_columns}, "
                f"candidate {self.candidate_columns})"
            )
        if "column_reorder_by_name" in self.alignment_rules:
            return f"candidate columns matched by name in a different order ({', '.join(self.candidate_columns)})"
        mapping = ", ".join(
            f"{self.candidate_columns[j]!r} -> {self.expected_columns[i]!r}" for i, j in enumerate(aligned.alignment)
        )
        return f"candidate columns reordered ({mapping})"

    def _with_notes(self, reason: str) -> str:
        return "; ".join([reason, *self.notes]) if self.notes else reason
