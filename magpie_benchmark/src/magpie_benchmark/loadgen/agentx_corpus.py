"""InferenceX's agentic-coding trace (AgentX), fetched on first use into a cache folder.

AMD Magpie's AgentX runs InferenceX's client script, whose ``resolve_trace_source`` (in
``benchmarks/benchmark_lib.sh``) picks an AIPerf public-dataset loader and downloads the Hugging Face
dataset behind it; AIPerf then replays the dataset's ``traces.jsonl`` (one Weka trace per line, see
:mod:`magpie_benchmark.loadgen.traces`). magpie replays the same file itself:

* the corpus: ``semianalysisai/cc-traces-weka-062126`` for model families served with a 1M-token
  context (InferenceX's ``dsv4*``, ``glm5.2*``, ``minimaxm3*``, ``kimik3*`` recipes), its 256k-capped
  variant otherwise; ``benchmark.envs.WEKA_LOADER_OVERRIDE`` (InferenceX's own variable) picks another;
* the file: ``https://huggingface.co/datasets/<dataset>/resolve/main/traces.jsonl``, or ``dataset.url``;
* the cache: ``$MAGPIE_TRACE_CACHE`` (default ``$XDG_CACHE_HOME/magpie/traces``, i.e.
  ``~/.cache/magpie/traces``); a cached file is used as is, with no network;
* the digest: the file's SHA-256 is recorded in the report and, when ``dataset.sha256`` names one,
  checked (a mismatch stops the run rather than measuring another workload).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from magpie_benchmark.loadgen.datasets import DatasetError

#: AIPerf public-dataset loader (InferenceX's ``WEKA_LOADER_OVERRIDE`` values) -> Hugging Face dataset
LOADERS: dict[str, str] = {
    "semianalysis_cc_traces_weka_with_subagents": "semianalysisai/cc-traces-weka-061526",
    "semianalysis_cc_traces_weka_with_subagents_256k": "semianalysisai/cc-traces-weka-061526-256k",
    **{
        f"semianalysis_cc_traces_weka_with_subagents_{d}{cap}": (
            f"semianalysisai/cc-traces-weka-with-subagents-{d}{dash}"
        )
        for d in ("060226", "060526", "060826")
        for cap, dash in (("", ""), ("_256k", "-256k"))
    },
    **{
        f"semianalysis_cc_traces_weka_{d}{cap}": f"semianalysisai/cc-traces-weka-{d}{dash}"
        for d in ("061326", "061526", "062126")
        for cap, dash in (("", ""), ("_256k", "-256k"))
    },
}
#: model families InferenceX replays the uncapped corpus for (their native context is 1M tokens);
#: matched on the model id with everything but letters and digits dropped
_LONG_CONTEXT = ("deepseekv4", "dsv4", "glm52", "minimaxm3", "kimik3")
LONG_LOADER = "semianalysis_cc_traces_weka_062126"
CAPPED_LOADER = "semianalysis_cc_traces_weka_062126_256k"
TRACE_FILE = "traces.jsonl"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class CorpusFile:
    """A trace file on disk and where it came from (for the report)."""

    path: Path
    sha256: str
    url: str | None = None
    loader: str | None = None

    def report(self) -> dict[str, Any]:
        return {"url": self.url, "loader": self.loader, "cached_path": str(self.path), "sha256": self.sha256}


def default_loader(model: str) -> str:
    """InferenceX's default corpus for ``model`` (``resolve_trace_source``'s case on the model prefix)."""
    flat = re.sub(r"[^a-z0-9]", "", model.lower())
    return LONG_LOADER if any(family in flat for family in _LONG_CONTEXT) else CAPPED_LOADER


def loader_url(loader: str) -> str:
    dataset = LOADERS.get(loader)
    if dataset is None:
        raise DatasetError(
            f"benchmark.envs.WEKA_LOADER_OVERRIDE={loader!r} is not an InferenceX AgentX corpus; "
            f"allowed: {', '.join(LOADERS)}"
        )
    return f"https://huggingface.co/datasets/{dataset}/resolve/main/{TRACE_FILE}"


def cache_dir() -> Path:
    """``$MAGPIE_TRACE_CACHE``, else ``$XDG_CACHE_HOME/magpie/traces`` (``~/.cache/magpie/traces``)."""
    explicit = os.environ.get("MAGPIE_TRACE_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "magpie" / "traces"


def cached_path(url: str, folder: Path) -> Path:
    """Where ``url`` is kept: one folder per URL (readable prefix + digest of the whole URL), the file's name."""
    name = url.rstrip("/").rsplit("/", 1)[-1] or TRACE_FILE
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", url.split("://", 1)[-1])[-80:]
    return folder / f"{readable}-{hashlib.sha256(url.encode()).hexdigest()[:12]}" / name


#: (path, size, mtime) -> SHA-256: every load point re-resolves the trace, and the corpus is ~0.5 GB
_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = _hash_file(path)
    return _DIGESTS[key]


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def check_digest(path: Path, actual: str, expected: str | None, origin: str) -> None:
    if expected and actual != expected.lower():
        raise DatasetError(
            f"{path}: SHA-256 {actual} differs from dataset.sha256 {expected.lower()} ({origin}); the file is "
            "another version of the trace: delete it to download again, or update dataset.sha256"
        )


def fetch(url: str, folder: Path, expected_sha256: str | None = None, timeout_s: float = 60.0) -> CorpusFile:
    """``url``'s file in ``folder`` (downloaded on first use, atomically: a broken download leaves nothing)."""
    target = cached_path(url, folder)
    if target.is_file():
        digest = file_sha256(target)
        check_digest(target, digest, expected_sha256, f"cached from {url}")
        return CorpusFile(target, digest, url)
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout_s) as response:
            while chunk := response.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError, ValueError) as exc:  # ValueError: a malformed URL
        Path(tmp).unlink(missing_ok=True)
        raise DatasetError(_offline_message(url, target, exc)) from exc
    try:
        check_digest(target, digest.hexdigest(), expected_sha256, f"downloaded from {url}")
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return CorpusFile(target, digest.hexdigest(), url)


def _offline_message(url: str, target: Path, exc: Exception) -> str:
    reason = getattr(exc, "reason", None) or exc
    return (
        f"cannot download the AgentX trace {url}: {reason}. Without network, copy the file here first "
        f"(e.g. `curl -L -o {target} {url}` on a machine that has network, or `hf download --repo-type dataset "
        "<dataset>` and take its traces.jsonl) or point dataset.path (--dataset-path) at a local copy; "
        "MAGPIE_TRACE_CACHE moves the cache folder"
    )


def local_file(path: str | Path, expected_sha256: str | None = None) -> CorpusFile:
    """A trace the user gave (``dataset.path``): hashed for the report, checked against ``dataset.sha256``."""
    p = Path(path)
    if not p.is_file():
        return CorpusFile(p, "")  # the reader names the missing file
    digest = file_sha256(p)
    check_digest(p, digest, expected_sha256, "dataset.path")
    return CorpusFile(p, digest)


def resolve(
    *,
    path: str | None,
    url: str | None,
    expected_sha256: str | None,
    agentx: bool,
    model: str,
    envs: dict[str, Any],
) -> CorpusFile | None:
    """The trace file a replay reads: ``dataset.path``, else ``dataset.url``, else (agentx on) the InferenceX
    corpus for ``model``; None when none applies (the caller says what is missing)."""
    if path:
        return local_file(path, expected_sha256)
    loader = None
    if not url and agentx:
        loader = str(envs.get("WEKA_LOADER_OVERRIDE") or default_loader(model))
        url = loader_url(loader)
    if not url:
        return None
    got = fetch(url, cache_dir(), expected_sha256)
    return CorpusFile(got.path, got.sha256, url, loader)
