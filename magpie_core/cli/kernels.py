"""``magpie analyze`` and ``magpie compare`` (filled in by the kernel pipeline)."""
