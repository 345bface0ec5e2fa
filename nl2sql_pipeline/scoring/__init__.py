"""Run-level scores from the verdicts: the declared metrics, the run scores, the causes of misses, the statistics."""
