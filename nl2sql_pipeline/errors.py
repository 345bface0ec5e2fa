"""Typed exceptions of the core library. Every error says what, where and how to fix it."""

from __future__ import annotations


class Nl2SqlError(Exception):
    """Base class of every error raised on purpose by nl2sql-eval."""


class ConfigError(Nl2SqlError):
    """A configuration file (models.yml, a policy, the semantic model, ...) is invalid."""


class CaseValidationError(Nl2SqlError):
    """One or more problems in a gold-set file; ``problems`` holds one line per problem.

    Each problem line reads ``<file>:<line>: <what is wrong> (<how to fix>)``.
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class DatabaseNotFoundError(Nl2SqlError):
    """A case names a database that has not been built."""


class GenerationError(Nl2SqlError):
    """Candidate generation failed in a way that is not a per-case outcome."""
