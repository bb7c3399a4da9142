"""magpie's serving benchmark (the ``magpie-benchmark`` distribution).

``magpie benchmark`` drives an OpenAI-compatible LLM server with a streaming load and reports what it
measured. The pieces, each usable on its own:

- :mod:`magpie_benchmark.pipeline`: the run, step by step (server, load points, repeats, diagnostic capture, checks,
  report), each step in its own module: :mod:`~magpie_benchmark.benchmark_server` (the run's server and GPUs),
  :mod:`~magpie_benchmark.workload` (load points, requests, traces), :mod:`~magpie_benchmark.measure` (the points
  measured), :mod:`~magpie_benchmark.diagnostic` (profiled captures, trace analyses), :mod:`~magpie_benchmark.checks`,
  :mod:`~magpie_benchmark.report` (``benchmark_report.json``)
- :mod:`magpie_benchmark.run_config`: a benchmark YAML loaded, and the command line's overrides over it
- :mod:`magpie_benchmark.config`: the ``benchmark:`` block (AMD Magpie's benchmark YAML loads unchanged)
- :mod:`magpie_benchmark.loadgen`: the load generator (datasets, arrival process, streaming client, metrics)
- :mod:`magpie_benchmark.serving`: the engine-neutral server lifecycle (processes, containers, GPU leases)
- :mod:`magpie_benchmark.stats`: repeat statistics and the verdict of two runs (``--compare``)
- :mod:`magpie_benchmark.amd_magpie`: the AMD Magpie benchmark mappings (:mod:`~magpie_benchmark.amd_magpie_keys`: what
  magpie does with every key of AMD Magpie's benchmark YAML)
- :mod:`magpie_benchmark.interfaces`: what an offline framework and a benchmark check provide (the kinds only
  this distribution runs)

Serving engines are plugins of kind ``serving_framework`` (:class:`magpie_benchmark.interfaces.ServingFramework`);
the command arrives on the ``magpie`` command line through ``magpie_register_commands``, as any plugin's would.
"""
