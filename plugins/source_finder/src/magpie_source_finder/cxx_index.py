"""Definitions in C, C++, CUDA and HIP files: ``__global__`` kernels and class templates, with their scope.

One pass over the braces of a cleaned copy of the file (comments, strings and the inactive branches of
``#if``/``#else`` removed, line numbers kept): ``namespace a {``, ``namespace a::b {``, ``namespace {``,
``struct``/``class`` bodies are scopes; function bodies are skipped whole (their spans are kept, so the
host function that launches a kernel can be found). A ``template <...>`` before a definition gives its
arity range (defaults lower the minimum, a parameter pack lifts the maximum).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

ANON = "(anonymous namespace)"
_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|R"(\w*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])\'', re.S)
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w+)(.*)$")
_TOKENS = re.compile(r"[{};]")
_NAMESPACE = re.compile(r"(?:^|[\s;}])(?:inline\s+)?namespace\s*([\w:\s]*?)\s*$")
_CLASS = re.compile(
    r"(?<![\w])(?:struct|class|union)\s+(?:(?:alignas\s*\([^)]*\)|__attribute__\s*\(\(.*?\)\)|"
    r"[A-Z_][A-Z0-9_]+)\s+)*([A-Za-z_]\w*)\s*(?:final\s*)?(?:<[^{;]*>\s*)?(?::[^{;]*)?$",
    re.S,
)
_NOISE_CALLS = re.compile(r"\b(?:__launch_bounds__|__attribute__|__declspec|alignas|__align__)\s*\(")
_CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "else", "do", "try"}
_IDENT_BEFORE_PAREN = re.compile(r"((?:[A-Za-z_~]\w*\s*::\s*)*[A-Za-z_~]\w*)\s*(?:<[^()]*>)?\s*$")


@dataclass
class CxxDef:
    name: str
    kind: str  # "global" (a __global__ function) | "type" (struct/class) | "function" (host/device function)
    line: int
    scope: tuple[str, ...]  # enclosing namespaces and classes, outermost first
    arity: tuple[int, int] | None  # (min, max) template parameters; max -1: a parameter pack; None: no template
    body: tuple[int, int] | None = None  # character span of a function body (launch search)


def _blank(m: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def _active_lines(text: str) -> str:
    """``text`` with directive lines blanked and only the first live branch of each ``#if`` kept
    (the branch after ``#if 0`` is skipped); line count unchanged."""
    out: list[str] = []
    stack: list[tuple[bool, bool]] = []  # (this branch live, some branch already taken)
    live = True
    cont = False
    for line in text.split("\n"):
        if cont:
            cont = line.rstrip().endswith("\\")
            out.append("")
            continue
        m = _DIRECTIVE.match(line)
        if m is None:
            out.append(line if live else "")
            continue
        cont = line.rstrip().endswith("\\")
        word, rest = m.group(1), m.group(2).strip()
        if word in ("if", "ifdef", "ifndef"):
            stack.append((live, False))
            take = not (word == "if" and rest in ("0", "false"))
            live = live and take
            stack[-1] = (stack[-1][0], take)
        elif word in ("elif", "else") and stack:
            parent, taken = stack[-1]
            take = not taken and not (word == "elif" and rest in ("0", "false"))
            live = parent and take
            stack[-1] = (parent, taken or take)
        elif word == "endif" and stack:
            live = stack.pop()[0]
        out.append("")
    return "\n".join(out)


def clean(text: str) -> str:
    """Comments, string and character literals blanked; inactive preprocessor branches dropped."""
    return _active_lines(_NOISE.sub(_blank, text))


def template_arity(head: str) -> tuple[tuple[int, int] | None, str]:
    """(arity of a leading ``template <...>`` in ``head``, the rest of ``head``)."""
    m = re.search(r"\btemplate\s*<", head)
    if m is None:
        return None, head
    depth, i = 1, m.end()
    while i < len(head) and depth:
        c = head[i]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(":
            j = head.find(")", i)
            i = j if j > 0 else i
        i += 1
    params = head[m.end() : i - 1]
    rest = head[i:]
    if not params.strip():
        return (0, 0), rest  # template <> : an explicit specialisation
    parts, depth, cur = [], 0, ""
    for c in params:
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    pack = any("..." in p for p in parts)
    defaults = sum(1 for p in parts if "=" in p)
    count = len(parts)
    return (count - defaults - (1 if pack else 0), -1 if pack else count), rest


def _strip_paren_calls(head: str) -> str:
    """``head`` without ``__launch_bounds__(...)``, ``__attribute__((...))`` and the like."""
    while True:
        m = _NOISE_CALLS.search(head)
        if m is None:
            return head
        depth, i = 1, m.end()
        while i < len(head) and depth:
            depth += {"(": 1, ")": -1}.get(head[i], 0)
            i += 1
        head = head[: m.start()] + " " + head[i:]


def _function_name(head: str) -> str | None:
    """The name of the function a definition head declares: the identifier before its parameter list
    (template brackets count only outside parentheses: ``enable_if_t<(w > 0)>`` is one bracket)."""
    angle = paren = 0
    for i, c in enumerate(head):
        if c == "(" and angle == 0 and paren == 0:
            m = _IDENT_BEFORE_PAREN.search(head[:i])
            if m is None:
                return None
            name = re.sub(r"\s+", "", m.group(1))
            last = name.split("::")[-1]
            return None if last in _CONTROL or last == "operator" else name
        if c == "(":
            paren += 1
        elif c == ")":
            paren = max(0, paren - 1)
        elif c == "<" and paren == 0 and i > 0 and (head[i - 1].isalnum() or head[i - 1] in "_ "):
            angle += 1
        elif c == ">" and paren == 0:
            angle = max(0, angle - 1)
    return None


@dataclass
class _Scope:
    kind: str  # namespace | class | skip
    names: tuple[str, ...]
    start: int = 0
    owner: CxxDef | None = None


def scan_cxx(text: str) -> list[CxxDef]:
    """Every ``__global__`` function, class/struct and function definition of a C++ source text."""
    src = clean(text)
    newlines = [m.start() for m in re.finditer("\n", src)]
    kernel_macros = _kernel_macros(text) if "#define" in text and "__global__" in text else {}
    defs: list[CxxDef] = []
    stack: list[_Scope] = []
    stmt = 0
    for m in _TOKENS.finditer(src):
        pos, tok = m.start(), m.group(0)
        top = stack[-1] if stack else None
        if top is not None and top.kind == "skip":
            if tok == "{":
                stack.append(_Scope("skip", ()))
            elif tok == "}":
                done = stack.pop()
                if done.owner is not None:
                    done.owner.body = (done.start, pos)
                stmt = pos + 1
            continue
        if tok == ";":
            stmt = pos + 1
        elif tok == "}":
            if stack:
                stack.pop()
            stmt = pos + 1
        else:
            macro = _macro_kernel(src[stmt:pos], kernel_macros)
            if macro is not None:
                macro.scope = _scope_names(stack)
                macro.line = bisect.bisect_left(newlines, stmt + len(src[stmt:pos]) - len(src[stmt:pos].lstrip())) + 1
                defs.append(macro)
                stack.append(_Scope("skip", (), start=pos, owner=macro))
            else:
                stack.append(_open(src, stmt, pos, stack, defs, newlines))
            stmt = pos + 1
    return defs


def _kernel_macros(text: str) -> dict[str, tuple[list[str], str]]:
    """Function-like macros that define a ``__global__`` kernel (``DEFINE_FLASH_FORWARD_KERNEL(name, ...)``):
    name -> (parameters, body)."""
    out = {}
    for name, body in macros(text).items():
        head = re.match(r"\(([^)]*)\)", body)
        if "__global__" in body and head is not None:
            params = [p.strip() for p in head.group(1).split(",")]
            out[name] = (params, body[head.end() :].replace("\\\n", "\n"))
    return out


def _macro_kernel(head: str, kernel_macros: dict[str, tuple[list[str], str]]) -> CxxDef | None:
    """The kernel a ``MACRO(name, ...) {`` statement defines, with the arity of the macro's template."""
    m = re.match(r"\s*(\w+)\s*\(", head)
    if m is None or m.group(1) not in kernel_macros:
        return None
    params, body = kernel_macros[m.group(1)]
    end = head.rfind(")")
    args = [a.strip() for a in _split_commas(head[m.end() : end])]
    named = [p for p in params if p != "..."]
    values = dict(zip(named, args, strict=False))
    if "..." in params:
        values["__VA_ARGS__"] = ", ".join(args[len(named) :])
    text = re.sub(r"\b(" + "|".join(re.escape(k) for k in values) + r")\b", lambda x: values[x.group(1)], body)
    arity, rest = template_arity(text)
    fname = _function_name(_strip_paren_calls(rest))
    if fname is None:
        return None
    return CxxDef(fname.split("::")[-1], "global", 0, (), arity)


def _split_commas(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for c in text:
        depth += {"(": 1, "<": 1, ")": -1, ">": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    return [*parts, cur]


def _scope_names(stack: list[_Scope]) -> tuple[str, ...]:
    return tuple(n for s in stack if s.kind in ("namespace", "class") for n in s.names)


def _open(src: str, stmt: int, pos: int, stack: list[_Scope], defs: list[CxxDef], newlines: list[int]) -> _Scope:
    """The scope a ``{`` at ``pos`` opens, given the statement since ``stmt``; records definitions."""
    head = src[stmt:pos]
    ns = _NAMESPACE.search(head)
    if ns is not None and "(" not in head:
        names = tuple(n.strip() for n in ns.group(1).split("::") if n.strip()) or (ANON,)
        return _Scope("namespace", names)
    if re.search(r"\bextern\s*$", head):
        return _Scope("namespace", ())  # extern "C" { (the string was blanked)
    arity, rest = template_arity(head)
    line = bisect.bisect_left(newlines, stmt + len(head) - len(head.lstrip())) + 1
    cls = _CLASS.search(rest)
    if cls is not None and "(" not in rest.split(cls.group(1))[0] and not re.search(r"\benum\b", rest):
        name = cls.group(1)
        first = rest.find(name)
        line = bisect.bisect_left(newlines, stmt + (len(head) - len(rest)) + first) + 1
        defs.append(CxxDef(name, "type", line, _scope_names(stack), arity))
        return _Scope("class", (name,))
    cleaned = _strip_paren_calls(rest)
    fname = _function_name(cleaned) if "(" in cleaned and "=" not in cleaned.split("(")[0] else None
    if fname is None:
        return _Scope("skip", ())
    parts = fname.split("::")
    idx = head.rfind(parts[-1] + "(") if parts[-1] + "(" in head else head.rfind(parts[-1])
    line = bisect.bisect_left(newlines, stmt + max(idx, 0)) + 1
    kind = "global" if re.search(r"\b__global__\b", rest) else "function"
    d = CxxDef(parts[-1], kind, line, _scope_names(stack) + tuple(parts[:-1]), arity)
    defs.append(d)
    return _Scope("skip", (), start=pos, owner=d)


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)((?:[^\n]*\\\n)*[^\n]*)", re.M)


def macros(text: str) -> dict[str, str]:
    """``#define`` names and bodies (continuation lines joined) of a source text, comments removed."""
    return {m.group(1): m.group(2) for m in _DEFINE.finditer(_NOISE.sub(_blank, text))}


def launchers(text: str, defs: list[CxxDef], kernel: str) -> list[str]:
    """Names of the functions in this file whose bodies launch ``kernel``: they name it, or a macro that
    (through other macros) expands to it."""
    names = {kernel}
    defined = macros(text)
    grew = True
    while grew:
        grew = False
        for macro, body in defined.items():
            if macro not in names and any(re.search(r"\b" + re.escape(n) + r"\b", body) for n in names):
                names.add(macro)
                grew = True
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")
    src = clean(text)
    return [
        d.name
        for d in defs
        if d.kind != "type" and d.body and d.name != kernel and pattern.search(src, d.body[0], d.body[1])
    ]
