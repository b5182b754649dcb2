'use strict';
// npm install: builds the addon with node-gyp (the copy bundled with npm)
// from the sources in csrc/. Offline when Node's headers are installed with
// Node (Debian's /usr/include/node, or <prefix>/include/node): node-gyp is
// pointed at that prefix (--nodedir), which has the layout it accepts
// (include/node/common.gypi). npm_config_nodedir, if set, wins. In the
// repository (no csrc/) there is nothing to do: Bazel builds the addon there.
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const pkg = path.join(__dirname, '..');
if (!fs.existsSync(path.join(pkg, 'csrc'))) process.exit(0);

function nodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules',
      'node-gyp', 'bin', 'node-gyp.js'),
  ];
  for (const c of candidates) if (c && fs.existsSync(c)) return c;
  try {
    return require.resolve('node-gyp/bin/node-gyp.js');
  } catch {
    throw new Error('ptsched: node-gyp not found (it comes with npm)');
  }
}

const args = [nodeGyp(), 'rebuild'];
if (!process.env.npm_config_nodedir) {
  // Debian's node says node_prefix "/" but installs under /usr: try both.
  const prefixes = [process.config.variables.node_prefix, path.join(path.dirname(process.execPath), '..')];
  const prefix = prefixes.find((p) => p && fs.existsSync(path.join(p, 'include', 'node', 'common.gypi')));
  if (prefix !== undefined) args.push(`--nodedir=${path.resolve(prefix)}`);
}
const r = spawnSync(process.execPath, args, { cwd: pkg, stdio: 'inherit' });
process.exit(r.status === null ? 1 : r.status);
