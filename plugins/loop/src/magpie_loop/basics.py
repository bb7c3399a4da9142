"""The loop's step names and its error: what the ``magpie loop`` command line needs at start-up, without the
record's models (every ``magpie`` command registers ``loop``; :mod:`magpie_loop.state` is imported when a
loop command runs)."""

from __future__ import annotations

__all__ = ["STEPS", "LoopError"]

STEPS = ("baseline", "profile", "analysis", "kernel", "compare", "final")


class LoopError(ValueError):
    """A step that cannot be recorded: the message names the file or field."""
