-- Whole-result multiset comparison, run by nl2sql_pipeline/compare/engine.py in the sandbox.
-- The inputs define e_raw and c_raw (whole_inputs.sql: both queries embedded as subqueries, their columns
-- renamed positionally; order_runs.sql for the order check), every cell is turned into its comparison key by the value rules (engine_keys.py), and rows are counted per key on each
-- side (n_all rows in the group, n_diff = expected rows - candidate rows). Raw floats come negated from
-- the candidate, so that their sum per group is 0 when both sides hold the same floats, and is the raw
-- value itself in a group of one row. One row comes back: the totals, the rows matched, the groups whose
-- floats matched only within tolerance, the number of differing groups, and at most {residue_cap} of
-- them (a bounded min_by of unnamed rows, so that nothing is materialized and the groups are read once).
WITH {inputs},
     u AS (
         SELECT {expected_keys}, 1 AS side FROM e_raw
         UNION ALL
         SELECT {candidate_keys}, -1 AS side FROM c_raw
     ),
     grouped AS (
         SELECT {key_names}, count(*) AS n_all, sum(side) AS n_diff{group_extras}
         FROM u
         GROUP BY {key_names}
     )
SELECT coalesce(sum(n_all), 0) AS n_all,
       coalesce(sum(n_diff), 0) AS n_diff,
       (coalesce(sum(n_all), 0) - coalesce(sum(abs(n_diff)), 0)) // 2 AS n_matched,
       {tolerance_groups} AS n_tolerance,
       count(*) FILTER (WHERE n_diff <> 0) AS n_differing_groups,
       min_by(row({residue_fields}), n_all, {residue_cap}) FILTER (WHERE n_diff <> 0) AS residue
FROM grouped
