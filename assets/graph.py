"""The asset graph of nl2sql-eval in stage order, and the two partition groups a run materializes apart.

One Dagster run cannot mix partition definitions: the gold-partitioned assets run first, then the
gold x model ones (see ``nl2sql_cli.runner``).
"""

from assets.answers import answer_judgements, candidate_answers
from assets.baselines import baselines
from assets.candidates import candidate_results, candidate_sql
from assets.checks import GATE_CHECKS, GOLD_CHECKS
from assets.gold import database_variants, gold_set, oracle_results, sample_database
from assets.leaderboard import leaderboard
from assets.robustness import ROBUSTNESS_ASSETS
from assets.scores import run_scores
from assets.sql_judges import sql_judgements
from assets.verdicts import case_verdicts

ALL_ASSETS = [
    sample_database,
    gold_set,
    oracle_results,
    database_variants,
    candidate_sql,
    candidate_results,
    case_verdicts,
    candidate_answers,
    answer_judgements,
    run_scores,
    baselines,
    leaderboard,
    *ROBUSTNESS_ASSETS,
    sql_judgements,
]
ASSET_CHECKS = [*GOLD_CHECKS, *GATE_CHECKS]
GOLD_ASSETS = [gold_set, oracle_results, database_variants]
MODEL_ASSETS = [candidate_sql, candidate_results, case_verdicts, run_scores, baselines]
# Selected only when a run turns answers or judges on: downstream of candidate_results, never re-running generation.
ANSWER_ASSETS = [candidate_answers, answer_judgements]
SQL_JUDGE_ASSETS = [sql_judgements]  # selected only when a judge with a SQL role is requested
