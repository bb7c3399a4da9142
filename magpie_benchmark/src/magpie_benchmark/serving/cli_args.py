"""Engine command-line words: AMD Magpie's ``EXTRA_*_ARGS`` split its way, and no flag given twice.

AMD Magpie's launch scripts expand ``$EXTRA_VLLM_ARGS`` (``$EXTRA_SGLANG_ARGS``, ``$EXTRA_ATOM_ARGS``...)
unquoted, so bash splits the value on IFS (space, tab, newline) and removes no quotes: a JSON value such
as ``--compilation-config {"mode":3}`` reaches the engine with its quotes. ``shlex.split`` would strip
them (``{mode:3}``) and the engine would refuse it. Their newer scripts also drop carriage returns and
turn pathname expansion off (``magpie_split_extra_vllm_args.sh``); :func:`split_extra_args` does both.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

log = logging.getLogger("magpie.serving")

#: bash's default IFS: the only characters an unquoted expansion is split on
_IFS = re.compile(r"[ \t\n]+")
#: a word that names a flag (``--dtype``, ``-tp``, ``--dtype=bf16``), not a negative number
_FLAG = re.compile(r"^--?[A-Za-z]")


def split_extra_args(raw: str | Sequence[object] | None) -> list[str]:
    """The words bash makes of an unquoted ``$EXTRA_*_ARGS``; a YAML list is taken word for word."""
    if raw is None:
        return []
    if not isinstance(raw, str):
        return [str(word) for word in raw]
    text = raw.replace("\r", "").strip(" \t\n")
    return _IFS.split(text) if text else []


def flag_name(word: str) -> str | None:
    """The flag a word sets, spelled with dashes (vLLM reads ``--max_model_len`` as ``--max-model-len``)."""
    if not _FLAG.match(word):
        return None
    return word.split("=", 1)[0].replace("_", "-")


def drop_overridden(options: Sequence[Sequence[str]], extra: Sequence[str], source: str) -> list[str]:
    """``options`` (each a flag and its value, or a lone switch) flattened, less the flags ``extra`` sets.

    An engine's argparse keeps the last value of a repeated flag, but a command line that says
    ``--dtype`` twice hides which one was meant: the config's extra arguments win, magpie's is dropped,
    and a log line names what was dropped.
    """
    overridden = {name for name in map(flag_name, extra) if name}
    kept: list[str] = []
    dropped: list[str] = []
    for option in options:
        if flag_name(option[0]) in overridden:
            dropped.append(" ".join(option))
        else:
            kept += option
    if dropped:
        log.info("%s sets %s itself: magpie's %s dropped from the command line", source, _names(dropped), dropped)
    return kept


def remove_flags(extra: Sequence[str], names: set[str], source: str) -> list[str]:
    """``extra`` less the flags in ``names`` (with their values): the ones magpie must own, such as the host
    and port it waits on and connects to. A warning names what was removed and why."""
    kept: list[str] = []
    removed: list[str] = []
    words = list(extra)
    i = 0
    while i < len(words):
        name = flag_name(words[i])
        if name not in names:
            kept.append(words[i])
            i += 1
            continue
        takes_value = "=" not in words[i] and i + 1 < len(words) and flag_name(words[i + 1]) is None
        removed.append(" ".join(words[i : i + 1 + takes_value]))
        i += 1 + takes_value
    if removed:
        log.warning(
            "%s sets %s: magpie starts the server on benchmark.host (default 127.0.0.1) and a port it picks, and "
            "connects there, so %s is ignored (set benchmark.host to bind elsewhere)",
            source,
            _names(removed),
            removed,
        )
    return kept


def _names(dropped: list[str]) -> str:
    return ", ".join(option.split(" ", 1)[0] for option in dropped)
