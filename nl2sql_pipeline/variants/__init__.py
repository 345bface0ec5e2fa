"""Seeded variants of a DuckDB database, for test-suite accuracy (Zhong et al., 2020).

A wrong query can return the gold rows on one database by chance; it rarely does on several databases
built to tell queries apart. Each variant is the original database with, in this order (``build.STEPS``):
rows sampled parents first (so foreign keys still hold; a delete pass for self-references and cycles),
rows duplicated, NULLs injected in nullable columns, boundary values written for the literals the gold
SQL compares against, rows shuffled, views re-created.

    variant_set = ensure_variants(db_path, expected_sqls, count=3, seed=0)   # cache.py: built once, by fingerprint
    variant_set.paths                                                       # variant-0.duckdb, variant-1.duckdb, ...

``ensure_variants`` reads the source's shape (``schema``), takes the boundary literals of the gold SQL
(``literals.boundary_literals``) and builds each missing variant (``build.build_variant``).

Modules: ``schema`` (tables, columns, keys of the source), ``literals`` (the gold's comparison literals and
their boundary values), ``steps`` (one function per transformation), ``build`` (one variant file),
``cache`` (where variants live under the storage root, and their fingerprint).
"""

from nl2sql_pipeline.variants.cache import VariantSet, ensure_variants, variants_fingerprint
from nl2sql_pipeline.variants.literals import BoundaryLiteral, boundary_literals

__all__ = ["BoundaryLiteral", "VariantSet", "boundary_literals", "ensure_variants", "variants_fingerprint"]
