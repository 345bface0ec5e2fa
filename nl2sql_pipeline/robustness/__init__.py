"""Robustness measurements: the same gold asked another way, over another spelling of the schema.

- ``paraphrase``: deterministic rewordings of a question (templates, reordered clauses, synonyms, typos),
  seeded by the case id; ``stored_paraphrases``: model-written ones, generated once and stored as
  versioned data beside the gold set.
- ``perturb``: DuckDB copies of a case's database with renamed tables and columns, reordered columns or
  distractors, and the gold SQL rewritten through sqlglot's AST (checked by running it).
- ``variant_cases``: the variant cases asked of a model (a case id, a marker, the variant's label).
- ``evaluate``: a model's verdicts on variant cases (generation with its cache, the policy gate, the
  sandbox and the judge, as for the gold set itself).
- ``scores``: accuracy per paraphrase family and consistency with the flips; accuracy drop per
  perturbation kind with the cases that break.
"""
