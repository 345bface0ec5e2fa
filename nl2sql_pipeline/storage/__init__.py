"""The storage layer: where stored assets and markers live under the storage root, and the questions asked of them.

- ``layout``: the one place that knows the layout (a Parquet file per asset partition, one file per run
  beside it, the partition's *latest* file, the prepared-gold markers);
- ``parquet``: reading and writing those files, on a local folder or an fsspec URL alike;
- ``prepared``: which gold versions are prepared (and still on disk), their preflight's triage, their
  database variants;
- ``quarantine``: the cases a gold version's preflight quarantined (left out of every run on it).

The face imports nothing, so asking a cheap question (is this gold version prepared?) never loads pandas.
"""
