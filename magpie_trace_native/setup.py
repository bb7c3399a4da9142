"""Builds the optional compiled trace reader; everything else is in pyproject.toml.

``optional=True``: without a C compiler the install still succeeds and magpie reads traces with msgspec alone
(:mod:`magpie_core.trace.native`)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "magpie_core.trace._kineto_scan",
            ["magpie_core/trace/_kineto_scan.c"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
        # the same tokenizer (it includes _kineto_scan.c), building a sink's own event objects for the kept events
        Extension(
            "magpie_core.trace._kineto_kept",
            ["magpie_core/trace/_kineto_kept.c"],
            depends=["magpie_core/trace/_kineto_scan.c"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
    ]
)
