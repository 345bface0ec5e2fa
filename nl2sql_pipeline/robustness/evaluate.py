"""A model's verdicts on robustness variants: the same path as the gold set's own cases.

Generation goes through ``generate_candidates`` with the generation cache (the prompt built from each
variant's database: a perturbed copy is introspected), then the policy gate and the sandbox
(``execute_attempts``), then the judge against the variant's oracle rows. Only the first sample is asked.
Each stage's progress names the model and what the variants measure: ``gold-echo (perturbation: camel_case)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from nl2sql_pipeline.compare import CompareConfig
from nl2sql_pipeline.execution import SandboxLimits
from nl2sql_pipeline.generation import GenerationCache, generate_candidates, get_model, prompt_context_for_cases
from nl2sql_pipeline.policy.gate import PolicyGate
from nl2sql_pipeline.progress import STAGE_EXECUTE, STAGE_GENERATE, STAGE_JUDGE, ProgressTracker
from nl2sql_pipeline.robustness.records import VariantVerdict
from nl2sql_pipeline.robustness.variant_cases import VariantCase
from nl2sql_pipeline.stages import execute_attempts, judge
from nl2sql_pipeline.stages.records import OracleRow, attempts_from_candidates

logger = logging.getLogger(__name__)


def evaluate_variants(
    variants: Sequence[VariantCase],
    oracle: Sequence[OracleRow],
    model: str,
    resolve_database: Callable[[str], Path],
    *,
    policy: str | None = None,
    limits: SandboxLimits = SandboxLimits(),
    config: CompareConfig = CompareConfig(),
    use_cache: bool = True,
    isolated: bool = False,
    progress: Callable[[str, str], ProgressTracker] = ProgressTracker,
) -> list[VariantVerdict]:
    """Generate, execute and judge every variant for ``model``; one verdict per variant, in order (``isolated``:
    candidates run in a killable worker process, as ``execute_attempts`` says). ``progress(stage, name)`` makes
    each stage's tracker (default: one reporting to the subscribed sinks), named by :func:`progress_name`."""
    if not variants:
        return []
    spec = get_model(model)
    if spec.is_replay:  # a predictions file answers only the questions it was made for
        logger.warning("%s replays a predictions file: it cannot answer robustness variants; none measured", model)
        return []
    cases = [v.case for v in variants]
    name = progress_name(spec.slug, variants)
    records = generate_candidates(
        cases,
        spec,
        cache=GenerationCache() if use_cache else None,
        context=prompt_context_for_cases(cases, resolve_database=resolve_database),
        samples=1,
        resolve_database=resolve_database,
        progress=progress(STAGE_GENERATE, name),
    )
    gate = PolicyGate(resolve_database, policy)
    executed = execute_attempts(
        cases,
        attempts_from_candidates(records),
        gate,
        limits,
        isolated=isolated,
        progress=progress(STAGE_EXECUTE, name),
    )
    judged = judge(cases, oracle, executed, config, resolve_database, limits, progress=progress(STAGE_JUDGE, name))
    verdicts = {v.case_id: v for v in judged}
    out = []
    for variant in variants:
        verdict = verdicts.get(variant.case.id)
        out.append(
            VariantVerdict(
                case_id=variant.base_id,
                measurement=variant.measurement,
                family=variant.family,
                label=variant.label,
                question=variant.case.question,
                database=variant.case.database,
                generated_sql=verdict.generated_sql if verdict else None,
                outcome=verdict.outcome if verdict else "skipped",
                correct=bool(verdict and verdict.correct),
                reason=verdict.reason if verdict else "no verdict (nothing was generated)",
                mutation=verdict.mutation if verdict else None,
            )
        )
    return out


def progress_name(model: str, variants: Sequence[VariantCase]) -> str:
    """``model (measurement: families or kinds)``: what a variant stage's progress line is about."""
    measurements = ", ".join(dict.fromkeys(v.measurement for v in variants))
    families = ", ".join(sorted({v.family for v in variants}))
    return f"{model} ({measurements}: {families})"
