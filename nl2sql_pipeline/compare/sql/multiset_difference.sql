-- Whole-result multiset comparison, run by nl2sql_pipeline/compare/engine.py in the sandbox.
-- Both queries are embedded as subqueries (their columns renamed positionally), every cell is turned
-- into its comparison key by the value rules (engine_keys.py), and rows are counted per key on each
-- side. Part 0 is the totals (rows per side, rows matched, groups whose floats matched only within
-- tolerance); part 1 the groups whose counts differ (at most {residue_cap}), with the smallest raw
-- float of each group (exact when the group holds one row).
WITH e_raw AS (SELECT * FROM ({expected}) AS e_raw_({expected_names})),
     c_raw AS (SELECT * FROM ({candidate}) AS c_raw_({candidate_names})),
     u AS (
         SELECT {expected_keys}, 1 AS side FROM e_raw
         UNION ALL
         SELECT {candidate_keys}, -1 AS side FROM c_raw
     ),
     g AS MATERIALIZED (
         SELECT {key_names},
                count(*) FILTER (WHERE side = 1) AS n_e,
                count(*) FILTER (WHERE side = -1) AS n_c{group_extras}
         FROM u
         GROUP BY {key_names}
     )
SELECT 0 AS part, sum(n_e) AS n_e, sum(n_c) AS n_c, sum(least(n_e, n_c)) AS n_matched,
       {tolerance_groups} AS n_tolerance, {null_columns}
FROM g
UNION ALL
(SELECT 1, n_e, n_c, NULL, NULL, {residue_columns} FROM g WHERE n_e <> n_c LIMIT {residue_cap})
