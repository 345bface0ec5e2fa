"""The evaluation stages as plain functions from records to records (the Dagster assets are thin wrappers).

    oracle   = run_oracle(cases, resolve_database, limits)           # OracleRow per expected SQL, once per gold
    attempts = execute_attempts(cases, attempts, gate, limits)       # policy + sandbox per attempt and probe
    suite    = VariantSuite.from_rows(run_variant_oracle(...), k)    # stages.test_suite: the gold on db variants
    verdicts = judge(cases, oracle, attempts, config, suite=suite)   # selection, outcome rules, comparators
    scores   = score_run(verdicts)                                   # nl2sql_pipeline.scoring.run_scores: RunScores

Modules: ``oracle``, ``execute``, ``judge``, ``selection`` (candidate selection, best alternative),
``outcome_rules`` (the ordered rules deciding a verdict's outcome), ``test_suite`` (test-suite accuracy on
database variants). The records are in
``nl2sql_pipeline.stages.records``; frames exist only in ``nl2sql_pipeline.results.frames``.
"""

from nl2sql_pipeline.stages.execute import execute_attempts
from nl2sql_pipeline.stages.judge import judge
from nl2sql_pipeline.stages.oracle import run_oracle

__all__ = ["execute_attempts", "judge", "run_oracle"]
