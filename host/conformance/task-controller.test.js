'use strict';
// TaskController, TaskSignal, setPriority, onprioritychange and
// TaskPriorityChangeEvent: the intent of WPT scheduler/task-controller-* and
// task-signal-onprioritychange, from the spec's words.
// Runtime-neutral (docs/host.md, "One suite, two runtimes"): uses only the
// globals test, assert, sleep and assertNoTaskLeft (harness.js in ptsched-host,
// node-shim.js under Node) and the web API. Node-only cases: node/test.

test('TaskController makes a TaskSignal that is an AbortSignal', () => {
  const tc = new TaskController();
  assert.ok(tc instanceof AbortController);
  assert.ok(tc.signal instanceof TaskSignal);
  assert.ok(tc.signal instanceof AbortSignal);
  assert.ok(tc.signal instanceof EventTarget);
  assert.equal(tc.signal.priority, 'user-visible');
  assert.equal(tc.signal.aborted, false);
  assert.equal(new TaskController({ priority: 'background' }).signal.priority, 'background');
  assert.equal(new TaskController({}).signal.priority, 'user-visible');
  assert.throws(() => new TaskController({ priority: 'soon' }), TypeError);
  assert.throws(() => new TaskSignal(), TypeError);
  assert.equal(tc.signal.onprioritychange, null);
});

test('task-controller-abort-signal-and-priority: abort and priority events on one signal', async () => {
  const tc = new TaskController({ priority: 'background' });
  const events = [];
  tc.signal.addEventListener('abort', () => events.push('abort'));
  tc.signal.addEventListener('prioritychange', (e) => events.push(`prioritychange:${e.previousPriority}`));
  tc.setPriority('user-blocking');
  assert.equal(tc.signal.priority, 'user-blocking');
  tc.abort();
  assert.equal(tc.signal.aborted, true);
  assert.equal(tc.signal.reason.name, 'AbortError');
  assert.deepEqual(events, ['prioritychange:background', 'abort']);
  // AbortSignal.any() follows a TaskSignal.
  const tc2 = new TaskController();
  const dep = AbortSignal.any([tc2.signal]);
  tc2.abort('r');
  assert.equal(dep.aborted, true);
  assert.equal(dep.reason, 'r');
});

test('task-controller-abort1: abort rejects every pending task of the signal, others run', async () => {
  const tc = new TaskController();
  const ran = [];
  const aborted = [];
  for (let i = 0; i < 5; i++) {
    scheduler.postTask(() => ran.push(`tc${i}`), { signal: tc.signal })
      .catch((e) => aborted.push(e.name));
  }
  const other = scheduler.postTask(() => ran.push('other'));
  tc.abort();
  await other;
  await sleep(1);
  assert.deepEqual(ran, ['other']);
  assert.deepEqual(aborted, Array(5).fill('AbortError'));
});

test('task-controller-abort2: aborting one controller rejects only its task', async () => {
  const controllers = [];
  const results = [];
  for (let i = 0; i < 5; i++) {
    const c = new TaskController();
    controllers.push(c);
    results.push(scheduler.postTask(() => i, { signal: c.signal }));
  }
  const aborted = results.splice(2, 1)[0];
  controllers[2].abort();
  await assert.rejects(aborted, { name: 'AbortError' });
  assert.equal((await Promise.all(results)).toString(), '0,1,3,4');
});

test('an abort while a task of the signal runs rejects it and the pending ones, in abort-step order', async () => {
  const tc = new TaskController();
  const ran = [];
  const results = [];
  const ps = [];
  for (let i = 0; i < 4; i++) {
    ps.push(scheduler.postTask(() => {
      ran.push(i);
      if (i === 1) tc.abort();
      return i;
    }, { signal: tc.signal }).then((v) => results.push(`ok${v}`), (e) => results.push(`${e.name}${i}`)));
  }
  await Promise.all(ps);
  assert.deepEqual(ran, [0, 1]);
  // The running task's abort steps were added first, so it is rejected first.
  assert.deepEqual(results, ['ok0', 'AbortError1', 'AbortError2', 'AbortError3']);
  // A running task whose steps were added last is rejected last.
  const tc2 = new TaskController({ priority: 'background' });
  const results2 = [];
  const ps2 = [
    scheduler.postTask(() => 'bg', { signal: tc2.signal }),
    scheduler.postTask(() => { tc2.abort(); }, { signal: tc2.signal, priority: 'user-blocking' }),
  ];
  ps2[0].catch(() => results2.push('pending'));
  ps2[1].catch(() => results2.push('running'));
  await Promise.allSettled(ps2);
  assert.deepEqual(results2, ['pending', 'running']);
});

test('task-controller-setPriority1: setPriority moves pending tasks', async () => {
  const order = [];
  const tc1 = new TaskController({ priority: 'background' });
  const tc2 = new TaskController({ priority: 'user-blocking' });
  const ps = [
    scheduler.postTask(() => order.push('a1'), { signal: tc1.signal }),
    scheduler.postTask(() => order.push('b1'), { signal: tc2.signal }),
    scheduler.postTask(() => order.push('a2'), { signal: tc1.signal }),
    scheduler.postTask(() => order.push('b2'), { signal: tc2.signal }),
    scheduler.postTask(() => order.push('uv')),
  ];
  tc1.setPriority('user-blocking');
  tc2.setPriority('background');
  await Promise.all(ps);
  // a1/a2 are now user-blocking, b1/b2 background; equal priorities keep
  // their posting order.
  assert.deepEqual(order, ['a1', 'a2', 'uv', 'b1', 'b2']);
});

test('task-controller-setPriority-delayed-task: a delayed task runs at its signal\'s new priority', async () => {
  const order = [];
  const tc = new TaskController({ priority: 'background' });
  const ps = [scheduler.postTask(() => order.push('delayed'), { signal: tc.signal, delay: 20 })];
  tc.setPriority('user-blocking');
  await sleep(30);
  // By now the delayed task is due; it must run before user-visible work
  // posted in the same turn.
  ps.push(scheduler.postTask(() => order.push('uv')));
  await Promise.all(ps);
  assert.deepEqual(order, ['delayed', 'uv']);
});

test('task-controller-setPriority-repeated: one event per actual change', () => {
  const tc = new TaskController();
  const seen = [];
  tc.signal.addEventListener('prioritychange', (e) => seen.push([e.previousPriority, tc.signal.priority]));
  tc.setPriority('user-visible'); // same priority: no event
  tc.setPriority('background');
  tc.setPriority('background');
  tc.setPriority('user-blocking');
  tc.setPriority('user-visible');
  assert.deepEqual(seen, [['user-visible', 'background'], ['background', 'user-blocking'],
    ['user-blocking', 'user-visible']]);
  assert.throws(() => tc.setPriority('nope'), TypeError);
});

test('task-controller-setPriority-recursive: setPriority inside prioritychange throws NotAllowedError', () => {
  const tc = new TaskController();
  let error;
  tc.signal.onprioritychange = () => {
    try { tc.setPriority('background'); } catch (e) { error = e; }
  };
  tc.setPriority('user-blocking');
  assert.ok(error instanceof DOMException);
  assert.equal(error.name, 'NotAllowedError');
  assert.equal(tc.signal.priority, 'user-blocking');
  // Once the dispatch is over, changes are allowed again.
  tc.signal.onprioritychange = null;
  tc.setPriority('background');
  assert.equal(tc.signal.priority, 'background');
});

test('task-signal-onprioritychange: the handler gets a TaskPriorityChangeEvent', () => {
  const tc = new TaskController({ priority: 'user-visible' });
  let event;
  let thisValue;
  let priorityInside;
  tc.signal.onprioritychange = function (e) { event = e; thisValue = this; priorityInside = tc.signal.priority; };
  assert.equal(typeof tc.signal.onprioritychange, 'function');
  tc.setPriority('background');
  assert.ok(event instanceof TaskPriorityChangeEvent);
  assert.ok(event instanceof Event);
  assert.equal(event.type, 'prioritychange');
  assert.equal(event.previousPriority, 'user-visible');
  assert.equal(event.target, tc.signal);
  assert.equal(thisValue, tc.signal);
  assert.equal(priorityInside, 'background');
  // The handler keeps its place among listeners.
  const order = [];
  tc.signal.addEventListener('prioritychange', () => order.push('listener'));
  tc.signal.onprioritychange = () => order.push('handler');
  tc.setPriority('user-blocking');
  assert.deepEqual(order, ['handler', 'listener']);
});

test('TaskPriorityChangeEvent constructor: previousPriority is required and an enum', () => {
  const e = new TaskPriorityChangeEvent('prioritychange', { previousPriority: 'background' });
  assert.equal(e.previousPriority, 'background');
  assert.equal(e.type, 'prioritychange');
  assert.throws(() => new TaskPriorityChangeEvent('x'), TypeError);
  assert.throws(() => new TaskPriorityChangeEvent('x', {}), TypeError);
  assert.throws(() => new TaskPriorityChangeEvent('x', { previousPriority: 'later' }), TypeError);
});

// The WPT checks the tests above re-express in their own way, as the WPT
// states them.
test('task-controller-setPriority1 (WPT): five tasks on a default signal set to background', async () => {
  const controller = new TaskController();
  const runOrder = [];
  const tasks = [];
  for (let i = 0; i < 5; i++) tasks.push(scheduler.postTask(() => runOrder.push(i), { signal: controller.signal }));
  tasks.push(scheduler.postTask(() => runOrder.push(5), { priority: 'user-blocking' }));
  tasks.push(scheduler.postTask(() => runOrder.push(6), { priority: 'user-visible' }));
  controller.setPriority('background');
  assert.equal(controller.signal.priority, 'background');
  await Promise.all(tasks);
  assert.equal(runOrder.toString(), '5,6,0,1,2,3,4');
});

test('task-controller-setPriority-repeated (WPT): repeated calls move the tasks each time', async () => {
  const post = (controller, runOrder) => [
    scheduler.postTask(() => runOrder.push(0), { signal: controller.signal }),
    scheduler.postTask(() => runOrder.push(1), { priority: 'user-blocking' }),
    scheduler.postTask(() => runOrder.push(2), { priority: 'user-visible' }),
  ];
  const controller = new TaskController();
  let runOrder = [];
  let tasks = post(controller, runOrder);
  controller.setPriority('background');
  await Promise.all(tasks);
  assert.equal(runOrder.toString(), '1,2,0');
  runOrder = [];
  tasks = post(controller, runOrder);
  controller.setPriority('user-blocking');
  await Promise.all(tasks);
  assert.equal(runOrder.toString(), '0,1,2');
  const c2 = new TaskController();
  runOrder = [];
  tasks = post(c2, runOrder);
  for (const p of ['background', 'user-visible', 'user-blocking']) {
    c2.setPriority(p);
    assert.equal(c2.signal.priority, p);
  }
  await Promise.all(tasks);
  assert.equal(runOrder.toString(), '0,1,2');
});

test('task-controller-setPriority-delayed-task (WPT): a priority change does not shorten the delay', async () => {
  let count = 0;
  const start = performance.now();
  const controller = new TaskController({ priority: 'background' });
  const t1 = scheduler.postTask(() => {
    assert.equal(++count, 1);
    controller.setPriority('user-blocking');
  }, { priority: 'user-blocking', delay: 10 });
  const t2 = scheduler.postTask(() => {
    assert.equal(++count, 2);
    assert.ok(performance.now() - start >= 19.5, `ran after ${performance.now() - start} ms`);
  }, { signal: controller.signal, delay: 20 });
  await Promise.all([t1, t2]);
});

test('task-controller-setPriority-recursive and onprioritychange (WPT): the new priority inside the handler', () => {
  const controller = new TaskController();
  let inside;
  let target;
  controller.signal.onprioritychange = (e) => {
    inside = controller.signal.priority;
    target = e.target.priority;
    assert.throws(() => controller.setPriority('user-blocking'), { name: 'NotAllowedError' });
  };
  controller.setPriority('background');
  assert.equal(inside, 'background');
  assert.equal(target, 'background');
});

test('task-controller-abort-signal-and-priority (WPT): a priority option does not stop the abort', async () => {
  const controller = new TaskController();
  const t1 = scheduler.postTask(() => {}, { signal: controller.signal });
  const t2 = scheduler.postTask(() => {}, { priority: 'background', signal: controller.signal });
  controller.abort();
  await assert.rejects(t1, { name: 'AbortError' });
  await assert.rejects(t2, { name: 'AbortError' });
});
