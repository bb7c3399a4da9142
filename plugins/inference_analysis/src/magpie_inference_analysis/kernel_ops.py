"""Which op each kernel's time goes to (:func:`_kernel_ops`): through its launch call's chain of enclosing CPU ops
(:class:`OpChooser`, :class:`MoeSplitter` for fused MoE kernels) or, for a graph replay, the captured op it aligned
with (:func:`_map_graph_replays`); the result is a :class:`KernelOps` of :class:`OpInstance` s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from magpie_inference_analysis import events as ev_mod
from magpie_inference_analysis.annotations import StepInfo
from magpie_inference_analysis.graphs import CapturedGraph, align
from magpie_inference_analysis.models import SPECIFIC, OpModel, is_attention_name, model_op
from magpie_inference_analysis.op_content import OpContents
from magpie_inference_analysis.pseudo_ops import TopKIndex, is_moe_kernel, moe_parent, triton_moe_model
from magpie_inference_analysis.trace_state import Iteration, TraceState, _dec


@dataclass(slots=True)
class OpInstance:
    key: Any
    name: str
    dims_raw: bytes  # Input Dims / Input type as recorded (decoded once per roofline row)
    types_raw: bytes
    model: OpModel | None
    index: int = -1  # position among the trace's instances


ORIGIN_LAUNCH, ORIGIN_GRAPH, ORIGIN_CAPTURE = 0, 1, 2
ORIGINS = ("launch", "graph", "graph+capture")  # how a kernel was tied to its op


@dataclass
class KernelOps:
    """The op instance (index into ``instances``, -1: none) and origin code of every kernel; per instance, its
    op name (index into ``op_names``) and roofline row (index into ``row_keys``: category, op, signature),
    set by :func:`_instance_rows` so that each stage aggregates with numpy, not per instance."""

    instances: list[OpInstance]
    k_inst: np.ndarray
    k_origin: np.ndarray
    inst_op: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    op_names: list[str] = field(default_factory=list)
    inst_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    row_keys: list[tuple[str, str, str]] = field(default_factory=list)


_MATRIX_OK = {"gemm", "other", "attention", "moe"}


def _compatible(model: OpModel, kernel_cat: str) -> bool:
    if model.category in ("GEMM", "MoE", "MoE_fused", "MoE_unfused", "CONV_fwd"):
        return kernel_cat in _MATRIX_OK
    if model.category in ("SDPA_fwd", "InferenceAttention_fwd"):
        return kernel_cat in {"attention", "other", "gemm", "reduce", "sampling"}
    return True


GraphMap = dict[int, tuple[CapturedGraph, int, int]]  # kernel index -> (graph, index in its capture, replay id)


def _map_graph_replays(
    st: TraceState, its: list[Iteration], captures: list[CapturedGraph]
) -> tuple[GraphMap, dict[str, Any]]:
    """Align each graph replay's kernels with a capture trace's (the capture whose batch size fits the
    iteration's tokens best, first); the kernel -> captured-op map and the ``graph`` summary."""
    kernels = st.kernels
    graph_map: GraphMap = {}
    graph_info: dict[str, Any] = {"replays": 0, "kernels": sum(st.graph), "mapped": 0, "captures": len(captures)}
    if not any(st.graph):
        return graph_map, graph_info
    replays: dict[int, list[int]] = {}
    for i, g in enumerate(st.graph):
        if g:
            replays.setdefault(id(st.launch[i]), []).append(i)
    graph_info["replays"] = len(replays)
    unmatched = 0
    for rid, idxs in replays.items():
        names = [kernels[i].name for i in idxs if kernels[i].cat == "kernel"]
        kidx = [i for i in idxs if kernels[i].cat == "kernel"]
        it = its[st.k_iter[idxs[0]]] if st.k_iter[idxs[0]] >= 0 else None
        want = it.step.tokens if it is not None and it.step is not None else None
        cands = sorted(
            captures,
            key=lambda g: (
                want is not None and g.batch_size < want,
                abs(g.batch_size - want) if want is not None else 0,
                abs(len(g.kernel_names) - len(names)),
            ),
        )
        done = False
        for g in cands:
            m = align(g.kernel_names, names)
            if m is not None:
                for i, ci in zip(kidx, m, strict=True):
                    if ci is not None:
                        graph_map[i] = (g, ci, rid)
                done = True
                break
        unmatched += not done
    graph_info["mapped"] = len(graph_map)
    if captures and unmatched:
        st.notes.append(f"{unmatched} graph replay(s) could not be aligned with any capture trace")
    if not captures:
        st.notes.append(
            f"{graph_info['kernels']} graph-replayed kernels in {len(replays)} replay(s) have no capture trace: "
            "reported as one 'graph' group"
        )
    return graph_map, graph_info


class OpChooser:
    """Which op of a kernel's enclosing-op chain its time goes to (:meth:`position`, :meth:`choose_lazy`: the
    innermost op with a specific model that fits the kernel, else the innermost modelled op, else the innermost
    op), and ``instance(key, op, step)``: the index of that op's :class:`OpInstance` in ``instances`` (made on
    first use, with its FLOPs/bytes model).

    Models are made per distinct op content (:mod:`op_content`) and step where the op is an attention op; for
    chains many kernels share (capture traces), the choice is made once per (chain signature, kernel category,
    step): :meth:`position`; for a launch call's own chain, :meth:`choose_lazy`."""

    def __init__(self, instances: dict[Any, OpInstance], contents: OpContents) -> None:
        self.instances = instances
        self.contents = contents
        self._models: dict[Any, OpModel | None] = {}
        self._attention: dict[int, bool] = {}  # per content id: an attention op (its model reads the step)
        self._chosen: dict[Any, int] = {}  # (signature, kernel category, id(step)) -> position in chain

    def model(self, cid: int, step: StepInfo | None) -> OpModel | None:
        """The model of the ops of content ``cid`` under ``step``."""
        attn = self._attention.get(cid)
        if attn is None:
            attn = self._attention[cid] = is_attention_name(self.contents.first[cid].name)
        key = (cid, id(step)) if attn and step is not None else cid
        model = self._models.get(key, self._models)
        if model is self._models:
            op = self.contents.first[cid]
            a = op.args
            if a is None or a.input_dims == ev_mod.NO_LIST:
                model = None
            else:
                model = model_op(op.name, _dec(a.input_dims), _dec(a.input_type), _dec(a.concrete), step)
            self._models[key] = model
        return model  # type: ignore[return-value]

    def position(self, chain: tuple[int, ...], ops: list[ev_mod.Ev], kcat: str, step: StepInfo | None) -> int | None:
        """Where in ``chain`` the chosen op is (None for an empty chain)."""
        if not chain:
            return None
        return self.position_of(self.contents.signature(ops, chain), kcat, step)

    def position_of(self, sig: tuple[int, ...], kcat: str, step: StepInfo | None) -> int:
        """:meth:`position` from the chain's signature (not empty)."""
        key = (sig, kcat, id(step))
        got = self._chosen.get(key)
        if got is None:
            got = self._chosen[key] = self._choose(sig, kcat, step)
        return got

    def choose_lazy(
        self, chain: tuple[int, ...], ops: list[ev_mod.Ev], kcat: str, step: StepInfo | None
    ) -> tuple[int, int]:
        """:meth:`position` (and the chosen op's content id) for a chain no other kernel shares: the ops' content
        ids are looked up from the innermost out only as far as the choice needs (usually the innermost op)."""
        of_op, model = self.contents.of_op, self.model
        innermost_model = None
        for p, j in enumerate(chain):
            cid = of_op(ops[j])
            m = model(cid, step)
            if m is None:
                continue
            if m.category in SPECIFIC and _compatible(m, kcat):
                return p, cid
            if innermost_model is None and m.category not in SPECIFIC:
                innermost_model = (p, cid)
        if innermost_model is not None:
            return innermost_model
        return 0, of_op(ops[chain[0]])

    def _choose(self, sig: tuple[int, ...], kcat: str, step: StepInfo | None) -> int:
        """The innermost op with a specific model that fits the kernel, else the innermost modelled op,
        else the innermost op."""
        innermost_model = None
        for p, cid in enumerate(sig):
            m = self.model(cid, step)
            if m is None:
                continue
            if m.category in SPECIFIC and _compatible(m, kcat):
                return p
            if innermost_model is None and m.category not in SPECIFIC:
                innermost_model = p
        return innermost_model if innermost_model is not None else 0

    def instance(self, key: Any, op: ev_mod.Ev | None, step: StepInfo | None, cid: int = -1) -> int:
        """``cid``: the content id of ``op`` when the caller knows it."""
        inst = self.instances.get(key)
        return inst.index if inst is not None else self.new_instance(key, op, step, cid)

    def new_instance(self, key: Any, op: ev_mod.Ev | None, step: StepInfo | None, cid: int = -1) -> int:
        """:meth:`instance` for a key not seen yet."""
        if op is None:
            inst = OpInstance(key, "graph" if key == ("graph",) else "(no op)", b"", b"", None)
        else:
            a = op.args
            dims, types = (a.input_dims, a.input_type) if a is not None else (b"", b"")
            inst = OpInstance(key, op.name, dims, types, self.model(self.contents.of_op(op) if cid < 0 else cid, step))
        inst.index = len(self.instances)
        self.instances[key] = inst
        return inst.index


class MoeSplitter:
    """The MoE pseudo-op instance (:mod:`pseudo_ops`) of a fused MoE op's GEMM / finalize kernel; kernels
    come in time order, so a MoE op's first GEMM is its up-projection."""

    def __init__(self, instances: dict[Any, OpInstance], moe_kernel: list[bool]) -> None:
        self.instances = instances
        self.kernel = moe_kernel  # per kernel name id
        self.gemms: dict[Any, int] = {}
        self.topk: dict[int, TopKIndex] = {}

    def instance(self, chain: tuple[int, ...], ops: list[ev_mod.Ev], base: tuple[Any, ...], kernel: ev_mod.Ev) -> int:
        """The pseudo-op instance index, -1 when the kernel is in no fused MoE op."""
        jm = moe_parent(chain, ops)
        if jm is None:
            return -1
        moe_key = (*base, jm)
        seen = self.gemms.get(moe_key, 0)
        scatter = "matmul_scatter" in kernel.name.lower()
        kind = "finalize_matmul_scatter" if scatter else "up" if seen == 0 else "down"
        self.gemms[moe_key] = seen + (not scatter)
        key = ("moe", moe_key, kind, seen if kind == "down" else 0)
        inst = self.instances.get(key)
        if inst is None:
            ev = ops[jm]
            idx = self.topk.get(id(ops)) or self.topk.setdefault(id(ops), TopKIndex(ops))
            model = triton_moe_model(kind, ev, idx.topk_in(ev), kernel.name)
            a = ev.args
            dims, types = (a.input_dims, a.input_type) if a is not None else (b"", b"")
            inst = OpInstance(key, f"pseudo_op::moe_triton_unfused_{kind}", dims, types, model)
            inst.index = len(self.instances)
            self.instances[key] = inst
        return inst.index


def _kernel_ops(st: TraceState, its: list[Iteration], graph_map: GraphMap) -> KernelOps:
    """The op instance and origin of every kernel inside an iteration: through its launch call's chain of
    enclosing CPU ops, or, for a graph replay, the captured op it aligned with (else one ``graph`` group)."""
    kernels = st.kernels
    instances: dict[Any, OpInstance] = {}
    chooser = OpChooser(instances, OpContents())
    position, choose_lazy = chooser.position, chooser.choose_lazy
    instance, new_instance, signature = chooser.instance, chooser.new_instance, chooser.contents.signature
    n = len(kernels)
    k_inst = [-1] * n  # the op instance each kernel's time goes to (index into ``instances``)
    k_origin = [ORIGIN_LAUNCH] * n
    k_iter = st.k_iter.tolist()
    step_of = [it.step for it in its]
    kcat_of_name = [st.kcat.get(name, "other") for name in st.kernel_names.values]
    k_name = st.k_name.tolist()
    cpu_ops, chain_of_call, launch, graph = st.cpu_ops, st.chain_of_call, st.launch, st.graph
    moe = MoeSplitter(instances, [is_moe_kernel(name) for name in st.kernel_names.values])
    moe_kernel = moe.kernel
    op_inst: dict[int, int] = {}  # CPU op index -> its instance (key ("op", j)), the common case's short cut
    graph_inst = -1  # the one instance of graph replays without a capture trace, once made
    for i in range(n):
        if k_iter[i] < 0:
            continue
        step = step_of[k_iter[i]]
        name_id = k_name[i]
        if graph[i]:
            hit = graph_map.get(i)
            if hit is None:
                k_origin[i] = ORIGIN_GRAPH
                if graph_inst < 0:
                    graph_inst = instance(("graph",), None, step)
                k_inst[i] = graph_inst
                continue
            g, ci, rid = hit
            k_origin[i] = ORIGIN_CAPTURE
            got = moe.instance(g.chains[ci], g.ops, ("cap", id(g), rid), kernels[i]) if moe_kernel[name_id] else -1
            if got >= 0:
                k_inst[i] = got
                continue
            chain = g.chains[ci]
            p = position(chain, g.ops, kcat_of_name[name_id], step)
            k_inst[i] = (
                instance(("nokernelop", kernels[i].name, i), None, step)
                if p is None
                else instance(("cap", id(g), chain[p], rid), g.ops[chain[p]], step, signature(g.ops, chain)[p])
            )
            continue
        call = launch[i]
        chain = chain_of_call.get(id(call), ()) if call is not None else ()
        if moe_kernel[name_id]:
            got = moe.instance(chain, cpu_ops, ("op",), kernels[i])
            if got >= 0:
                k_inst[i] = got
                continue
        if not chain:  # no launch record (dropped by the profiler) or launched outside any op
            k_inst[i] = instance(("nokernelop", kernels[i].name, i), None, step)
            continue
        p, cid = choose_lazy(chain, cpu_ops, kcat_of_name[name_id], step)
        j = chain[p]
        got = op_inst.get(j, -1)
        if got < 0:
            got = op_inst[j] = new_instance(("op", j), cpu_ops[j], step, cid)
        k_inst[i] = got
    return KernelOps(list(instances.values()), np.array(k_inst, np.int64), np.array(k_origin, np.int8))
