"""A plugin whose hook name is misspelt: magpie must fail it loudly, naming the hook, never ignore it."""

from magpie_core import hookimpl


@hookimpl
def magpie_register_kernel_backend(register):  # the hook is magpie_register_kernel_backends
    raise AssertionError("never called")
