"""Exit codes of the ``nl2sql-eval`` command line (one place; every command returns one of these)."""

EXIT_OK = 0
EXIT_GATE_FAILED = 1  # a gate failed, a query was refused, results differ
EXIT_BAD_INPUT = 2  # an invalid file, an unknown model or gold set, bad arguments
# a model whose key or server is missing was skipped, a database not built; a storage root that cannot be
# created or written (read-only, a file in the way), a stored file that cannot be read back (cut short, not Parquet)
EXIT_ENVIRONMENT = 3
EXIT_RUN_FAILED = 4  # an asset failed to materialize, or the gold preflight failed
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT): the command stopped; what it had not finished is not recorded
