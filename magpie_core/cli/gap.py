"""Transition shim, to delete: ``magpie gap`` is the ``magpie-gap-analysis`` plugin's command now.

``magpie_core/cli/__init__.py`` still imports this module and ``expand_multi_value_options`` from it;
once it imports ``expand_multi_value_options`` from :mod:`magpie_core.cli.argv` instead, remove this file.
"""

from magpie_core.cli.argv import expand_multi_value_options

__all__ = ["expand_multi_value_options"]
