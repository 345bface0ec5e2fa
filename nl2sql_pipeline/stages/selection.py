"""Candidate selection and the best of several acceptable expected results."""

from __future__ import annotations

from collections.abc import Sequence

from nl2sql_pipeline.compare import CompareConfig, Comparison, compare_query_results
from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.records import Attempt


def best_comparison(oracles: Sequence[QueryResult], candidate: QueryResult, config: CompareConfig) -> Comparison:
    """Compare against every acceptable alternative; a match with any one is a match, else the best score."""
    best: Comparison | None = None
    for oracle in oracles:
        comparison = compare_query_results(oracle, candidate, config)
        if comparison.match:
            return comparison
        if best is None or comparison.score > best.score:
            best = comparison
    if best is None:
        raise ValueError("no expected result to compare with")
    return best


def select_candidate(attempts: Sequence[Attempt], config: CompareConfig) -> int:
    """Execution-consistency selection: the position of the result most candidates agree on.

    Only candidates that ran successfully vote; ties go to the first cluster's first member; with no
    successful candidate the first one is selected.
    """
    executed = [(i, a.result) for i, a in enumerate(attempts) if a.executed and a.result is not None and a.result.ok]
    if not executed:
        return 0
    clusters: list[list[int]] = []
    representatives: list[QueryResult] = []
    for index, result in executed:
        for members, rep in zip(clusters, representatives):
            if compare_query_results(rep, result, config).match:
                members.append(index)
                break
        else:
            clusters.append([index])
            representatives.append(result)
    best = max(clusters, key=lambda members: (len(members), -members[0]))
    return best[0]
