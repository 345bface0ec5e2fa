"""The comparator's version and the names its configuration accepts, apart from the comparison code: run
identities, stored-run checks and the CLI's argument parser read them without importing the comparator."""

COMPARATOR_VERSION = "2.2.0"
"""Bump whenever a rule changes what matches: it goes into every verdict and baseline."""

COLUMN_ORDERS: tuple[str, ...] = ("by_name_when_sets_match", "by_name", "positional")
