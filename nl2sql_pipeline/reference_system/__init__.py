"""The reference NL2SQL system: the template a team copies to put its own pipeline under evaluation.

    service.py      answer(request) -> response: the project's prompt, a model through litellm (an offline
                    one by default), the SQL run in the sandbox for the rows and an answer stating them
    http_server.py  the same as an HTTP service:   python -m nl2sql_pipeline.reference_system.http_server --port 8765
    command.py      the same as a JSON-lines process: python -m nl2sql_pipeline.reference_system.command

Registered in ``data/models.yml`` as ``reference-python``, ``reference-http`` and ``reference-command``
(``kind: python | http | command``), each with ``gold-echo`` behind it; ``options: {model: sql-mutant}``
puts another registry model behind it.
"""
