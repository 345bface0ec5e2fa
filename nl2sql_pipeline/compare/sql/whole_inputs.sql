-- The inputs of the whole-result comparison (engine.py): both queries embedded as subqueries, their
-- columns renamed positionally (e0, e1, ... and c0, c1, ...).
e_raw AS (SELECT * FROM ({expected}) AS e_raw_({expected_names})),
c_raw AS (SELECT * FROM ({candidate}) AS c_raw_({candidate_names}))
