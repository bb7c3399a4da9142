"""AMD Magpie's offline ``run_cmd`` workloads for ``magpie benchmark`` (see :mod:`magpie_run_cmd.plugin`)."""
