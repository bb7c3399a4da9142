"""Command-line argument handling shared by every command: AMD Magpie style list options.

AMD Magpie's argparse options take several values after one flag (``nargs="*"``); typer takes one value
per flag. :func:`expand_multi_value_options` rewrites the first spelling into the second before typer
parses, and :func:`split_list` also accepts comma lists."""

from __future__ import annotations

__all__ = ["MULTI_VALUE_OPTIONS", "expand_multi_value_options", "split_list"]

#: options that take several values, AMD Magpie (argparse nargs="*") style: the ``gap_analysis:`` block's lists
MULTI_VALUE_OPTIONS = ("--categories", "--ignore-categories", "--kernel-source-repos")


def expand_multi_value_options(argv: list[str], names: tuple[str, ...] = MULTI_VALUE_OPTIONS) -> list[str]:
    """Rewrite ``--categories a b`` into ``--categories a --categories b`` (values stop at the next ``-x``).

    ``--categories=a`` and a value that looks like an option stay as they are; everything after ``--`` is left alone.
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        out.append(arg)
        i += 1
        if arg in names:
            first = True
            while i < len(argv) and not argv[i].startswith("-"):
                if not first:
                    out.append(arg)
                out.append(argv[i])
                first = False
                i += 1
    return out


def split_list(values: list[str] | None) -> list[str] | None:
    """Values of a repeated list option, each of which may be a comma list, as one list (None: not given)."""
    return None if values is None else [part for value in values for part in value.split(",") if part]
