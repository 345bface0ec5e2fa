"""The ``nl2sql-eval`` command line: the outer shell over the core library and the Dagster definitions.

``nl2sql_cli.main`` parses arguments and dispatches to one module per sub-command under
``nl2sql_cli.commands``; ``nl2sql_cli.runner`` materializes the asset graph in-process for ``run``.
Nothing in the core (``nl2sql_pipeline``) or the Dagster definitions (``assets``, ``resources``) imports it.
"""
