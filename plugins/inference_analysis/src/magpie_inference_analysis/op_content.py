"""Content ids of CPU ops: ops with the same name and the same recorded inputs share one id.

A trace repeats a few hundred distinct ops (name, ``Input Dims``, ``Input type``, ``Input Strides``,
``Concrete Inputs``) tens of thousands of times: every layer of every iteration launches the same ops. What
the analyses decide from an op's chain of enclosing ops (which op a kernel's time goes to, its FLOPs/bytes
model) depends only on the ops' contents, so it is decided once per distinct chain of contents (a
*signature*: the tuple of the chain's content ids) and looked up for every other kernel, instead of being
worked out again per kernel.
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
        """The content ids of a chain's ops. Not cached per op or chain: in a typical trace almost every op
        encloses one launch, so the content key is built once per chain element either way (inline: this
        runs for every kernel)."""
        get = self._ids.get
        out = []
        for j in chain:
            op = ops[j]
            a = op.args
            cid = get((op.name, a.input_dims, a.input_type, a.strides, a.concrete) if a is not None else (op.name,))
            out.append(self.of_op(op) if cid is None else cid)
        return tuple(out)
