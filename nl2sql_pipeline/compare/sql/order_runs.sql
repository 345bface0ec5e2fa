-- The inputs of the order check on whole results (engine_order.py), for the multiset comparison templates.
-- The gold (its sort keys that are not result columns appended as columns k0, k1, ...) and the candidate
-- are embedded as subqueries and each row is numbered in the order the query returns it (row_number() OVER
-- () keeps the row order). Consecutive gold rows equal on every sort key form a run, named by the position
-- of its first row. The candidate's row at each position takes the run of the gold's row there, so the
-- (row, run) multisets are equal exactly when each run of positions holds the same rows on both sides.
g AS (SELECT row_number() OVER () AS pos, * FROM ({expected}) AS g_({keyed_names})),
g_runs AS MATERIALIZED (
    SELECT *, max(CASE WHEN starts THEN pos END) OVER (ORDER BY pos ROWS UNBOUNDED PRECEDING) AS run
    FROM (
        SELECT *,
               coalesce(row({sort_keys}) IS DISTINCT FROM lag(row({sort_keys})) OVER (ORDER BY pos), true) AS starts
        FROM g
    )
),
c_numbered AS (SELECT row_number() OVER () AS pos, * FROM ({candidate}) AS c_({candidate_names})),
e_raw AS (SELECT {expected_names}, run AS {expected_run} FROM g_runs),
c_raw AS (SELECT {candidate_names}, g_runs.run AS {candidate_run} FROM c_numbered JOIN g_runs USING (pos))
