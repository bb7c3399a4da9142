"""magpie's quality gate: lm-evaluation-harness against the served model after a benchmark's load."""
