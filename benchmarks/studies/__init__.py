"""One-off experiments: each measured a question once; its module docstring says which
docs/measurements.md entry it backs and the command that produced it."""
