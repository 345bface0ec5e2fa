"""The built-in multi-domain gold sets: templates, vocabulary, the deterministic generator and its checks."""
