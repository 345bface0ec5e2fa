"""Judges: verdicts on answers and SQL that go beyond executing and comparing rows.

A judge is registered in ``data/judges.yml`` like a model in ``models.yml`` (``judges.registry``). An LLM
judge (``kind: litellm``) is called through ``judges.client`` with the generation stack's limiter, in-flight
slots, retries, failure classes and a cache of its own; ``judge-oracle`` (``kind: offline``,
``judges.oracle``) decides deterministically from gold rows and values. Each role has its own module:
``answer`` (``judges.answer``), ``sql_equivalence`` and ``diagnosis``.
"""
