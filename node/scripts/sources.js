'use strict';
// The library's sources as the package carries them: the folders of the
// Bazel target //:ptsched (include/, sync/, loop/, sched/, agents/), .c and
// .h files only. Used by pack.js (copy into csrc/) and binding.gyp (compile).
const fs = require('node:fs');
const path = require('node:path');

const DIRS = ['include', 'sync', 'loop', 'sched', 'agents'];

// Every file of DIRS under root, relative to root, sorted.
function walk(root, rel, out) {
  for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
    const r = path.join(rel, e.name);
    if (e.isDirectory()) walk(root, r, out);
    else if (/\.[ch]$/.test(e.name)) out.push(r);
  }
  return out;
}

function files(root) {
  return DIRS.flatMap((d) => walk(root, d, [])).sort();
}

// The .c files to compile, as paths under prefix.
function list(prefix) {
  return files(path.join(__dirname, '..', prefix)).filter((f) => f.endsWith('.c'))
    .map((f) => path.join(prefix, f));
}

module.exports = { DIRS, files, list };
