"""Tuning reports: best config with reasons, summary.json, report.md and report.html."""
