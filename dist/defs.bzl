"""Packaging helpers: the library's objects as archives, for the installable
shared and static libraries (dist/BUILD.bazel)."""

def _pic_archives_impl(ctx):
    # One archive per cc_library that has sources, taken from the linking
    # context: the position-independent one when Bazel made both (opt), so the
    # same objects serve the shared library and the static archive.
    files = []
    for dep in ctx.attr.deps:
        for li in dep[CcInfo].linking_context.linker_inputs.to_list():
            for lib in li.libraries:
                a = lib.pic_static_library or lib.static_library
                if a and a not in files:
                    files.append(a)
    return [DefaultInfo(files = depset(files))]

pic_archives = rule(
    implementation = _pic_archives_impl,
    attrs = {"deps": attr.label_list(providers = [CcInfo])},
    doc = "The static archives (PIC when available) of deps and their deps.",
)
