"""What one evaluation did (the runner's result), kept free of Dagster so a no-op re-run never imports it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class AnswerOptions:
    """The answer stage and judges of a run (``--answers``, ``--answer-model``, ``--judge``, thresholds)."""

    answers: bool = False
    answer_model: str | None = None
    judges: tuple[str, ...] = ()
    pass_score: int | None = None  # None: the gold set's answer_thresholds, else judges.answer.AnswerThresholds
    partial_score: int | None = None
    judge_repeat: int = 1  # every judgement asked N times (--judge-repeat)

    def _judge_roles(self) -> set[str]:
        """Every role of the requested judges (the registry is read; unknown slugs are ``check``'s to report)."""
        if not self.judges:
            return set()
        from nl2sql_pipeline.judges.registry import load_judges

        registry = load_judges()
        return {role for slug in self.judges if slug in registry for role in registry[slug].roles}

    @property
    def answering(self) -> bool:
        """True when the run materializes the answer assets: answers asked for, or a judge with the answer role
        (it needs answers to judge)."""
        return self.answers or "answer" in self._judge_roles()

    @property
    def sql_judging(self) -> bool:
        """True when the run materializes ``sql_judgements``: a judge with the sql_equivalence or diagnosis role."""
        return bool({"sql_equivalence", "diagnosis"} & self._judge_roles())

    @property
    def enabled(self) -> bool:
        """True when the run materializes anything beyond the evaluation (answers, judgements)."""
        return self.answering or self.sql_judging

    def check(self) -> None:
        """ConfigError on an unknown judge or answer model."""
        from nl2sql_pipeline.errors import ConfigError
        from nl2sql_pipeline.generation.registry import get_model
        from nl2sql_pipeline.judges.registry import get_judge, load_judges

        registry = load_judges() if self.judges else {}
        for slug in self.judges:
            get_judge(slug, registry)
        if self.answer_model is not None:
            get_model(self.answer_model)
        if self.judge_repeat < 1:
            raise ConfigError(f"judge repeat must be at least 1, got {self.judge_repeat}")
        for name, value in (("--answer-pass-score", self.pass_score), ("--answer-partial-score", self.partial_score)):
            if value is not None and not 1 <= value <= 5:
                raise ConfigError(f"{name} {value} is outside 1..5 (rubric scores run from 1 to 5)")

    def settings(self) -> dict[str, object]:
        """The ``EvalSettings`` fields of these options."""
        return {
            "answers": self.answers,
            "answer_model": self.answer_model,
            "judges": list(self.judges),
            "answer_pass_score": self.pass_score,
            "answer_partial_score": self.partial_score,
            "judge_repeat": self.judge_repeat,
        }


@dataclass
class EvaluationOutcome:
    """What one ``evaluate`` did: scores per model, models skipped, stage timings, failures.

    ``scores[slug]`` is the run's identity (gold set, model, run id, versions) and every metric, read back
    through the codec: breakdowns, warnings and outcome counts are real dicts and lists.
    """

    scores: dict[str, dict] = field(default_factory=dict)
    skipped_models: dict[str, str] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    preflight_problems: list[str] = field(default_factory=list)
    preflight_triage: list[dict] = field(default_factory=list)  # gold triage findings (label, kind, blocking, reason)
    quarantine: list[dict] = field(
        default_factory=list
    )  # findings that quarantined a case (case_id, label, kind, reason)
    checks: dict[str, dict[str, bool]] = field(default_factory=dict)  # model -> asset check name -> passed
    check_messages: dict[str, dict[str, str]] = field(default_factory=dict)  # model -> check -> description
    reaped_runs: list[str] = field(default_factory=list)  # runs of dead processes marked failed at start
    reused: dict[str, str] = field(default_factory=dict)  # model -> run id whose stored scores stand (nothing changed)
    # model -> why its current run's stored results could not stand (a file missing or unreadable, or judged on
    # other database contents): evaluated again
    unreadable: dict[str, str] = field(default_factory=dict)
    gold_prepared: bool = False  # the gold stage was skipped: this gold version was prepared before
    answered: dict[str, str] = field(default_factory=dict)  # model -> run id of its answers and judgements
    # model -> judgement assets whose stored judgements were current (same judges and versions): not judged again
    judgements_reused: dict[str, list[str]] = field(default_factory=dict)


def stored_outcome(
    gold_set: str,
    models: list[str],
    *,
    repeat: int = 1,
    policy: str | None = None,
    test_suite_variants: int | None = None,
    strict_gold: bool = False,
    measurements=None,
) -> EvaluationOutcome | None:
    """The outcome of a run that would change nothing, from the stored scores alone (no Dagster), else None.

    It holds when the gold version is prepared at its current fingerprint on its databases as they are now
    (``databases.stamp``; with its quarantine recorded, and nothing quarantined under strict gold) and every
    model's latest fully evaluated run, judged on those databases, is current
    (``nl2sql_pipeline.runs.reuse``; the quarantine is part of the gold fingerprint) with its stored results
    readable (``results.read.stored_results_problem``). Anything unusual (an
    unknown name, a bad file) returns None: the full run reports it properly.
    """
    from nl2sql_pipeline import paths
    from nl2sql_pipeline.generation.registry import get_model
    from nl2sql_pipeline.gold.registry import list_gold_sets
    from nl2sql_pipeline.results.read import stored_results_problem
    from nl2sql_pipeline.runs.identity import with_quarantine
    from nl2sql_pipeline.runs.reuse import reusable_run
    from nl2sql_pipeline.runs.versions_memo import gold_database_stamp, gold_versions, model_versions
    from nl2sql_pipeline.storage.prepared import gold_ready, prepared_triage
    from nl2sql_pipeline.storage.quarantine import quarantined_ids, read_quarantine

    try:
        sets = list_gold_sets()
        if gold_set not in sets:
            return None
        specs = {slug: get_model(slug) for slug in models}
        base = gold_versions(gold_set, policy)
        stamp = gold_database_stamp(gold_set, policy)
        if not gold_ready(gold_set, base.gold_fingerprint, stamp):  # prepared on these databases, files readable
            return None
        quarantine = read_quarantine(gold_set, base.gold_fingerprint)
        if quarantine is None or (quarantine and (strict_gold or sets[gold_set].strict_gold)):
            return None  # not prepared by this preflight, or strict gold: the full run reports it
        outcome = EvaluationOutcome(
            gold_prepared=True,
            preflight_triage=prepared_triage(gold_set, base.gold_fingerprint),
            quarantine=quarantine,
        )
        base = with_quarantine(base, quarantined_ids(quarantine))
        db_path = paths.baselines_db_path()
        for slug, spec in specs.items():
            stored = reusable_run(
                db_path,
                gold_set,
                slug,
                model_versions(base, spec.config_hash),
                repeat,
                test_suite_variants=test_suite_variants,
                measurements=measurements,
                is_system=spec.is_system,
                database_stamp=stamp,
            )
            if stored is None or stored_results_problem(gold_set, slug) is not None:
                return None  # the full run evaluates it (again, when its stored files cannot be read back)
            outcome.scores[slug] = stored
            outcome.reused[slug] = str(stored["run_id"])
        return outcome
    except Exception:
        return None
