'use strict';
// The package entry: installs scheduler, Scheduler, TaskController,
// TaskSignal and TaskPriorityChangeEvent on globalThis and exports them.
const api = require('./lib/ptsched.js');

api.install(globalThis);
module.exports = api;
