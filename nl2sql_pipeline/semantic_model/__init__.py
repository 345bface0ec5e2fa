"""The semantic model: what every table and column means, how tables join, and the business metrics.

- :mod:`.model`: the typed model (tables, columns, relationships, join paths, dimensions, metrics);
- :mod:`.loader`: ``data/semantic_model.yml`` read strictly and checked (:func:`load_semantic_model`);
- :mod:`.prompt`: the model in prompts (:func:`render_for_prompt`, :func:`database_ddl_with_descriptions`).

A model's :attr:`SemanticModel.content_hash` is part of a run's identity.
"""

from nl2sql_pipeline.semantic_model.loader import default_semantic_model_path, load_semantic_model
from nl2sql_pipeline.semantic_model.model import (
    CARDINALITIES,
    DEFAULT_FILE_NAME,
    SUPPORTED_VERSIONS,
    Column,
    Dimension,
    JoinPath,
    Metric,
    Relationship,
    SemanticModel,
    SemanticModelError,
    Table,
    UnknownModelItemError,
)
from nl2sql_pipeline.semantic_model.prompt import database_ddl_with_descriptions, render_for_prompt

__all__ = [
    "CARDINALITIES",
    "DEFAULT_FILE_NAME",
    "SUPPORTED_VERSIONS",
    "Column",
    "Dimension",
    "JoinPath",
    "Metric",
    "Relationship",
    "SemanticModel",
    "SemanticModelError",
    "Table",
    "UnknownModelItemError",
    "database_ddl_with_descriptions",
    "default_semantic_model_path",
    "load_semantic_model",
    "render_for_prompt",
]
