"""Structure of demangled C++ function names: return type, qualified name, template and call arguments.

A demangled kernel name such as::

    std::enable_if<(((8)>(0)))&&lib::_typeConvert<c10::BFloat16>::exists, void>::type
    lib::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, float, int, int)

is read with bracket matching, not with one regular expression: the return type (which may itself hold
``::``, templates and comparisons), the qualified name split at top-level ``::`` (namespaces, classes,
``(anonymous namespace)``, ``{lambda(int)#1}``, function scopes such as ``f(int)::``), the template
arguments of each component (function pointers, enum casts ``(ns::E)0``, nested templates) and the call
parameters. :func:`parse_symbol` also takes a mangled symbol (``_Z...``, optionally ``.kd``): it is
demangled with :mod:`magpie_trace.demangle` first; when no library can read it, the leading names of
the mangled nested name are used (``exact=False``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from magpie_trace.demangle import demangle, is_mangled, leading_names

__all__ = ["CxxComponent", "CxxName", "parse_cxx_name", "parse_symbol", "split_top_level"]

_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}
#: longer texts are not kernel names (the longest real ones, CK and ATen lambdas, are a few thousand characters)
MAX_NAME_CHARS = 65536
_IDENT_CHARS = re.compile(r"[A-Za-z0-9_$'~.]")
_QUALIFIERS = re.compile(r"^(?:\s*(?:const|volatile|&&|&|noexcept|\[clone [^\]]*\]))*\s*$")
_EXPR_BEFORE = set("<(,&|!=+-*/%^~?:")
_OPERATOR = re.compile(
    r"operator(?:\(\)|\[\]|<<=|>>=|<=>|->\*|->|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|[-+*/%^&|~!=<>,]=?|"
    r"\s+new(?:\[\])?|\s+delete(?:\[\])?|\s+[\w:<>* ]+?(?=\())"
)


@dataclass(frozen=True)
class CxxComponent:
    """One ``::``-separated part of a qualified name."""

    name: str  # identifier, "(anonymous namespace)", "{lambda(int)#1}", "operator()"
    template_args: tuple[str, ...] | None = None  # None: not a template specialisation
    call_args: tuple[str, ...] | None = None  # a function scope: ``f(int)::{lambda()#1}``


@dataclass(frozen=True)
class CxxName:
    """A parsed demangled name; ``function`` is the last component, ``scope`` the ones before it."""

    text: str
    components: tuple[CxxComponent, ...]
    return_type: str | None = None
    params: tuple[str, ...] | None = None
    exact: bool = True  # False when read from a mangled name no library could demangle
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def function(self) -> str:
        return self.components[-1].name if self.components else ""

    @property
    def scope(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.components[:-1])

    @property
    def template_args(self) -> tuple[str, ...] | None:
        return self.components[-1].template_args if self.components else None

    @property
    def namespace(self) -> str:
        return "::".join(self.scope)


def _is_comparison(s: str, i: int) -> bool:
    """Whether ``>`` (or ``<``) at ``i`` compares two parenthesised expressions, as in ``(8)>(0)``."""
    if i == 0 or s[i - 1] != ")" or i + 1 >= len(s) or s[i + 1] not in "(=>":
        return False
    depth, j = 0, i - 1
    while j >= 0:  # back to the "(" opening the left operand
        if s[j] == ")":
            depth += 1
        elif s[j] == "(":
            depth -= 1
            if depth == 0:
                break
        j -= 1
    k = j - 1
    while k >= 0 and s[k] == " ":
        k -= 1
    if k >= 0 and s[k] == "&":  # "&&" joins two comparisons; a single "&" takes an address: &(f<T>(...))
        return k > 0 and s[k - 1] == "&"
    return k < 0 or s[k] in _EXPR_BEFORE


def _operator_end(s: str, i: int) -> int:
    """End of an ``operator...`` name starting at ``i`` (or ``i`` when there is none)."""
    m = _OPERATOR.match(s, i)
    return m.end() if m else i


#: the characters (and the word) that can change the bracket state; the scans below jump from one to the next
_GROUP_STOPS = re.compile(r"[()\[\]{}<>]|operator")
_OPENERS = re.compile(r"[(\[{<]|operator")


def group_end(s: str, i: int) -> int:
    """Index just past the bracket group opened at ``s[i]`` (the string's end when unbalanced)."""
    stack = [_OPEN[s[i]]]
    open_count = {")": 0, "]": 0, "}": 0, ">": 0}  # closers on the stack, so "is it open?" costs O(1)
    open_count[stack[0]] += 1
    n = len(s)
    j = i + 1
    search = _GROUP_STOPS.search
    while j < n and stack:
        m = search(s, j)
        if m is None:
            return n
        j = m.start()
        c = s[j]
        if c == "o":  # "operator"
            if j == 0 or not _IDENT_CHARS.match(s[j - 1]):
                end = _operator_end(s, j)
                if end > j + len("operator"):
                    j = end
                    continue
        elif c == "<":
            if j > 0 and _IDENT_CHARS.match(s[j - 1]) and s[j - 1] != "'":
                stack.append(">")  # also inside a parameter list: foo(std::array<char*, 2ul>)
                open_count[">"] += 1
        elif c in "([{":
            stack.append(_OPEN[c])
            open_count[_OPEN[c]] += 1
        elif c == ">":
            if stack[-1] == ">" and not _is_comparison(s, j):
                open_count[stack.pop()] -= 1
        elif open_count[c]:  # ")]}"
            while stack and stack[-1] != c:
                open_count[stack.pop()] -= 1  # an unmatched "<" was a comparison after all
            open_count[stack.pop()] -= 1
        j += 1
    return j


def _next_opener(s: str, i: int, n: int) -> tuple[int, int]:
    """(start, end) of the next bracket group (end: -1, not yet known) or ``operator`` name (its end) that
    starts at or after ``i``; (n, n) when there is none."""
    search = _OPENERS.search
    while True:
        m = search(s, i)
        if m is None:
            return n, n
        i = m.start()
        c = s[i]
        if c == "o":
            if i == 0 or not _IDENT_CHARS.match(s[i - 1]):
                end = _operator_end(s, i)
                if end > i + len("operator"):
                    return i, end
        elif c != "<" or (i > 0 and _IDENT_CHARS.match(s[i - 1])):
            return i, -1
        i += 1


def split_top_level(s: str, sep: str) -> list[str]:
    """``s`` split at ``sep`` where no bracket group is open."""
    parts, start, i, n = [], 0, 0, len(s)
    while i < n:
        at, end = _next_opener(s, i, n)
        k = s.find(sep, i, at)  # separators before the next group or operator name are top-level
        while k >= 0:
            parts.append(s[start:k])
            start = i = k + len(sep)
            k = s.find(sep, i, at)
        if at >= n:
            break
        i = end if end >= 0 else group_end(s, at)
    parts.append(s[start:])
    return parts


def _groups(s: str) -> list[tuple[int, int]]:
    """Top-level bracket groups of ``s`` as (start, end) spans."""
    spans, i, n = [], 0, len(s)
    while i < n:
        at, end = _next_opener(s, i, n)
        if at >= n:
            break
        if end < 0:
            end = group_end(s, at)
            spans.append((at, end))
        i = end
    return spans


def _args(inner: str) -> tuple[str, ...]:
    inner = inner.strip()
    if not inner:
        return ()
    return tuple(a.strip() for a in split_top_level(inner, ","))


def _component(text: str) -> CxxComponent:
    """``name``, ``name<args>``, ``name(args)`` (a function scope) or ``name<args>(args)``."""
    text = text.strip()
    if text.startswith(("(anonymous", "{", "'")) or text.startswith("operator"):
        base_end = len(text) if not text.startswith("operator") else _operator_end(text, 0)
        if text.startswith(("(", "{")):
            base_end = group_end(text, 0)
        name, rest = text[:base_end].strip(), text[base_end:]
    else:
        m = re.match(r"[^<(]*", text)
        name, rest = m.group(0).strip(), text[m.end() :]
    targs = cargs = None
    i = 0
    while i < len(rest):
        if rest[i] in "<(":
            end = group_end(rest, i)
            inner = rest[i + 1 : end - 1]
            if rest[i] == "<" and targs is None and cargs is None:
                targs = _args(inner)
            elif rest[i] == "(":
                cargs = _args(inner)
            i = end
            continue
        i += 1
    return CxxComponent(name=name, template_args=targs, call_args=cargs)


def _split_name(head: str) -> tuple[str | None, str]:
    """(return type, qualified name) of the text before the parameter list."""
    words = split_top_level(head.strip(), " ")
    words = [w for w in words if w]
    if not words:
        return None, ""
    # "unsigned int", "std::enable_if<...>::type": every top-level word but the last belongs to the return type
    name = words[-1]
    ret = " ".join(words[:-1]) or None
    return ret, name


def parse_cxx_name(text: str) -> CxxName | None:
    """The structure of a demangled C++ name; None when ``text`` is not one (empty, or no identifier)."""
    s = text.strip()
    if s.startswith("_Z") or not s or len(s) > MAX_NAME_CHARS:
        return None
    spans = _groups(s)
    params: tuple[str, ...] | None = None
    head = s
    if spans:
        start, end = spans[-1]
        if s[start] == "(" and _QUALIFIERS.match(s[end:]) and start > 0 and s[start - 1] not in " ,":
            params = _args(s[start + 1 : end - 1])
            head = s[:start]
    ret, qualified = _split_name(head)
    parts = [p for p in split_top_level(qualified, "::")]
    if not qualified or any(not p.strip() for p in parts):
        return None
    comps = tuple(_component(p) for p in parts)
    if not comps[-1].name or not re.match(r"[A-Za-z_~({'$o]", comps[-1].name):
        return None
    return CxxName(text=text, components=comps, return_type=ret, params=params)


def parse_symbol(name: str) -> CxxName | None:
    """:func:`parse_cxx_name` of a kernel symbol, demangling a mangled one first (``.kd`` ignored)."""
    base = name[:-3] if name.endswith(".kd") else name
    if not is_mangled(base):
        return parse_cxx_name(base)
    text = demangle(base)
    if text is not None:
        parsed = parse_cxx_name(text)
        if parsed is not None:
            return parsed
    parts = leading_names(base)
    if not parts:
        return None
    comps = tuple(CxxComponent(p) for p in parts)
    return CxxName(text=base, components=comps, exact=False, notes=("mangled name not demangled: leading names only",))


def find_component(parsed: CxxName, name: str, _depth: int = 0) -> tuple[tuple[str, ...], CxxComponent] | None:
    """(scope, component) of the first qualified name in ``parsed`` (its own name first, then its template
    arguments, depth first) whose last component is ``name``; lets a caller find ``ck_tile::Rmsnorm2dFwd<...>``
    inside ``ck_tile::kentry<1, ck_tile::Rmsnorm2dFwd<...>>``."""
    if parsed.function == name:
        return parsed.scope, parsed.components[-1]
    if _depth > 8:  # the op of a CK entry is one level down; hostile nesting stops here
        return None
    for comp in parsed.components:
        for arg in comp.template_args or ():
            inner = parse_cxx_name(arg)
            if inner is None:
                continue
            hit = find_component(inner, name, _depth + 1)
            if hit is not None:
                return hit
    return None
