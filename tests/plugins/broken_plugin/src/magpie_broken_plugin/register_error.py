from magpie_core import hookimpl


@hookimpl
def magpie_register_kernel_name_parsers(register):
    raise RuntimeError("deliberately broken while registering")
