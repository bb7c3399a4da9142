"""Transition alias: the report models live in :mod:`magpie_core.reports`.

Kept only while ``magpie_core/trace/kernel_names.py`` (moving to ``magpie_trace`` on another branch) imports
``ParsedKernelName`` from here; delete this module once it imports :mod:`magpie_core.reports`.
"""

from magpie_core.reports import Model, ParsedKernelName

__all__ = ["Model", "ParsedKernelName"]
