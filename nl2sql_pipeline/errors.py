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


class StorageError(Nl2SqlError):
    """The storage root, or a file stored under it, cannot be used (an environment problem, not bad input)."""


class StoredFileError(StorageError):
    """A stored file cannot be read back (cut short, not Parquet, not the table it should hold).

    ``path`` is the file, ``partition`` says whose it is (``case_verdicts of gold set 'g', model 'm'``),
    ``cause`` is what the reader said, ``fix`` how to get it back.
    """

    def __init__(self, path: object, partition: str, cause: str, fix: str = ""):
        self.path = str(path)
        self.partition = partition
        self.cause = cause
        self.fix = fix
        tail = f"; {fix}" if fix else ""
        super().__init__(f"stored file {self.path} ({partition}) is unreadable: {cause}{tail}")


class StorageRootError(StorageError):
    """The storage root (or the Dagster home, ``what``) cannot be created or written."""

    def __init__(self, root: object, cause: str, fix: str = "", what: str = "storage root"):
        self.root = str(root)
        self.cause = cause
        tail = f"; {fix}" if fix else ""
        super().__init__(f"{what} {self.root} is unusable: {cause}{tail}")
