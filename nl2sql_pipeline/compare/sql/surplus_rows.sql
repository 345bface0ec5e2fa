-- The surplus rows of the groups whose counts differ (engine.py's fallback when a differing group
-- holds more than one row and floats must be paired within tolerance): side, keys, raw floats.
WITH {inputs},
     u AS (
         SELECT {expected_keys}, 1 AS side FROM e_raw
         UNION ALL
         SELECT {candidate_keys}, -1 AS side FROM c_raw
     ),
     ranked AS (
         SELECT *,
                sum(side) OVER (PARTITION BY {key_names}) AS surplus,
                row_number() OVER (PARTITION BY {key_names}, side ORDER BY {raw_names}) AS position
         FROM u
     )
SELECT side, {residue_raw_columns}
FROM ranked
WHERE side * surplus > 0 AND position <= abs(surplus)
LIMIT {residue_cap}
