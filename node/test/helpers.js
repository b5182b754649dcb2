'use strict';
// Shared by the tests: the package (which installs the globals), a sleep,
// and a child-process runner for the tests that need a process of their own.
const { spawn } = require('node:child_process');
const path = require('node:path');

const api = require('..');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Runs `code` in a new node process with the package loaded as `api` (and the
// globals installed; `load: false` leaves that to the code, with the entry's
// path in `entry`). Resolves {code, signal, stdout, stderr, ms}.
function runChild(code, { timeout = 20000, args = [], load = true } = {}) {
  const entry = path.resolve(__dirname, '..');
  const src = load ? `const api = require(${JSON.stringify(entry)});\n${code}`
    : `const entry = ${JSON.stringify(entry)};\n${code}`;
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const p = spawn(process.execPath, [...args, '-e', src], { env: process.env });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`child timed out; stderr: ${stderr}`)); }, timeout);
    p.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      resolve({ code: exitCode, signal, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

module.exports = { api, sleep, runChild };
