// host/conformance/node-shim.js: the suite's globals under Node
// (`node --require ./node-shim.js --test *.test.js`), for a Node that has
// the ptsched globals installed (the binding in node/: require('../../node')
// installs scheduler, TaskController, TaskSignal, TaskPriorityChangeEvent).
'use strict';
globalThis.test = require('node:test');
globalThis.assert = require('node:assert/strict');
globalThis.sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
require('../../node');
