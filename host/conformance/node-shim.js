// host/conformance/node-shim.js: the suite's globals under Node, for a Node
// that has the ptsched globals installed (the binding in node/:
// require('../../node') installs scheduler, TaskController, TaskSignal,
// TaskPriorityChangeEvent). node/test/run.sh (`npm test`) runs
// `node --require ../host/conformance/node-shim.js --test` over node/test
// and this suite together; the Node-only files require what they use
// themselves, so the shim is harmless there.
'use strict';
const api = require('../../node');
globalThis.test = require('node:test');
globalThis.assert = require('node:assert/strict');
globalThis.sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// The suite's leak check after its floods: no task or continuation is left
// in the binding's table.
globalThis.assertNoTaskLeft = () => globalThis.assert.equal(api._stats()[0], 0);
