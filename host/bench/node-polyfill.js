// host/bench/node-polyfill.js: `node -r ./node-polyfill.js W.js` runs a
// workload under Node with the scheduler-polyfill package (npm; resolved
// from NODE_PATH), which installs globalThis.scheduler and TaskController.
'use strict';
globalThis.self = globalThis;
require('scheduler-polyfill');
// The polyfill's MessageChannel keeps Node's loop alive after the work:
// leave once the workload printed its result line.
const log = console.log;
console.log = (...a) => {
  log(...a);
  if (typeof a[0] === 'string' && a[0].startsWith('{"bench"')) process.exit(0);
};
