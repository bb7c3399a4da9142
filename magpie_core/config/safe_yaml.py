"""Reading config YAML that may be hostile: bounded, typed, and every refusal located.

A config file comes from a user, a generator or an AI agent, so reading it must end quickly and say
what is wrong instead of raising from deep inside the YAML library:

* bytes first: a file larger than :data:`MAX_BYTES`, a UTF-16/UTF-32 byte-order mark, a NUL byte or
  anything that is not UTF-8 is refused with the byte offset (and line) where it starts;
* nesting deeper than :data:`MAX_DEPTH` is refused while composing (the YAML library composes
  recursively: 10,000 levels would end in a ``RecursionError``);
* aliases are expanded into plain data by the caller, which counts every value it builds against
  :data:`MAX_NODES` (a "billion laughs" file of nested aliases would otherwise never finish);
* only the YAML core tags are accepted: ``!!python/...`` and any custom tag are refused, and so is
  ``!!binary`` (no config field holds bytes); a scalar whose explicit ``!!int``/``!!float``/... tag
  does not fit its text is refused with its line instead of a ``ValueError``."""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "YamlRefusal", "compose_text", "decode_config_bytes"]

#: largest config file read (configs are a few KiB; a dataset belongs in its own file)
MAX_BYTES = 16 << 20
#: deepest nesting of mappings and sequences (magpie's configs nest fewer than 10 levels)
MAX_DEPTH = 64
#: most values one file may expand to, aliases counted at every use
MAX_NODES = 200_000

_CORE = "tag:yaml.org,2002:"
#: tags a config may carry (implicit or written out): the YAML core schema, less ``binary``
SCALAR_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "timestamp"))
MAPPING_TAGS = frozenset({_CORE + "map"})
SEQUENCE_TAGS = frozenset({_CORE + "seq"})
#: the tag of a ``<<`` merge key (its value's mappings are merged into the mapping that holds it)
MERGE_TAG = _CORE + "merge"

_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


class YamlRefusal(ValueError):
    """Why a config text is refused; ``line`` (1-based) when known, ``offset`` in bytes when known."""

    def __init__(self, problem: str, line: int | None = None, offset: int | None = None) -> None:
        self.problem = problem
        self.line = line
        self.offset = offset
        super().__init__(problem)


def _line_of(raw: bytes, offset: int) -> int:
    return raw.count(b"\n", 0, offset) + 1


def decode_config_bytes(raw: bytes) -> str:
    """The text of a config file, or :class:`YamlRefusal` naming the byte offset where it is not UTF-8 text."""
    if len(raw) > MAX_BYTES:
        raise YamlRefusal(f"file is {len(raw):,} bytes; a config may be at most {MAX_BYTES:,} bytes")
    for bom, name in _BOMS:
        if raw.startswith(bom):
            raise YamlRefusal(f"{name} text (byte-order mark at byte 0): save the file as UTF-8", 1, 0)
    nul = raw.find(b"\x00")
    if nul >= 0:
        line = _line_of(raw, nul)
        raise YamlRefusal(f"NUL byte at byte {nul} (line {line}): not a text file", line, nul)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = _line_of(raw, exc.start)
        bad = raw[exc.start : exc.start + 4].hex(" ")
        raise YamlRefusal(
            f"not UTF-8 text: byte {exc.start} (line {line}) starts an invalid sequence ({bad})", line, exc.start
        ) from None
    return text.removeprefix("\ufeff")


class _BoundedLoader(yaml.SafeLoader):
    """A SafeLoader whose composer refuses nesting deeper than :data:`MAX_DEPTH`."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise YamlRefusal(f"nested more than {MAX_DEPTH} levels deep", mark.line + 1)
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            self._depth -= 1


def compose_text(text: str) -> yaml.Node | None:
    """The node graph of ``text`` (one document), or :class:`YamlRefusal` / ``yaml.YAMLError``."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_node()  # type: ignore[no-any-return]
    finally:
        loader.dispose()


def check_tag(node: yaml.Node) -> None:
    """Refuse a node whose tag is not one a config may carry."""
    tag = node.tag or ""
    line = node.start_mark.line + 1
    allowed = (
        MAPPING_TAGS
        if isinstance(node, yaml.MappingNode)
        else SEQUENCE_TAGS
        if isinstance(node, yaml.SequenceNode)
        else SCALAR_TAGS
    )
    if tag in allowed:
        return
    if tag.startswith(_CORE + "python/"):
        raise YamlRefusal(f"Python tags are not allowed in config files (!!{tag[len(_CORE) :]})", line)
    shown = "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag
    raise YamlRefusal(f"tag {shown} is not allowed here (plain YAML values only)", line)


def construct_scalar(node: yaml.ScalarNode) -> Any:
    """The value of a scalar node; an explicit tag its text does not fit is a :class:`YamlRefusal`."""
    check_tag(node)
    try:
        return yaml.constructor.SafeConstructor().construct_object(node)
    except (ValueError, TypeError, OverflowError, yaml.YAMLError) as exc:
        tag = node.tag[len(_CORE) :] if node.tag.startswith(_CORE) else node.tag
        raise YamlRefusal(f"{node.value!r} is not a valid !!{tag} ({exc})", node.start_mark.line + 1) from None


def reader_refusal(text: str, exc: yaml.reader.ReaderError) -> YamlRefusal:
    """A located refusal for a character YAML does not allow (the library gives a character index)."""
    pos = max(0, min(int(exc.position), len(text)))
    offset = len(text[:pos].encode("utf-8", "surrogatepass"))
    line = text.count("\n", 0, pos) + 1
    char = exc.character if isinstance(exc.character, str) else chr(exc.character)
    return YamlRefusal(
        f"control character {char!r} at byte {offset} (line {line}) is not allowed in YAML", line, offset
    )


def read_config_text(path: Path) -> str:
    """Read and decode ``path`` (OSError and :class:`YamlRefusal` propagate)."""
    with path.open("rb") as f:
        raw = f.read(MAX_BYTES + 1)
    return decode_config_bytes(raw)
