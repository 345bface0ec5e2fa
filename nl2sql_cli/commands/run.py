"""``nl2sql-eval run``: materialize the asset graph in-process against the local Dagster instance.

The runs land in the persistent instance under the storage root, so they appear in the UI afterwards.
Order: the sample database, then the gold-set assets of the gold version (its preflight must pass; a case
with a blocking finding is quarantined: left out of every model's run, listed and counted, or under
``--strict-gold`` a failed preflight), then the per-model assets for each model, then the baseline
comparison and the gates. Exit codes: 0 every
run scored and every gate passed; 1 a gate failed; 2 bad input; 3 a model was not ready (missing key or
server) and was reported as skipped, or a run evaluated nothing / skipped more than --max-skipped-share of
its cases (recorded as not comparable, never a baseline), or the storage root cannot be created or written
(checked before any work); 4 a materialization or the gold preflight failed (under --strict-gold: also when it
quarantined a case). Without --force, a model whose stored results are current but cannot be read back (a
file missing or cut short) is evaluated again (``RE-EVALUATED``), the generation cache serving its answers.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nl2sql_cli.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_ENVIRONMENT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    EXIT_RUN_FAILED,
)
from nl2sql_pipeline.errors import ConfigError

logger = logging.getLogger(__name__)

DEFAULT_GOLD_SET = "multidomain-v1"
DEFAULT_MODELS = ("gold-echo", "sql-mutant")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``run`` sub-command."""
    parser = subparsers.add_parser(
        "run",
        help="evaluate models on a gold set (materializes the Dagster graph)",
        epilog="exit codes: 0 every run scored; 1 a gate (--min-semantic-correct, --min-execution-success, --min-policy-recall, --max-regression, --max-execution-drop, --max-p95-latency-ms, --max-cost-usd) failed; 2 unknown gold set or model, invalid policy, or a predictions file that does not line up with the gold set; 3 a model was not ready (missing key, server or predictions file) and was reported as SKIPPED with the reason, or a run evaluated nothing or skipped more than --max-skipped-share of its cases, or the storage root cannot be created or written (checked before any work); 4 a materialization or the gold preflight failed (with --strict-gold: also when a case was quarantined)",
    )
    parser.add_argument("--gold-set", default=DEFAULT_GOLD_SET, help=f"gold-set key (default {DEFAULT_GOLD_SET})")
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="SLUG",
        help=f"model slug from data/models.yml; repeatable (default: {', '.join(DEFAULT_MODELS)})",
    )
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="sample each case N times (default 1)")
    parser.add_argument(
        "--policy",
        metavar="NAME_OR_FILE",
        help="evaluate under this SQL policy instead of each case's own (a name under data/policies/ or a YAML file)",
    )
    parser.add_argument(
        "--isolated",
        action="store_true",
        help="run candidate SQL in a worker process killed at its timeout: the backstop for the rare query that "
        "ignores DuckDB's interrupt (about 1.3 ms more per query)",
    )
    parser.add_argument(
        "--min-semantic-correct",
        "--min-correctness",
        type=_rate,
        metavar="RATE",
        dest="min_semantic_correct",
        help="gate: exit 1 when a model's semantic_correctness_rate is below RATE (0..1)",
    )
    parser.add_argument(
        "--min-execution-success",
        type=_rate,
        metavar="RATE",
        help="gate: exit 1 when a model's sql_execution_success_rate is below RATE (probe-only runs exempt)",
    )
    parser.add_argument(
        "--min-policy-recall",
        type=_rate,
        metavar="RATE",
        help="gate: exit 1 when a model's policy_rejection_recall is below RATE (runs without probes exempt)",
    )
    parser.add_argument(
        "--max-regression",
        type=_rate,
        metavar="DELTA",
        help="gate: exit 1 when a model's semantic_correctness_rate fell by more than DELTA (0..1, e.g. 0.02) "
        "against its baseline (its latest earlier fully evaluated run on the same gold set, policies and comparator)",
    )
    parser.add_argument(
        "--max-skipped-share",
        type=_rate,
        metavar="SHARE",
        help="exit 3 when more than SHARE of a model's query cases were skipped (no key, quota, rate limit, "
        "timeout; default 0: any skipped case); a run that evaluated nothing always exits 3. Unset gates come from "
        "the model's gates: in models.yml, then the defaults (runs.gates.DEFAULT_GATES)",
    )
    parser.add_argument(
        "--max-execution-drop",
        type=_rate,
        metavar="DELTA",
        help="gate: exit 1 when a model's sql_execution_success_rate fell by more than DELTA against its baseline "
        "(default 0.05; 1 turns it off)",
    )
    parser.add_argument(
        "--max-p95-latency-ms",
        type=_non_negative,
        metavar="MS",
        help="budget gate: exit 1 when a model's p95 generation latency is above MS milliseconds",
    )
    parser.add_argument(
        "--max-cost-usd",
        type=_non_negative,
        metavar="USD",
        help="budget gate: exit 1 when a model's total cost (scored cases whose cost is known) is above USD",
    )
    parser.add_argument(
        "--lock-wait",
        type=_seconds,
        default=3600.0,
        metavar="SECONDS",
        help="how long to wait while another evaluation of the same gold set and model is in progress "
        "(default 3600; 0: refuse at once)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="evaluate the models again even when nothing changed (by default a model whose latest run was fully evaluated and has "
        "the same model config, gold fingerprint, semantic model, policies, comparator and harness is not re-run: "
        "its stored scores are printed)",
    )
    parser.add_argument(
        "--test-suite-variants",
        type=int,
        default=3,
        metavar="K",
        help="test-suite accuracy: also run every correct candidate on K seeded variants of its database (rows "
        "sampled with foreign keys kept, duplicated, shuffled, NULLs, boundary values of the gold's literals; built "
        "once per gold version under the storage root) and count it correct only if it matches everywhere "
        "(default 3; 0 turns it off)",
    )
    parser.add_argument(
        "--probe-systems",
        action="store_true",
        help="ask a live system (kind: http | python | command) every policy probe's question and classify its "
        "reply: refused, SQL the policy refuses, SQL that would run (system_policy_recall beside the harness's own "
        "policy_rejection_recall; one call per probe and sample; bare models are never asked probes)",
    )
    parser.add_argument(
        "--efficiency",
        action="store_true",
        help="stable efficiency score (VES-like): profile every correct candidate and its gold in the sandbox "
        "(EXPLAIN ANALYZE's row counts, identical from run to run) and score sqrt(gold work / candidate work); "
        "the profiled wall times are shown beside, never scored (about two extra query runs per correct case)",
    )
    parser.add_argument(
        "--strict-gold",
        action="store_true",
        help="a gold case the preflight would quarantine (failing, clock-dependent or ambiguous gold, a policy "
        "that refuses its own gold, ...) fails the run with exit 4 and no model is evaluated; by default such "
        "cases are left out of the scores, listed and counted (quarantined_count). A gold set's registry entry "
        "may ask for it with strict_gold: true",
    )
    parser.add_argument(
        "--paraphrases",
        type=int,
        default=0,
        metavar="K",
        help="paraphrase consistency: also ask every query case in K other phrasings (templated, reordered "
        "clauses, synonyms, typos, then stored model paraphrases; seeded by case id) and judge them against the "
        "same gold: accuracy per family, consistency, flipping cases. Costs K more model calls per case "
        "(cached). Default 0: off",
    )
    parser.add_argument(
        "--perturb",
        default="",
        metavar="KIND[,KIND]",
        help="schema perturbation: also ask every query case over perturbed copies of its database "
        "(abbreviate, synonym, camel_case, reorder_columns, distractors, or all), the gold rewritten for each and "
        "checked by running it: accuracy drop per kind. Costs one more model call per case and kind. Default: off",
    )
    parser.add_argument(
        "--answers",
        action="store_true",
        help="answer stage: ask each bare model for a short prose answer from the first rows its SQL returned "
        "(cached, accounted apart from generation; systems keep their own answers; offline models and replays use "
        "the offline answerer's template). Runs after an existing run without generating again",
    )
    parser.add_argument(
        "--answer-model",
        metavar="SLUG",
        help="a models.yml slug that writes the answers instead of the evaluated model itself",
    )
    parser.add_argument(
        "--judge",
        action="append",
        dest="judges",
        metavar="SLUG",
        help="a judge from data/judges.yml (repeatable); it does every role it has (answer: the answer rubric, "
        "which needs answers, so it turns the answer stage on; sql_equivalence and diagnosis: the sql_judgements "
        "of each model, equivalence beside execution and test-suite accuracy with the agreement between them, and "
        "a diagnosis with one recommendation per case that is not correct). Turning judges on after a run "
        "generates nothing",
    )
    parser.add_argument(
        "--answer-pass-score",
        type=int,
        metavar="N",
        help="an answer passes when correctness, groundedness and completeness all reach N (1-5; default 4, or "
        "the gold set's answer_thresholds)",
    )
    parser.add_argument(
        "--answer-partial-score",
        type=int,
        metavar="N",
        help="an answer that does not pass earns partial credit when its correctness reaches N (default 3)",
    )
    parser.add_argument(
        "--judge-repeat",
        type=int,
        default=1,
        metavar="N",
        help="ask every judgement N times (fresh calls, not the cache) and report each judge's own disagreement "
        "rate across the repeats (default 1)",
    )
    parser.add_argument("--json", action="store_true", help="print the scores as JSON (progress still goes to stderr)")
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress while it runs (by default: a live bar per model and stage on a terminal, plain "
        "'progress ...' lines every NL2SQL_PROGRESS_INTERVAL seconds otherwise; always on stderr)",
    )
    parser.set_defaults(handler=_handle)


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (give a rate between 0 and 1)") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is outside 0..1 (rates are fractions: 0.9 means 90%)")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative (a budget is 0 or more)")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"{text} is not a wait (give 0 or more seconds; 0 refuses at once)")
    return value


def _handle(args: argparse.Namespace) -> int:

    if args.repeat < 1:
        print("error: --repeat must be >= 1", flush=True)
        return 2
    if args.judge_repeat < 1:
        print("error: --judge-repeat must be >= 1", file=sys.stderr, flush=True)
        return 2
    if args.judge_repeat > 1 and not args.judges:
        print(
            "error: --judge-repeat repeats the judges of --judge SLUG; name at least one", file=sys.stderr, flush=True
        )
        return 2
    if args.test_suite_variants < 0:
        print(
            "error: --test-suite-variants must be >= 0 (0 turns test-suite accuracy off)", file=sys.stderr, flush=True
        )
        return 2
    if args.paraphrases < 0:
        print("error: --paraphrases must be >= 0 (0 turns paraphrase consistency off)", file=sys.stderr, flush=True)
        return 2
    if args.perturb:
        from nl2sql_pipeline.robustness.perturb import PerturbationError, parse_kinds

        try:
            args.perturb = ",".join(parse_kinds(args.perturb))
        except PerturbationError as exc:
            print(f"error: --perturb: {exc}", file=sys.stderr, flush=True)
            return 2
    from nl2sql_pipeline.runs.gates import GateThresholds
    from nl2sql_pipeline.runs.measurements import Measurements

    thresholds = GateThresholds(
        max_skipped_share=args.max_skipped_share,
        min_execution_success=args.min_execution_success,
        min_semantic_correct=args.min_semantic_correct,
        min_policy_recall=args.min_policy_recall,
        max_regression=args.max_regression,
        max_execution_drop=args.max_execution_drop,
        max_p95_latency_ms=args.max_p95_latency_ms,
        max_cost_usd=args.max_cost_usd,
    )
    return run_evaluation(
        args.gold_set,
        list(args.models or DEFAULT_MODELS),
        repeat=args.repeat,
        policy=args.policy,
        isolated=args.isolated,
        thresholds=thresholds,
        as_json=args.json,
        lock_wait_s=args.lock_wait,
        force=args.force,
        quiet=args.quiet,
        test_suite_variants=args.test_suite_variants,
        strict_gold=args.strict_gold,
        paraphrases=args.paraphrases,
        perturb=args.perturb,
        measurements=Measurements(probe_systems=args.probe_systems, efficiency=args.efficiency),
        answers=_answer_options(args),
    )


def _answer_options(args: argparse.Namespace):
    """The run's answer stage and judges (None when neither is asked for)."""
    from nl2sql_cli.run_result import AnswerOptions

    judges = tuple(dict.fromkeys(args.judges or ()))
    if not (args.answers or judges):
        return None
    return AnswerOptions(
        answers=args.answers,
        answer_model=args.answer_model,
        judges=judges,
        pass_score=args.answer_pass_score,
        partial_score=args.answer_partial_score,
        judge_repeat=args.judge_repeat,
    )


def _detailed_report(gold_set: str, runs: list[dict]) -> str:
    """Each run's report from its stored verdicts (bars, intervals, causes), the paired tests, the side-by-side table."""
    from nl2sql_pipeline.report import console_report
    from nl2sql_pipeline.report.console import console_full_report
    from nl2sql_pipeline.report.stored import load_run_report

    reports = [load_run_report(gold_set, r["model"], with_samples=False) for r in runs]
    return f"{console_full_report(reports)}\n\n== side by side ==\n{console_report(runs, with_warnings=False, with_breakdowns=False)}"


def _robustness_report(gold_set: str, runs: list[dict]) -> str:
    """Each model's stored robustness results (paraphrase consistency, perturbation drop)."""
    from types import SimpleNamespace

    from nl2sql_pipeline.robustness.report import robustness_section, stored_robustness_lines

    parts = [SimpleNamespace(gold_set=gold_set, model=run["model"]) for run in runs]
    return robustness_section(stored_robustness_lines(parts))


def _robustness_summary(gold_set: str, runs: list[dict]) -> dict[str, dict]:
    """Each model's robustness headline numbers (consistency, accuracy per family, drop per kind) for --json."""
    from nl2sql_pipeline.robustness.scores import scores_summary
    from nl2sql_pipeline.robustness.stored import load_robustness

    return {run["model"]: scores_summary(*load_robustness(gold_set, run["model"])) for run in runs}


def _answer_scores(gold_set: str, answered: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per model and answer judge: the answer summary of the run that answered it (``--json``)."""
    from nl2sql_pipeline.judges.answer import answer_summary
    from nl2sql_pipeline.results.read import load_answer_judgements

    out: dict[str, dict[str, Any]] = {}
    for slug, run_id in answered.items():
        judgements = load_answer_judgements(gold_set, slug, run_id)
        by_judge: dict[str, list] = {}
        for judgement in judgements:
            by_judge.setdefault(judgement.judge, []).append(judgement)
        out[slug] = {judge: answer_summary(found) for judge, found in by_judge.items()}
    return out


def _sql_judge_scores(gold_set: str, models: list[str]) -> dict[str, Any]:
    """Per model and judge, the SQL judges' numbers of its stored run (models without judgements left out)."""
    from nl2sql_pipeline.report.sql_judges import build_sql_judge_report, sql_judges_summary
    from nl2sql_pipeline.results.read import load_run
    from nl2sql_pipeline.results.sql_judgements import load_sql_judgements

    out: dict[str, Any] = {}
    for slug in models:
        judgements = load_sql_judgements(gold_set, slug)
        if judgements:
            summary = sql_judges_summary(build_sql_judge_report(judgements, load_run(gold_set, slug).verdicts))
            if summary:
                out[slug] = summary
    return out


def _check_inputs(gold_set: str) -> int | None:
    """Validate the gold set and its databases before any materialization: the exit code of a problem, else None."""
    from nl2sql_pipeline.errors import CaseValidationError, DatabaseNotFoundError
    from nl2sql_pipeline.gold.registry import check_gold_set_inputs

    try:
        check_gold_set_inputs(gold_set)
    except CaseValidationError as exc:
        for line in exc.problems:
            print(line, file=sys.stderr)
        print(f"gold set '{gold_set}' is invalid: {len(exc.problems)} problem(s); nothing was run", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except DatabaseNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    return None


@contextmanager
def _progress_shown(quiet: bool) -> Iterator[None]:
    """Progress of every stage on stderr while the block runs (nothing when ``quiet``)."""
    if quiet:
        yield
        return
    from nl2sql_cli.progress_view import ProgressView, clear_before_logging
    from nl2sql_pipeline import progress

    view = ProgressView()
    undo = clear_before_logging(view)  # a warning logged mid-run starts on a line of its own
    try:
        with progress.subscribe(view):
            yield
    finally:
        undo()
        view.close()


def run_evaluation(
    gold_set: str,
    models: list[str],
    *,
    repeat: int = 1,
    policy: str | None = None,
    isolated: bool = False,
    min_correctness: float | None = None,
    max_regression: float | None = None,
    thresholds=None,
    as_json: bool = False,
    lock_wait_s: float | None = 3600.0,
    force: bool = False,
    quiet: bool = False,
    test_suite_variants: int = 3,
    strict_gold: bool = False,
    paraphrases: int = 0,
    perturb: str = "",
    measurements=None,
    answers=None,
) -> int:
    """Evaluate, print the report and the baseline comparison, return the exit code; progress goes to stderr
    while it runs unless ``quiet``. ``answers`` (``run_result.AnswerOptions``) turns the answer stage and judges on."""
    from nl2sql_cli.run_result import stored_outcome
    from nl2sql_cli.startup import imports_without_collection
    from nl2sql_pipeline import paths
    from nl2sql_pipeline.runs import GateThresholds, check_gates, thresholds_for_model
    from nl2sql_pipeline.runs.measurements import Measurements

    measurements = measurements or Measurements()
    with imports_without_collection():  # the gold registry and its checks
        code = _check_inputs(gold_set)
        if code is None:  # a baselines file that cannot be read back: StoredFileError (exit 3) before any write
            from nl2sql_pipeline.runs.store import check_baselines

            check_baselines(paths.baselines_db_path())
    if code is not None:
        return code
    fallback = {"min_semantic_correct": min_correctness, "max_regression": max_regression}
    given = (thresholds or GateThresholds()).over({k: v for k, v in fallback.items() if v is not None})

    def waiting(message: str) -> None:
        print(f"WAITING: {message}", file=sys.stderr, flush=True)

    try:
        if answers is not None:
            answers.check()  # an unknown judge or answer model, bad thresholds: exit 2 before any run
        with imports_without_collection():  # stored_outcome imports pandas; the runner, the Dagster layer
            outcome = (
                None
                if force
                or paraphrases > 0
                or perturb
                or answers is not None  # robustness, answers and judges run beside reused scores
                else stored_outcome(
                    gold_set,
                    models,
                    repeat=repeat,
                    policy=policy,
                    test_suite_variants=test_suite_variants,
                    strict_gold=strict_gold,
                    measurements=measurements,
                )
            )
            if outcome is None:
                from nl2sql_cli.runner import evaluate  # the Dagster layer, loaded only when a run is needed
        if outcome is None:
            with _progress_shown(quiet):
                outcome = evaluate(
                    gold_set,
                    models,
                    repeat=repeat,
                    policy=policy,
                    isolated=isolated,
                    thresholds=given,
                    lock_wait_s=lock_wait_s,
                    on_wait=waiting,
                    force=force,
                    test_suite_variants=test_suite_variants,
                    strict_gold=strict_gold,
                    paraphrases=paraphrases,
                    perturb=perturb,
                    measurements=measurements,
                    answers=answers,
                )
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for slug, run_id in outcome.reused.items():
        print(
            f"REUSED {slug}: nothing changed since run {run_id}; its stored scores stand (--force runs it again)",
            file=sys.stderr,
        )
    for slug, assets in outcome.judgements_reused.items():
        print(
            f"REUSED {slug} judgements: {', '.join(assets)} stored with the same judges and versions stand",
            file=sys.stderr,
        )
    for slug, problem in outcome.unreadable.items():
        print(f"RE-EVALUATED {slug}: {problem}; its run was evaluated again", file=sys.stderr)
    for run_id in outcome.reaped_runs:
        print(
            f"NOTE: run {run_id} was left in progress by a process that no longer exists; marked failed",
            file=sys.stderr,
        )
    runs: list[dict[str, Any]] = [
        {"model": slug, "gold_set": gold_set, "scores": scores} for slug, scores in outcome.scores.items()
    ]
    gates = check_gates(
        list(outcome.scores.values()), paths.baselines_db_path(), lambda model: thresholds_for_model(given, model)
    )
    if as_json:
        from nl2sql_pipeline.results.frames import JSON_METRICS

        # nested metrics stay JSON text in this output, as the run_scores Parquet stores them
        stored = [
            {
                **r,
                "scores": {
                    k: (json.dumps(v, sort_keys=True) if k in JSON_METRICS else v) for k, v in r["scores"].items()
                },
            }
            for r in runs
        ]
        print(
            json.dumps(
                {
                    "runs": stored,
                    "skipped_models": outcome.skipped_models,
                    "failures": outcome.failures,
                    "preflight_problems": outcome.preflight_problems,
                    "preflight_flags": outcome.preflight_triage,
                    "quarantined": outcome.quarantine,
                    "baseline_comparison": gates.lines,
                    "gate_failures": gates.messages(),
                    "incomplete": [f.message for f in gates.failures if f.incomplete],
                    "asset_checks": outcome.checks,
                    "asset_check_messages": outcome.check_messages,
                    "reused": outcome.reused,
                    "judgements_reused": outcome.judgements_reused,
                    "re_evaluated": outcome.unreadable,
                    **({"robustness": _robustness_summary(gold_set, runs)} if paraphrases > 0 or perturb else {}),
                    "answers": _answer_scores(gold_set, outcome.answered),
                    "sql_judges": _sql_judge_scores(gold_set, list(outcome.scores)) if answers is not None else {},
                },
                default=str,
                indent=2,
            )
        )
    else:
        if runs:
            print(_detailed_report(gold_set, runs))
            section = _robustness_report(gold_set, runs) if paraphrases > 0 or perturb else ""
            if section:
                print(section)
        for line in gates.lines:
            print(f"BASELINE {line}")
    for slug, reason in outcome.skipped_models.items():
        print(f"SKIPPED model {slug}: {reason}", file=sys.stderr)
    for flag in outcome.preflight_triage:
        if not flag.get("blocking"):
            print(f"PREFLIGHT WARNING {flag.get('label')}: [{flag.get('kind')}] {flag.get('reason')}", file=sys.stderr)
    if not outcome.preflight_problems:  # under strict gold the same findings are printed as the failure
        for finding in outcome.quarantine:
            print(
                f"QUARANTINED {finding.get('label')}: [{finding.get('kind')}] {finding.get('reason')} "
                "(left out of every rate)",
                file=sys.stderr,
            )
    for problem in outcome.preflight_problems:
        print(f"PREFLIGHT FAILED:\n{problem}", file=sys.stderr)
    for failure in outcome.failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    for gate_failure in gates.failures:
        label = "INCOMPLETE RUN" if gate_failure.incomplete else "GATE FAILED"
        print(f"{label}: {gate_failure.message}", file=sys.stderr)
    if outcome.failures:
        return EXIT_RUN_FAILED
    if gates.incomplete:
        return EXIT_ENVIRONMENT
    if gates.failures:
        return EXIT_GATE_FAILED
    if outcome.skipped_models:
        return EXIT_ENVIRONMENT
    return EXIT_OK
