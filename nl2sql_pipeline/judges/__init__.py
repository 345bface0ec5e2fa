"""Judges: LLM and offline judges of answers, of SQL equivalence and of why a case went wrong."""
