# The addon for an installed package, built by node-gyp (npm's bundled copy)
# from the same sources as the repository's Bazel target //node:ptsched.node:
# the binding (src/) and the whole library, copied into csrc/ by
# scripts/pack.js when the package is packed. scripts/install.js runs it.
{
  "targets": [
    {
      "target_name": "ptsched",
      "sources": [
        "src/binding.c",
        "src/engine.cc",
        "<!@(node -p \"require('./scripts/sources.js').list('csrc').join(' ')\")"
      ],
      "include_dirs": ["csrc", "csrc/include"],
      "cflags": [
        # Node's headers as system headers: their own warnings are not ours.
        "-isystem<(node_root_dir)/include/node",
        "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-pthread"
      ],
      "cflags_c": ["-std=gnu11"],
      "cflags_cc": ["-std=gnu++17"],
      "ldflags": ["-pthread"]
    }
  ]
}
