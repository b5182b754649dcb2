'use strict';
// npm prepack/postpack: `node scripts/pack.js copy` puts the library's C
// sources (scripts/sources.js) into csrc/ so the tarball builds without the
// repository; `node scripts/pack.js clean` removes them again.
const fs = require('node:fs');
const path = require('node:path');
const { files } = require('./sources.js');

const pkg = path.join(__dirname, '..');
const repo = path.join(pkg, '..');
const csrc = path.join(pkg, 'csrc');

fs.rmSync(csrc, { recursive: true, force: true });
if (process.argv[2] === 'copy') {
  const list = files(repo);
  if (list.length === 0) throw new Error(`no library sources under ${repo}`);
  for (const f of list) {
    fs.mkdirSync(path.dirname(path.join(csrc, f)), { recursive: true });
    fs.copyFileSync(path.join(repo, f), path.join(csrc, f));
  }
}
