"""From a kernel name to its definition, with a confidence that means something.

* ``exact``: the name, its scope (namespaces and enclosing classes, ``(anonymous namespace)`` included) and,
  for templates, the number of template arguments all match one definition; when copies of it live in
  several checkouts, the trace itself (the kernel's namespace, the launching Python frames or CPU op)
  picks one. A Triton kernel matches by name, or by the literal prefix of its custom ``repr=``.
* ``probable``: one best definition, with what could not be checked (template arity differs, the trace
  does not say which library, the name was reduced to a prefix).
* ``ambiguous``: several definitions fit equally; every one is listed with why.
* ``unresolved``: with the reason; definitions of the same name in another namespace are listed as
  candidates, never reported as the source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from magpie_trace.cxx_names import CxxName, find_component, parse_symbol

from magpie_source_finder.testcase_search import command, entries_for, find_test

if TYPE_CHECKING:  # finder calls resolve(): these are only the types of what it passes in
    from magpie_source_finder.finder import Checkout, Symbol

    Hit = tuple[Checkout, Symbol]

#: namespaces (first component) -> the checkouts that define them, most likely first
LIBRARY_OF_NAMESPACE = {
    "vllm": ("vllm",),
    "sgl_hip": ("sglang",),
    "sglang": ("sglang",),
    "sgl_kernel": ("sglang",),
    "aiter": ("aiter",),
    "ck_tile": ("composable_kernel", "rocm-libraries", "aiter"),
    "ck": ("composable_kernel", "rocm-libraries", "aiter"),
    "flashinfer": ("flashinfer",),
    "tensorrt_llm": ("flashinfer", "tensorrt-llm"),
    "moe": ("flashinfer", "tensorrt-llm"),
    "flash": ("flash-attention",),
    "at": ("pytorch",),
    "c10": ("pytorch",),
    "cutlass": ("cutlass",),
}
#: top-level Python packages in launching frames -> checkouts
LIBRARY_OF_PACKAGE = {
    "vllm": "vllm",
    "sglang": "sglang",
    "sgl_kernel": "sglang",
    "aiter": "aiter",
    "triton_kernels": "triton",
    "flashinfer": "flashinfer",
    "flash_attn": "flash-attention",
    "torch": "pytorch",
}
#: kernel families the parsers name after a project (weak evidence: often a name table, not the trace)
LIBRARY_OF_FAMILY = {
    "vllm": "vllm",
    "sglang": "sglang",
    "aiter": "aiter",
    "flashinfer": "flashinfer",
    "flash_attention": "flash-attention",
    "ck_tile": "composable_kernel",
    "ck": "composable_kernel",
    "aten": "pytorch",
    "tensorrt_llm": "flashinfer",
}
_IDENT = re.compile(r"[A-Za-z_]\w*")
_REF_DEF = re.compile(r"^def\s+((?:ref|reference|torch|naive|native)_\w+|\w+_(?:ref|reference|torch|naive))\s*\(", re.M)


@dataclass
class Query:
    """What to look for: a name, its scope (None: the name carries none) and template arity."""

    symbol: str
    kinds: tuple[str, ...]
    scope: tuple[str, ...] | None = None
    arity: int | None = None  # number of template arguments in the trace (None: not a template)
    arity_known: bool = True
    plain: bool = False  # a bare identifier (Triton, extern "C"): prefixes may be tried


@dataclass
class Graded:
    co: Checkout
    sym: Symbol
    grade: str  # exact | probable | foreign
    why: str


# -- what the trace says -------------------------------------------------------


def namespace_libraries(cx: CxxName | None) -> tuple[str, ...]:
    """The checkouts a kernel's own namespace belongs to (``vllm::`` -> vllm); empty when it names none."""
    return LIBRARY_OF_NAMESPACE.get(cx.scope[0], ()) if cx is not None and cx.scope else ()


def _hints(cx: CxxName | None, parsed: dict[str, Any], context: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(strong, weak) library hints. Strong: the kernel's own namespace. Weak: the packages of the launching
    Python frames, the CPU op's namespace, the engine, the parser's family — they say who launched the kernel,
    and an engine launches other libraries' kernels too (vLLM runs aiter's on ROCm)."""
    strong = list(namespace_libraries(cx))
    weak: list[str] = []
    for frame in context.get("python_frames") or []:
        weak.extend(LIBRARY_OF_PACKAGE[p] for p in re.split(r"[/\\.\s:(]", str(frame)) if p in LIBRARY_OF_PACKAGE)
    op = str(context.get("cpu_op") or "")
    if "::" in op and op.split("::")[0] in LIBRARY_OF_PACKAGE:
        weak.append(LIBRARY_OF_PACKAGE[op.split("::")[0]])
    if context.get("engine") in LIBRARY_OF_PACKAGE:
        weak.append(LIBRARY_OF_PACKAGE[context["engine"]])
    weak.extend(LIBRARY_OF_FAMILY[f] for f in (parsed.get("family"),) if f in LIBRARY_OF_FAMILY)
    if (parsed.get("config") or {}).get("library") == "triton_kernels":
        weak.append("triton")
    return strong, [w for w in dict.fromkeys(weak) if w not in strong]


def _frame_files(context: dict[str, Any]) -> list[str]:
    """File paths named by the launching Python frames (``vllm/attention/ops/x.py(12): f``)."""
    out = []
    for frame in context.get("python_frames") or []:
        m = re.search(r"([\w./\\-]+\.py)", str(frame))
        if m:
            out.append(m.group(1).replace("\\", "/"))
    return out


def build_query(name: str, parsed: dict[str, Any]) -> tuple[Query | None, CxxName | None]:
    """The lookup a kernel name asks for (None when it carries no source symbol)."""
    cx = parse_symbol(name)
    family = parsed.get("family") or ""
    is_cxx = cx is not None and (
        bool(cx.scope) or cx.template_args is not None or cx.params is not None or not cx.exact
    )
    if is_cxx and cx is not None:
        kinds: tuple[str, ...] = ("type", "global") if family in ("ck_tile", "ck") else ("global",)
        target = parsed.get("function") or cx.function
        hit = find_component(cx, target) if target != cx.function else None
        if hit is not None and kinds[0] == "type":
            scope, comp = hit
            return Query(comp.name, ("type",), scope, _arity(comp.template_args), cx.exact), cx
        if not _IDENT.fullmatch(cx.function):
            return None, cx
        return Query(cx.function, kinds, cx.scope, _arity(cx.template_args), cx.exact), cx
    base = name[:-3] if name.endswith(".kd") else name
    if not _IDENT.fullmatch(base) or base.startswith("_Z"):
        return None, cx
    return Query(base, ("triton_jit", "global"), plain=True), cx


def _arity(args: tuple[str, ...] | None) -> int | None:
    return None if args is None else len(args)


# -- candidates ----------------------------------------------------------------


def _arity_fits(q: Query, sym: Symbol) -> tuple[bool, str]:
    if not q.arity_known:
        return False, "template arguments not checked (the mangled name could not be demangled)"
    if sym.arity is None:
        return (
            q.arity is None,
            "" if q.arity is None else f"the trace has {q.arity} template arguments, the definition is no template",
        )
    lo, hi = sym.arity
    n = q.arity
    if n is None:
        return (
            False,
            f"the definition is a template ({lo}..{'n' if hi < 0 else hi} parameters), the traced kernel is not",
        )
    if lo <= n and (hi < 0 or n <= hi):
        return True, ""
    want = f"{lo}" if lo == hi else f"{lo}..{'n' if hi < 0 else hi}"
    return False, f"template arity differs: the trace has {n} arguments, the definition takes {want}"


def _grade_cxx(q: Query, co: Checkout, sym: Symbol) -> Graded:
    scope = tuple(p for p in sym.namespace.split("::") if p) if sym.namespace else ()
    traced = "::".join(q.scope or ()) or "the global namespace"
    if scope != tuple(q.scope or ()):
        where = sym.namespace or "the global namespace"
        return Graded(co, sym, "foreign", f"defined in {where}, the trace names {traced}: a different kernel")
    fits, why = _arity_fits(q, sym)
    if fits:
        return Graded(co, sym, "exact", f"name, scope {traced} and template arity match")
    return Graded(co, sym, "probable", f"name and scope match; {why}")


def _lookup(q: Query, checkouts: list[Checkout]) -> list[Hit]:
    return [
        (co, s)
        for co in checkouts
        for s in co.symbols.get(q.symbol, [])
        if s.kind in q.kinds and (co.path / s.file).is_file()  # never a directory or a stale entry
    ]


def _prefix_hits(q: Query, checkouts: list[Checkout]) -> list[Graded]:
    """Triton kernels named by a custom ``repr=`` whose literal prefix (or, when the prefix is not literal, whose
    function name) starts the traced name at a ``_`` boundary. A kernel without a custom repr is launched under
    its own name, so a longer traced name is never one of its specialisations."""
    name = q.symbol
    out: list[Graded] = []
    for co in checkouts:
        for syms in co.symbols.values():
            for s in syms:
                if s.kind != "triton_jit" or not (co.path / s.file).is_file():
                    continue
                if s.repr_base and _starts(name, s.repr_base):
                    why = f"named by its repr= as {s.repr_base!r} + specialisation suffix"
                    out.append(Graded(co, s, "exact", why))
                elif s.custom_repr and not s.repr_base and _starts(name, s.name):
                    why = f"{s.name!r} (custom repr=, prefix not literal) starts the traced name"
                    out.append(Graded(co, s, "probable", why))
    best = max((len(g.sym.repr_base or g.sym.name) for g in out if g.grade == "exact"), default=0)
    if best:
        return [g for g in out if g.grade == "exact" and len(g.sym.repr_base or "") == best]
    longest = max((len(g.sym.name) for g in out), default=0)
    return [g for g in out if len(g.sym.name) == longest]


def _starts(name: str, prefix: str) -> bool:
    return name.startswith(prefix) and len(name) > len(prefix) and name[len(prefix)] == "_"


def candidates(q: Query, checkouts: list[Checkout]) -> list[Graded]:
    hits = _lookup(q, checkouts)
    if q.plain:
        graded = [Graded(co, s, "exact", "same name (Triton kernels carry no namespace)") for co, s in hits]
        return graded or _prefix_hits(q, checkouts)
    return [_grade_cxx(q, co, s) for co, s in hits]


def _prefer(graded: list[Graded], strong: list[str], weak: list[str], frames: list[str]) -> tuple[list[Graded], str]:
    """The candidates in the library the trace points to: (kept, how: "strong" / "weak" / "")."""
    by_file = [g for g in graded if any(f.endswith(g.sym.file) or g.sym.file.endswith(f) for f in frames)]
    if by_file:
        return by_file, "strong"
    for hints, how in ((strong, "strong"), (weak, "weak")):
        for lib in hints:
            kept = [g for g in graded if g.co.name == lib]
            if kept:
                return kept, how
    return graded, ""


def _disagrees(co: Checkout, hints: tuple[list[str], list[str]]) -> bool:
    """Whether the evidence names libraries and this (recognised) checkout is none of them."""
    named = hints[0] + hints[1]
    return bool(named) and _known(co) and co.name not in named


def _known(co: Checkout) -> bool:
    """Whether the checkout was recognised as a known project (an unrecognised folder is no other library)."""
    return co.url is not None


# -- rows ------------------------------------------------------------------------


def _display(co: Checkout, sym: Symbol) -> str:
    return f"{co.var}/{sym.file}"


def _url(co: Checkout, sym: Symbol) -> str:
    if co.url and co.commit:
        return f"{co.url}/blob/{co.commit}/{sym.file}#L{sym.line}"
    return ""


def _cand(g: Graded) -> dict[str, Any]:
    return {
        "file": _display(g.co, g.sym),
        "line": g.sym.line,
        "repo": g.co.name,
        "namespace": g.sym.namespace,
        "symbol": g.sym.name,
        "match": g.grade,
        "why": g.why,
    }


def _unresolved(parsed: dict[str, Any], reason: str, notes: str = "") -> dict[str, Any]:
    return {
        "kind": parsed.get("kind") or parsed.get("family") or "",
        "category": parsed.get("category") or "",
        "source_resolution": "unresolved",
        "source_error": reason,
        "notes": notes,
    }


def why_unresolvable(parsed: dict[str, Any], checkouts: list[Checkout], context: dict[str, Any]) -> str | None:
    """Why no checkout can hold this kernel's source (generated, prebuilt, closed...), or None."""
    kind, family = parsed.get("kind") or "", parsed.get("family") or ""
    if kind == "inductor":
        op = context.get("cpu_op") or ""
        ops = parsed.get("function") or ""
        made_by = f"generating op {op}" if op else f"fused ops '{ops}' (from the kernel name)"
        return (
            f"generated by TorchInductor at run time ({made_by}); its source is in the run's inductor "
            "cache (TORCHINDUCTOR_CACHE_DIR), not in a checkout"
        )
    if kind == "prebuilt_cubin":
        return (
            f"prebuilt {family} cubin: shipped as a binary (flashinfer/TensorRT-LLM download it at run time); "
            "no source in any checkout"
        )
    if kind == "tensile_gemm":
        return "Tensile/hipBLASLt solution generated from library logic files; no source symbol"
    if kind in ("library_gemm", "cudnn", "blit") or family in ("cublas", "cublaslt", "cudnn"):
        return f"closed-source or runtime library kernel ({family})"
    if family in ("nccl", "rccl"):
        return f"{family.upper()} collective kernel: generated inside the {family.upper()} library, not searched"
    if not checkouts:
        return "no source checkouts: pass --kernel-source-repos PATH... or --clone"
    if family == "aten" and not any(c.name == "pytorch" for c in checkouts):
        searched = ", ".join(c.name for c in checkouts)
        return f"ATen kernel: no pytorch checkout among the searched repos ({searched}); add $PYTORCH_DIR"
    return None


def _add_test(row: dict[str, Any], g: Graded) -> None:
    """The test that exercises the kernel (import/call search) and a command selecting it."""
    co, sym = g.co, g.sym
    entries = entries_for(co.path, co.py_files, sym.name, sym.file, sym.kind)
    hit = find_test(co.path, co.test_files, entries)
    if hit is None:
        names = ", ".join(e.name for e in entries)
        row["test_file"], row["test_cmd"] = "", ""
        row["notes"] = _join(
            row.get("notes"), f"no test found (searched {len(co.test_files)} test files for calls to {names})"
        )
        row["baseline_ref_kind"] = "none"
        return
    row["test_file"] = f"{co.var}/{hit.file}"
    row["test_cmd"] = f"cd {co.var} && {command(hit)}"
    if hit.via != sym.name:
        row["notes"] = _join(row.get("notes"), f"test calls {hit.via}, which launches {sym.name}")
    text = (co.path / hit.file).read_text(errors="replace")
    ref = _REF_DEF.search(text)
    if ref:
        row.update(
            baseline_ref_file=row["test_file"], baseline_ref_symbol=ref.group(1), baseline_ref_kind="inline_in_test"
        )
    else:
        row["baseline_ref_kind"] = "none"


def _join(a: str | None, b: str) -> str:
    return f"{a}; {b}" if a else b


def _resolved(parsed: dict[str, Any], g: Graded, resolution: str, others: list[Graded], note: str) -> dict[str, Any]:
    co, sym = g.co, g.sym
    row: dict[str, Any] = {
        "kind": parsed.get("kind") or parsed.get("family") or "",
        "category": parsed.get("category") or "",
        "source_repo": co.name,
        "source_file": _display(co, sym),
        "line": sym.line,
        "symbol": sym.name,
        "namespace": sym.namespace,
        "upstream_url": _url(co, sym),
        "source_resolution": resolution,
        "source_error": "",
        "notes": _join(g.why, note) if note else g.why,
    }
    if not co.commit:
        row["notes"] = _join(row["notes"], "checkout is not a git repository: upstream_url omitted")
    if others:
        row["candidates"] = [_cand(g)] + [_cand(o) for o in others]
    _add_test(row, g)
    return row


def _decide(
    parsed: dict[str, Any],
    graded: list[Graded],
    hints: tuple[list[str], list[str]],
    frames: list[str],
    own: tuple[str, ...] = (),
) -> dict[str, Any] | None:
    for grade in ("exact", "probable"):
        pool = [g for g in graded if g.grade == grade]
        if not pool:
            continue
        kept, how = _prefer(pool, *hints, frames)
        others = [g for g in graded if g not in kept[:1]]
        files = {(g.co.path, g.sym.file) for g in kept}
        if len(files) == 1:
            narrowed = len(pool) > len(kept)
            resolution = "probable" if narrowed and how != "strong" else grade
            note = ""
            if narrowed and how == "strong":
                note = f"copies elsewhere set aside: the kernel's namespace or launching module is {kept[0].co.name}'s"
            elif narrowed:
                note = (
                    f"{kept[0].co.name} preferred by the launch context or the kernel family; "
                    "the trace does not name the defining module"
                )
            if resolution == "exact" and own and kept[0].co.name not in own and _known(kept[0].co):
                resolution = "probable"
                note = _join(note, f"{kept[0].co.name}'s copy: the kernel's namespace belongs to {'/'.join(own)}")
            elif resolution == "exact" and _disagrees(kept[0].co, hints):
                resolution = "probable"
                said = "/".join(hints[0] or hints[1])
                note = _join(note, f"the trace or the kernel's family points to {said}, whose checkout is not searched")
            return _resolved(parsed, kept[0], resolution, others, note)
        row = _unresolved(parsed, f"{len(kept)} definitions fit equally")
        row["source_resolution"] = "ambiguous"
        row["candidates"] = [_cand(g) for g in graded]
        row["notes"] = "candidates: " + "; ".join(
            f"{c['file']}:{c['line']} ({c['why']})" for c in row["candidates"][:8]
        )
        return row
    return None


def resolve(
    name: str, parsed: dict[str, Any], checkouts: list[Checkout], context: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One row of AMD Magpie's source columns (plus ``line``, ``symbol``, ``candidates``) for a kernel."""
    context = context or {}
    why = why_unresolvable(parsed, checkouts, context)
    if why is not None:
        return _unresolved(parsed, why)
    q, cx = build_query(name, parsed)
    if q is None:
        return _unresolved(parsed, "the name carries no source symbol (runtime memory activity or unparsed name)")
    graded = candidates(q, checkouts)
    row = _decide(parsed, graded, _hints(cx, parsed, context), _frame_files(context), namespace_libraries(cx))
    if row is not None:
        return row
    searched = ", ".join(f"{c.name}@{(c.commit or 'worktree')[:12]}" for c in checkouts)
    scope = "::".join(q.scope or ())
    wanted = f"{scope}::{q.symbol}" if scope else q.symbol
    row = _unresolved(parsed, f"no definition of {wanted} ({', '.join(q.kinds)}) in {searched}")
    if graded:
        row["candidates"] = [_cand(g) for g in graded]
        row["notes"] = "same name elsewhere, not this kernel: " + "; ".join(
            f"{c['file']}:{c['line']} ({c['why']})" for c in row["candidates"][:8]
        )
    return row
