"""Gold quality: strict validation of gold files, their databases, and the preflight with its triage of weak expected queries."""
