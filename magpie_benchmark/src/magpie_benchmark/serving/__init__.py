"""Engine-neutral server lifecycle for ``magpie benchmark``: processes, containers, GPU choice."""
