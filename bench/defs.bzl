"""Benchmark rule for ptsched: every Google Benchmark binary links the library,
the allocator choice and Google Benchmark. Run them with --config=opt."""

load("@rules_cc//cc:defs.bzl", "cc_binary")

def pts_benchmark(name, srcs, deps = ["//:ptsched"], linkopts = [], **kwargs):
    cc_binary(
        name = name,
        srcs = srcs,
        deps = deps + ["//:allocator", "//bench:bench_loop"],
        linkopts = linkopts + ["-lbenchmark", "-lpthread"],
        **kwargs
    )
