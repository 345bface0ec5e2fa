"""The file formats ``exports`` writes (apart, so that the CLI's argument parser names them without
importing pandas)."""

FORMATS: tuple[str, ...] = ("parquet", "csv", "json")
