'use strict';
// scheduler.postTask() in Node: what only Node has (the package's exports,
// process.nextTick). The runtime-neutral checks of post-task, the WPT
// re-expressions, are host/conformance/post-task.test.js, which run.sh runs
// too (docs/node.md, "Tests").
const test = require('node:test');
const assert = require('node:assert/strict');
const { api } = require('./helpers.js');

test('the globals are installed and are the package exports', () => {
  assert.equal(globalThis.scheduler, api.scheduler);
  assert.equal(globalThis.TaskController, api.TaskController);
  assert.equal(globalThis.TaskSignal, api.TaskSignal);
  assert.equal(globalThis.TaskPriorityChangeEvent, api.TaskPriorityChangeEvent);
  assert.ok(scheduler instanceof Scheduler);
});

test('process.nextTick in a task runs before its promise jobs, before the result settles and the next task', async () => {
  // Node's nextTick queue runs first in each checkpoint.
  const order = [];
  const first = scheduler.postTask(() => {
    process.nextTick(() => order.push('a-tick'));
    queueMicrotask(() => order.push('a-microtask'));
    order.push('a');
  });
  const second = scheduler.postTask(() => order.push('b'));
  await Promise.all([first, second]);
  assert.deepEqual(order, ['a', 'a-tick', 'a-microtask', 'b']);
  const ids = [];
  await scheduler.postTask(() => {
    Promise.resolve().then(() => ids.push('p1')).then(() => ids.push('p2'));
    process.nextTick(() => ids.push('tick'));
    return 'v';
  }).then((v) => ids.push(`fulfilled ${v}`));
  assert.deepEqual(ids, ['tick', 'p1', 'p2', 'fulfilled v']);
});
