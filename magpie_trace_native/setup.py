"""Builds the compiled trace readers; everything else is in pyproject.toml.

``optional=True``: without a C compiler the install still succeeds, with no extension built, and magpie-trace reads
traces with msgspec alone (``magpie_trace.native.reader_status()`` then says why)."""

from setuptools import Extension, setup

SRC = "src/magpie_trace_native"

setup(
    ext_modules=[
        Extension(
            "magpie_trace_native._kineto_scan",
            [f"{SRC}/_kineto_scan.c"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
        # the same tokenizer (it includes _kineto_scan.c), building a sink's own event objects for the kept events
        Extension(
            "magpie_trace_native._kineto_kept",
            [f"{SRC}/_kineto_kept.c"],
            depends=[f"{SRC}/_kineto_scan.c"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
    ]
)
