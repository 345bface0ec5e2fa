"""SQL texts as the harness reads them: one parse per text, the features a query exhibits, identifier quoting."""
