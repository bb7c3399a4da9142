"""Offline kernel source finder (plugin magpie-source-finder) over the small checked-in source tree in
tests/data/kernel_sources."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from magpie_source_finder.finder import clone_upstreams, find_sources, load_checkout

from magpie_core.kernel_names import parse_kernel_name
from tests.conftest import DATA

TREE = DATA / "kernel_sources"
ROTARY_VLLM = "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*)"
ROTARY_SGL = "void rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*)"
AITER = "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib"


def _kernels(*names: str) -> list[dict]:
    return [{"name": n, "parsed": parse_kernel_name(n, {"platform": "rocm"}).model_dump()} for n in names]


@pytest.fixture()
def repos(tmp_path: Path) -> list[str]:
    """A copy of the tree; vllm is made a real git checkout so upstream URLs can be pinned."""
    root = tmp_path / "src"
    shutil.copytree(TREE, root)
    git = ["git", "-C", str(root / "vllm"), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "mini vllm"], check=True)
    return [str(root / n) for n in ("vllm", "sglang", "aiter", "triton")]


def test_resolutions(repos: list[str], tmp_path: Path) -> None:
    names = [
        ROTARY_VLLM,
        ROTARY_SGL,
        AITER,
        "kernel_unified_attention_2d",
        "_topk_forward",
        "triton_poi_fused__to_copy_1",
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256_MI16x16x1_SN",
        "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1",
        "Memcpy DtoH (Device -> Host)",
    ]
    out = find_sources(_kernels(*names), repos, str(tmp_path / "cache"))
    src = out["sources"]
    commit = subprocess.run(["git", "-C", repos[0], "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()

    v = src[ROTARY_VLLM]
    assert v["source_resolution"] == "exact" and v["source_file"] == "$VLLM_DIR/csrc/pos_encoding_kernels.cu"
    assert v["line"] == 6
    assert v["upstream_url"] == f"https://github.com/vllm-project/vllm/blob/{commit}/csrc/pos_encoding_kernels.cu#L6"
    assert v["test_file"] == "$VLLM_DIR/tests/kernels/test_pos_encoding.py"
    # found by call search (the test calls the op that launches the kernel); the command selects that test only
    assert v["test_cmd"] == (
        "cd $VLLM_DIR && python -m pytest tests/kernels/test_pos_encoding.py::test_rotary_embedding -q"
    )
    assert v["baseline_ref_symbol"] == "ref_rotary_embedding"
    assert "rotary_embedding, which launches" in v["notes"]

    s = src[ROTARY_SGL]  # same symbol in two checkouts; the un-namespaced (global scope) one is sgl-kernel's
    assert s["source_file"] == "$SGLANG_DIR/sgl-kernel/csrc/rotary_embedding.cu"
    assert s["source_resolution"] == "exact" and s["upstream_url"] == ""  # not a git checkout: no fake URL
    assert "not a git repository" in s["notes"]
    assert {c["match"] for c in s["candidates"]} == {"exact", "foreign"}  # vllm's copy is listed as another kernel
    assert s["test_cmd"] == "" and "no test found" in s["notes"]

    a = src[AITER]
    assert a["source_resolution"] == "exact" and a["source_file"] == "$AITER_DIR/csrc/kernels/rmsnorm_quant_kernels.cu"
    assert a["test_file"] == "$AITER_DIR/op_tests/test_rmsnorm2dFusedAddQuant.py"

    t = src["kernel_unified_attention_2d"]
    assert t["source_resolution"] == "exact" and t["kind"] == "triton_jit"
    assert t["source_file"].endswith("triton_unified_attention.py") and t["line"] == 6

    # the same Triton kernel name in two checkouts; only the parser's name table says triton_kernels: probable,
    # with both candidates listed
    amb = src["_topk_forward"]
    assert amb["source_resolution"] == "probable" and amb["source_repo"] == "triton"
    assert {c["repo"] for c in amb["candidates"]} == {"sglang", "triton"}
    assert "launch context or the kernel family" in amb["notes"]

    assert "TorchInductor" in src["triton_poi_fused__to_copy_1"]["source_error"]
    assert (
        "library logic" in src["Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256_MI16x16x1_SN"]["source_error"]
    )
    assert src["_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"]["source_resolution"] == "unresolved"
    assert "no source symbol" in src["Memcpy DtoH (Device -> Host)"]["source_error"]
    for row in src.values():  # a resolved row always names an existing file, never a directory
        if row["source_resolution"] in ("exact", "probable"):
            var, rel = row["source_file"].split("/", 1)
            repo = next(r for r in out["repos"] if r["var"] == var)
            assert (Path(repo["path"]) / rel).is_file()
        else:
            assert not row.get("source_file")


def test_index_is_cached_per_commit(repos: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from magpie_source_finder import finder

    cache = tmp_path / "cache"
    co = load_checkout(Path(repos[0]), cache)
    assert co.commit and co.key == co.commit and "rotary_embedding_kernel" in co.symbols
    index_files = list((cache / "index").glob("vllm-*.json"))
    assert len(index_files) == 1 and co.commit in index_files[0].name

    def no_rebuild(*_: object) -> None:
        raise AssertionError("the cached index should have been read")

    with monkeypatch.context() as m:  # same commit, clean tree: the index is read, not rebuilt
        m.setattr(finder, "_build_index", no_rebuild)
        assert "rotary_embedding_kernel" in load_checkout(Path(repos[0]), cache).symbols

    # an uncommitted change is part of the key: a kernel added to the work tree is indexed
    cu = Path(repos[0]) / "csrc" / "pos_encoding_kernels.cu"
    cu.write_text(cu.read_text() + "\n__global__ void added_kernel(int n) {}\n")
    dirty = load_checkout(Path(repos[0]), cache)
    assert dirty.key.startswith(co.commit + "-dirty-") and "added_kernel" in dirty.symbols

    # a folder outside git is keyed by content: a touched file keeps the key, an edited one changes it
    plain = Path(repos[1])
    first = load_checkout(plain, cache).key
    f = plain / "sgl-kernel" / "csrc" / "rotary_embedding.cu"
    f.touch()
    assert load_checkout(plain, cache).key == first and first.startswith("tree-")
    f.write_text(f.read_text() + "\n// edited\n")
    assert load_checkout(plain, cache).key != first

    # a stale index entry (file gone, key unchanged) is never shown as a source file
    monkeypatch.setattr(finder, "_dirty_hash", lambda _p: "")
    subprocess.run(["git", "-C", repos[0], "checkout", "-q", "--", "."], check=True)
    load_checkout(Path(repos[0]), cache)
    cu.unlink()
    out = find_sources(_kernels(ROTARY_VLLM), [repos[0]], str(cache))
    assert out["sources"][ROTARY_VLLM]["source_resolution"] == "unresolved"


def test_offline_by_default_and_clone_only_known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = find_sources(_kernels(ROTARY_VLLM), [], str(tmp_path / "empty"))
    assert "no source checkouts" in out["sources"][ROTARY_VLLM]["source_error"]
    assert not (tmp_path / "empty").exists()  # nothing fetched or created without --clone
    paths, errors = clone_upstreams(["not-a-project"], tmp_path / "c")
    assert paths == [] and "not a known upstream" in errors[0]
    # --clone against a local mirror (no network here): a known upstream is cloned into the cache
    mirror = tmp_path / "mirror"
    shutil.copytree(TREE / "vllm", mirror / "vllm")
    git = ["git", "-C", str(mirror / "vllm"), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "m"], check=True)
    monkeypatch.setenv("MAGPIE_UPSTREAM_MIRROR", str(mirror))
    out = find_sources(_kernels(ROTARY_VLLM), [], str(tmp_path / "cache"), clone=True)
    assert out["sources"][ROTARY_VLLM]["source_resolution"] == "exact"
    assert (tmp_path / "cache" / "vllm" / "csrc").is_dir()


def test_missing_repo_path_is_reported(tmp_path: Path) -> None:
    out = find_sources(_kernels(ROTARY_VLLM), [str(tmp_path / "nope")], str(tmp_path / "cache"))
    assert any("not found" in e for e in out["errors"])


def test_registered_as_source_finder(repos: list[str], tmp_path: Path) -> None:
    """The plugin manager hands out the finder as the ``kernel-sources`` source finder (not a trace
    analyzer); ``find`` gives what :func:`find_sources` gives, whether ``parsed`` is a dict, the
    :class:`ParsedKernelName` itself, or absent (then it is parsed here)."""
    from magpie_core.interfaces import KernelSourceFinder
    from magpie_core.plugins import get_plugin_manager

    pm = get_plugin_manager()
    finder = pm.get("source_finder", "kernel-sources")
    assert isinstance(finder, KernelSourceFinder)
    assert "kernel-sources" not in pm.components("trace_analyzer")
    options = {"repos": repos, "cache_dir": str(tmp_path / "cache"), "clone": False}
    expected = find_sources(_kernels(ROTARY_VLLM, AITER), repos, str(tmp_path / "cache"))
    assert finder.find(_kernels(ROTARY_VLLM, AITER), options) == expected
    models = [{"name": n, "parsed": parse_kernel_name(n, {"platform": "rocm"})} for n in (ROTARY_VLLM, AITER)]
    assert finder.find(models, options) == expected
    got = finder.find([{"name": ROTARY_VLLM, "parsed": None}], options)
    assert got["sources"][ROTARY_VLLM]["source_resolution"] == "exact"


def test_emitted_test_command_runs(tmp_path: Path) -> None:
    """A checkout whose kernel is launched by an op that a test calls: the emitted command, run for real, selects
    exactly that test (and it passes); the unrelated test in the same file is not selected."""
    import os
    import sys

    root = tmp_path / "mylib"
    (root / "mylib").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "mylib" / "__init__.py").write_text("")
    (root / "mylib" / "fake_triton.py").write_text(
        "class _Kernel:\n    def __init__(self, fn):\n        self.fn = fn\n\n"
        "    def __getitem__(self, grid):\n        return self.fn\n\n\n"
        "def jit(fn=None, **options):\n    return _Kernel(fn) if fn else _Kernel\n"
    )
    (root / "mylib" / "kernels.py").write_text(
        "from mylib import fake_triton as triton\n\n\n@triton.jit(\n    do_not_specialize=[],\n)\n"
        "def _scale_kernel(x):\n    return 2 * x\n"
    )
    (root / "mylib" / "ops.py").write_text(
        "from mylib.kernels import _scale_kernel\n\n\ndef scale(x):\n    return _scale_kernel[(1,)](x)\n"
    )
    (root / "tests" / "test_ops.py").write_text(
        "from mylib.ops import scale\n\n\ndef test_scale():\n    assert scale(2) == 4\n\n\n"
        "def test_unrelated():\n    assert True\n"
    )
    row = find_sources(_kernels("_scale_kernel"), [str(root)], str(tmp_path / "cache"))["sources"]["_scale_kernel"]
    assert row["source_resolution"] == "exact" and row["source_file"] == "$MYLIB_DIR/mylib/kernels.py"
    assert row["test_cmd"] == "cd $MYLIB_DIR && python -m pytest tests/test_ops.py::test_scale -q"
    command = row["test_cmd"].split(" && ", 1)[1].split()
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, *command[1:], "-p", "no:cacheprovider"], cwd=root, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_same_kernel_in_two_checkouts_without_evidence_is_ambiguous(repos: list[str], tmp_path: Path) -> None:
    """Nothing in the name, the parse or the launch context says which copy runs: every candidate is listed."""
    source = "import triton\n\n\n@triton.jit\ndef _copied_kernel(x):\n    pass\n"
    for repo, rel in ((repos[1], "python/sglang/srt/copied.py"), (repos[2], "aiter/copied.py")):
        (Path(repo) / rel).write_text(source)
    row = find_sources(_kernels("_copied_kernel"), repos, str(tmp_path / "cache"))["sources"]["_copied_kernel"]
    assert row["source_resolution"] == "ambiguous" and not row.get("source_file")
    assert {c["repo"] for c in row["candidates"]} == {"sglang", "aiter"}
    # the launching frame names sglang's file: that copy runs
    ctx = {"python_frames": ["sglang/srt/copied.py(10): launch", "vllm/v1/worker/gpu_model_runner.py(3102): f"]}
    kernel = {**_kernels("_copied_kernel")[0], "context": ctx}
    row = find_sources([kernel], repos, str(tmp_path / "cache"))["sources"]["_copied_kernel"]
    assert row["source_resolution"] == "exact" and row["source_repo"] == "sglang"
    # only the engine's frames (a CUDA-graph replay from sglang's runner): a preference, not proof
    ctx = {"python_frames": ["torch/cuda/graphs.py(139): replay", "sglang/srt/model_executor/runner.py(9): run"]}
    kernel = {**_kernels("_copied_kernel")[0], "context": ctx}
    row = find_sources([kernel], repos, str(tmp_path / "cache"))["sources"]["_copied_kernel"]
    assert row["source_resolution"] == "probable" and row["source_repo"] == "sglang"
    assert "launch context" in row["notes"]
