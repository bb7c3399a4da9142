import magpie_this_module_does_not_exist  # noqa: F401  (deliberately broken)
