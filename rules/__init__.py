"""Rules from the papers: one rule per file, each citing the insights it encodes."""
