// host/bench/node-ptsched.js: `node -r ./node-ptsched.js W.js` runs a
// workload of this folder under Node with the ptsched binding's globals.
'use strict';
require('../../node');
