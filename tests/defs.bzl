"""Test rules for ptsched: every test links GoogleTest, the allocator choice and
the sanitizer defaults, so test targets are declared from a table."""

load("@rules_cc//cc:defs.bzl", "cc_test")

def pts_test(name, srcs, deps = [], size = "small", tags = [], **kwargs):
    cc_test(
        name = name,
        srcs = srcs,
        size = size,
        tags = tags,
        deps = deps + [
            "//:ptsched",
            "//:allocator",
            "//tests:support",
        ],
        linkopts = ["-lgtest", "-lgtest_main", "-lpthread"],
        **kwargs
    )

def pts_test_table(table):
    """table: dict name -> dict(srcs=..., deps=..., size=..., tags=...)."""
    for name, attrs in table.items():
        pts_test(name = name, **attrs)
