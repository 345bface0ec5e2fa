"""Your own NL2SQL system as a registry entry: ``kind: http | python | command`` beside the models.

    spec.py            SystemConfig: the system part of a ModelSpec (target, headers, options, cache)
    registry_entry.py  a models.yml entry of a system kind, checked by the one config checker
    contract.py        the versioned request/response contract (``nl2sql-system/1``), validated
    http.py            POST the request to a URL (HTTP status -> the failure taxonomy)
    python_callable.py ``package.module:callable``, sync or async
    command.py         a subprocess speaking JSON lines, started once per run and restarted if it dies
    transport.py       kind -> transport; one timed call -> ModelCall (the cached part)
    generate.py        the loop over cases, samples, candidates and follow-up turns

A system goes through the same dispatch (limiter, retries, classification, run stop) and the same
generation cache as a model. This package's ``__init__`` imports nothing (the registry imports ``spec``).
"""
