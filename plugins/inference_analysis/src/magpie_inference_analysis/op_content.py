"""Content ids of CPU ops: ops with the same name and the same recorded inputs share one id.

A trace repeats a few hundred distinct ops (name, ``Input Dims``, ``Input type``, ``Input Strides``,
``Concrete Inputs``) tens of thousands of times: every layer of every iteration launches the same ops. An op's
FLOPs/bytes model depends only on its content, so it is worked out once per content id. Where many kernels share
one chain of enclosing ops (a capture trace's chains, mapped to every replay of the graph), the choice of the
op a kernel's time goes to is also made once per *signature* (the tuple of the chain's content ids); a launch
call's own chain belongs to its kernels alone, so there the content ids are looked up only as far as the choice
needs.
"""

from __future__ import annotations

from typing import Any

from magpie_inference_analysis import events as ev_mod


class OpContents:
    """Content ids of the ops of one or more op lists (a trace's CPU ops, each capture trace's)."""

    def __init__(self) -> None:
        self._ids: dict[Any, int] = {}
        #: per content id: the first op met with that content (its name and args stand for all of them)
        self.first: list[ev_mod.Ev] = []

    def of_op(self, op: ev_mod.Ev) -> int:
        """The content id of ``op``."""
        a = op.args
        key = (op.name, a.input_dims, a.input_type, a.strides, a.concrete) if a is not None else (op.name,)
        cid = self._ids.get(key)
        if cid is None:
            cid = self._ids[key] = len(self.first)
            self.first.append(op)
        return cid

    def signature(self, ops: list[ev_mod.Ev], chain: tuple[int, ...]) -> tuple[int, ...]:
        """The content ids of a chain's ops."""
        get = self._ids.get
        out = []
        for j in chain:
            op = ops[j]
            a = op.args
            cid = get((op.name, a.input_dims, a.input_type, a.strides, a.concrete) if a is not None else (op.name,))
            out.append(self.of_op(op) if cid is None else cid)
        return tuple(out)
