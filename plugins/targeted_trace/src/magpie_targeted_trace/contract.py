"""The artifact contract of AMD Magpie's TargetedKernelTrace, schema ``magpie.targeted-kernel-trace@1.0.0``.

A targeted-trace folder holds ``manifest.json`` and ``shards/trace_pid<PID>_rank<RANK>.jsonl``. Each shard
line is one *envelope*, canonical JSON (sorted keys, no spaces, no NaN)::

    {"schema_name", "schema_version", "record_type": header|event|end, "sequence": 0,1,...,
     "previous_checksum": <checksum of the line before, 64 zeros for the first>, "payload": {...},
     "checksum": sha256(canonical JSON of the envelope without "checksum")}

The header carries run/rank/pid, the sampling seed and rate and the record budget; events carry one
record each; the end sentinel carries the loss counters ``seen = written + dropped``,
``sampled = written + non-sampling drops``, ``dropped_by_reason``. The manifest lists every shard with a
receipt (file SHA-256, byte count, last sequence, chain checksum, counters), so a truncated, edited or
missing shard is detected. Artifacts are diagnostic only: ``pass_kind: diagnostic``,
``reward_eligible: false``.

Sampling is deterministic: an event is kept when ``sha256(run_seed + NUL + stable_event_key)``'s first 8
bytes, as a fraction of 2**64, are below ``sample_rate``; Python's randomized ``hash()`` is never used.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

SCHEMA_NAME = "magpie.targeted-kernel-trace"
SCHEMA_VERSION = "1.0.0"
ZERO_CHECKSUM = "0" * 64
RECORD_TYPES = ("header", "event", "end")


class ContractError(ValueError):
    """An artifact breaks the contract; the message says which field."""


def canonical_json(value: Any) -> str:
    """Deterministic JSON for hashing: sorted keys, compact, non-ASCII kept, NaN/inf refused."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_json(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def utc_now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def stable_key(parts: dict[str, Any], occurrence: int = 0) -> str:
    """The key of one semantic event: its parts and how many identical ones came before it."""
    return sha256_json({"parts": parts, "occurrence": occurrence})


def sampled(run_seed: str, key: str, rate: float) -> bool:
    """The deterministic sampling decision (the same in every process and rerun)."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    digest = hashlib.sha256(f"{run_seed}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / float(1 << 64) < rate


def envelope(record_type: str, sequence: int, previous: str, payload: dict[str, Any]) -> dict[str, Any]:
    body = {
        "schema_name": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "record_type": record_type,
        "sequence": sequence,
        "previous_checksum": previous,
        "payload": payload,
    }
    return {**body, "checksum": sha256_json(body)}


def check_envelope(data: Any, sequence: int, previous: str) -> dict[str, Any]:
    """``data`` if it is the envelope expected at ``sequence`` after ``previous``; ContractError naming the field."""
    if not isinstance(data, dict):
        raise ContractError("the line is not a JSON object")
    if (data.get("schema_name"), data.get("schema_version")) != (SCHEMA_NAME, SCHEMA_VERSION):
        raise ContractError(
            f"schema {data.get('schema_name')}@{data.get('schema_version')} is not {SCHEMA_NAME}@{SCHEMA_VERSION}"
        )
    if data.get("record_type") not in RECORD_TYPES:
        raise ContractError(f"record_type {data.get('record_type')!r} is not one of {', '.join(RECORD_TYPES)}")
    if data.get("sequence") != sequence:
        raise ContractError(f"sequence {data.get('sequence')!r}, expected {sequence}")
    if data.get("previous_checksum") != previous:
        raise ContractError("previous_checksum does not match the line before (a line is missing or edited)")
    if not isinstance(data.get("payload"), dict):
        raise ContractError("payload is not an object")
    body = {k: v for k, v in data.items() if k != "checksum"}
    if data.get("checksum") != sha256_json(body):
        raise ContractError("checksum does not match the envelope (the line was edited)")
    return data


@dataclass
class Counters:
    """Loss accounting of one shard: every matching event is written or dropped for a named reason."""

    seen: int = 0
    sampled: int = 0
    written: int = 0
    dropped: int = 0
    dropped_by_reason: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        self.dropped += 1
        self.dropped_by_reason[reason] = self.dropped_by_reason.get(reason, 0) + 1

    def check(self) -> None:
        values = (self.seen, self.sampled, self.written, self.dropped, *self.dropped_by_reason.values())
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 0 for v in values):
            raise ContractError("counters must be non-negative integers")
        if sum(self.dropped_by_reason.values()) != self.dropped:
            raise ContractError("dropped_by_reason does not add up to dropped")
        if self.seen != self.written + self.dropped:
            raise ContractError("seen is not written + dropped")
        if self.sampled != self.written + self.dropped - self.dropped_by_reason.get("sampling", 0):
            raise ContractError("sampled is not written + drops other than sampling")

    def as_dict(self) -> dict[str, Any]:
        self.check()
        return {
            "seen": self.seen,
            "sampled": self.sampled,
            "written": self.written,
            "dropped": self.dropped,
            "dropped_by_reason": dict(sorted(self.dropped_by_reason.items())),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Counters:
        if not isinstance(data, dict):
            raise ContractError("counters is not an object")
        try:
            counters = cls(
                **{k: data.get(k, 0) for k in ("seen", "sampled", "written", "dropped")},
                dropped_by_reason=dict(data.get("dropped_by_reason") or {}),
            )
        except (TypeError, ValueError) as exc:
            raise ContractError(f"counters: {exc}") from None
        counters.check()
        return counters

    @classmethod
    def total(cls, items: list[Counters]) -> Counters:
        out = cls()
        for c in items:
            out.seen, out.sampled, out.written, out.dropped = (
                out.seen + c.seen,
                out.sampled + c.sampled,
                out.written + c.written,
                out.dropped + c.dropped,
            )
            for reason, n in c.dropped_by_reason.items():
                out.dropped_by_reason[reason] = out.dropped_by_reason.get(reason, 0) + n
        return out


def shard_path(out_dir: Path, rank: int, pid: int) -> Path:
    return out_dir / "shards" / f"trace_pid{pid}_rank{rank}.jsonl"


class ShardWriter:
    """One shard, written once: a header, one envelope per kept record, the end sentinel (:meth:`close`)."""

    def __init__(
        self,
        path: Path,
        *,
        run_id: str,
        rank: int,
        pid: int,
        run_seed: str,
        sample_rate: float,
        max_records: int,
        metadata: dict[str, Any],
    ) -> None:
        self.path, self.run_id, self.rank, self.pid = path, run_id, rank, pid
        self.run_seed, self.sample_rate, self.max_records = run_seed, sample_rate, max_records
        self.counters = Counters()
        self._sequence = 0
        self._previous = ZERO_CHECKSUM
        self._hash = hashlib.sha256()
        self._bytes = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        try:  # never mix two runs' evidence in one file: the output folder must be fresh
            self._file: BinaryIO = path.open("xb")
        except FileExistsError:
            raise ContractError(f"{path}: already exists: write a targeted trace into a new folder") from None
        header = {
            "run_id": run_id,
            "rank": rank,
            "pid": pid,
            "run_seed": run_seed,
            "sample_rate": sample_rate,
            "max_records": max_records,
            "metadata": metadata,
        }
        self._write("header", header)

    def _write(self, record_type: str, payload: dict[str, Any]) -> None:
        env = envelope(record_type, self._sequence, self._previous, payload)
        raw = (canonical_json(env) + "\n").encode()
        self._file.write(raw)
        self._hash.update(raw)
        self._bytes += len(raw)
        self._previous = env["checksum"]
        self._sequence += 1

    def submit(self, key: str, record: dict[str, Any]) -> bool:
        """Count one matching event; write it unless sampling or the budget drops it."""
        self.counters.seen += 1
        if not sampled(self.run_seed, key, self.sample_rate):
            self.counters.drop("sampling")
            return False
        self.counters.sampled += 1
        if self.counters.written >= self.max_records:
            self.counters.drop("cap")
            return False
        self._write("event", record)
        self.counters.written += 1
        return True

    def close(self) -> dict[str, Any]:
        """Write the end sentinel, flush to disk, and return the shard's receipt."""
        end = {
            "run_id": self.run_id,
            "rank": self.rank,
            "pid": self.pid,
            "counters": self.counters.as_dict(),
            "end_reason": "complete",
        }
        self._write("end", end)
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        return {
            "path": str(self.path),
            "rank": self.rank,
            "pid": self.pid,
            "sequence_end": self._sequence - 1,
            "chain_checksum": self._previous,
            "file_sha256": self._hash.hexdigest(),
            "byte_count": self._bytes,
            "counters": self.counters.as_dict(),
            "complete": True,
        }


def manifest(
    run_id: str, targets: list[dict[str, Any]], receipts: list[dict[str, Any]], provenance: dict[str, Any]
) -> dict[str, Any]:
    coverage = Counters.total([Counters.from_dict(r["counters"]) for r in receipts])
    return {
        "schema_name": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "created_at": utc_now(),
        "pass_kind": "diagnostic",
        "reward_eligible": False,
        "acquisition_backend": "torch_profiler",
        "targets": targets,
        "provenance": provenance,
        "coverage": coverage.as_dict(),
        "shards": receipts,
    }


def write_manifest(path: Path, data: dict[str, Any]) -> None:
    """Atomically: a reader sees the old manifest or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(canonical_json(data) + "\n")
    os.replace(tmp, path)
