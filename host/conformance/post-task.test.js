'use strict';
// scheduler.postTask(), re-expressing the intent of WPT scheduler/post-task-*
// and scheduler-replaceable from the spec's words (not the WPT code).
// Runtime-neutral (docs/host.md, "One suite, two runtimes"): uses only the
// globals test, assert, sleep and assertNoTaskLeft (harness.js in ptsched-host,
// node-shim.js under Node) and the web API. Node-only cases: node/test.

test('the globals are installed', () => {
  for (const name of ['scheduler', 'TaskController', 'TaskSignal', 'TaskPriorityChangeEvent',
    'AbortController', 'AbortSignal', 'EventTarget', 'Event', 'DOMException']) {
    assert.ok(name in globalThis, name);
  }
  assert.ok(scheduler instanceof Scheduler);
  assert.throws(() => new Scheduler(), TypeError);
});


test('post-task-result-success: the promise fulfils with the callback result', async () => {
  assert.equal(await scheduler.postTask(() => 1234), 1234);
  const obj = {};
  assert.equal(await scheduler.postTask(() => obj), obj);
  // A returned promise is adopted, as with any resolution.
  assert.equal(await scheduler.postTask(() => Promise.resolve('inner')), 'inner');
});

test('post-task-result-throws: the promise rejects with what the callback threw', async () => {
  const err = new Error('boom');
  await assert.rejects(scheduler.postTask(() => { throw err; }), (e) => e === err);
  await assert.rejects(scheduler.postTask(() => { throw 7; }), (e) => e === 7);
});

test('post-task-run-order: equal priorities run in posting order, priorities in order', async () => {
  const order = [];
  const ps = [];
  for (const [id, priority] of [['B1', 'background'], ['UV1', 'user-visible'],
    ['UB1', 'user-blocking'], ['B2', 'background'], ['UV2', 'user-visible'],
    ['UB2', 'user-blocking']]) {
    ps.push(scheduler.postTask(() => order.push(id), { priority }));
  }
  await Promise.all(ps);
  assert.deepEqual(order, ['UB1', 'UB2', 'UV1', 'UV2', 'B1', 'B2']);
});

test('post-task-without-signals: the default priority is user-visible', async () => {
  const order = [];
  const ps = [
    scheduler.postTask(() => order.push('bg'), { priority: 'background' }),
    scheduler.postTask(() => order.push('default')),
    scheduler.postTask(() => order.push('ub'), { priority: 'user-blocking' }),
    scheduler.postTask(() => order.push('uv'), { priority: 'user-visible' }),
  ];
  await Promise.all(ps);
  assert.deepEqual(order, ['ub', 'default', 'uv', 'bg']);
});

test('post-task callbacks run as separate tasks: microtasks in between', async () => {
  const order = [];
  await Promise.all([
    scheduler.postTask(() => {
      order.push('a');
      Promise.resolve().then(() => order.push('a-microtask'));
    }),
    scheduler.postTask(() => order.push('b')),
  ]);
  assert.deepEqual(order, ['a', 'a-microtask', 'b']);
  // The promise of a task settles before the next task runs, whichever way
  // it settles (the addon fulfils the undefined results, run() the rest),
  // and so does a yield continuation's (which runs first: continuations
  // come before tasks of their priority).
  const seen = [];
  const p1 = scheduler.postTask(() => 1);
  p1.then(() => seen.push('p1-then'));
  const p2 = scheduler.postTask(() => { seen.push('task2'); });
  p2.then((v) => seen.push(`p2-then ${v}`));
  const p3 = scheduler.postTask(() => { throw new Error('p3'); });
  p3.catch(() => seen.push('p3-catch'));
  const p4 = scheduler.yield();
  p4.then((v) => seen.push(`p4-then ${v}`));
  const p5 = scheduler.postTask(() => seen.push('task5'));
  await Promise.all([p1, p2, p3.catch(() => {}), p4, p5]);
  assert.deepEqual(seen, ['p4-then undefined', 'p1-then', 'task2', 'p2-then undefined',
                          'p3-catch', 'task5']);
});

test('post-task-delay: a delayed task runs after at least its delay', async () => {
  const t0 = performance.now();
  await scheduler.postTask(() => {}, { delay: 50 });
  assert.ok(performance.now() - t0 >= 49, `ran after ${performance.now() - t0} ms`);
  // Delays order tasks across priorities; a zero delay is no delay.
  const order = [];
  await Promise.all([
    scheduler.postTask(() => order.push('ub-80'), { delay: 80, priority: 'user-blocking' }),
    scheduler.postTask(() => order.push('bg-10'), { delay: 10, priority: 'background' }),
    scheduler.postTask(() => order.push('bg-0'), { delay: 0, priority: 'background' }),
  ]);
  assert.deepEqual(order, ['bg-0', 'bg-10', 'ub-80']);
});

test('post-task-delay: WebIDL [EnforceRange] on delay and enum priority', async () => {
  await assert.rejects(scheduler.postTask(() => {}, { delay: -1 }), TypeError);
  await assert.rejects(scheduler.postTask(() => {}, { delay: NaN }), TypeError);
  await assert.rejects(scheduler.postTask(() => {}, { delay: Infinity }), TypeError);
  await assert.rejects(scheduler.postTask(() => {}, { priority: 'urgent' }), TypeError);
  await assert.rejects(scheduler.postTask(() => {}, { signal: {} }), TypeError);
  await assert.rejects(scheduler.postTask('not a function'), TypeError);
  assert.equal(await scheduler.postTask(() => 'x', { delay: 1.9 }), 'x');
});

test('post-task-with-abort-signal: aborting before the task runs rejects it', async () => {
  const ac = new AbortController();
  let ran = false;
  const p = scheduler.postTask(() => { ran = true; }, { signal: ac.signal });
  ac.abort();
  await assert.rejects(p, (e) => e instanceof DOMException && e.name === 'AbortError');
  await scheduler.postTask(() => {}, { priority: 'background' });
  assert.equal(ran, false);
});

test('post-task-abort-reason: the rejection is the signal\'s abort reason', async () => {
  const tc = new TaskController();
  const reason = new Error('my reason');
  const p = scheduler.postTask(() => {}, { signal: tc.signal });
  tc.abort(reason);
  await assert.rejects(p, (e) => e === reason);
  const ac = new AbortController();
  const p2 = scheduler.postTask(() => {}, { signal: ac.signal, delay: 20 });
  ac.abort('a string');
  await assert.rejects(p2, (e) => e === 'a string');
});

test('post-task-with-aborted-signal: an already aborted signal rejects at once', async () => {
  let ran = false;
  const reason = { why: 1 };
  const p = scheduler.postTask(() => { ran = true; }, { signal: AbortSignal.abort(reason) });
  await assert.rejects(p, (e) => e === reason);
  const tc = new TaskController();
  tc.abort();
  await assert.rejects(scheduler.postTask(() => { ran = true; }, { signal: tc.signal }),
    { name: 'AbortError' });
  await sleep(5);
  assert.equal(ran, false);
});

test('post-task-with-abort-signal-in-handler: an abort in the sync callback rejects the task', async () => {
  // spec: the task's abort steps stay attached until the task completes, so
  // an abort while the callback runs rejects the result with the reason.
  const tc = new TaskController();
  let outcome;
  await scheduler.postTask(() => { tc.abort(); return 'returned'; }, { signal: tc.signal })
    .then((v) => { outcome = `fulfilled ${v}`; }, (e) => { outcome = `rejected ${e.name}`; });
  assert.equal(outcome, 'rejected AbortError');
  assert.equal(tc.signal.aborted, true);
  // The rejection is the abort's reason, and comes at the abort: a reaction
  // registered inside the callback runs in the callback's own checkpoint.
  const tc2 = new TaskController();
  const seen = [];
  const p = scheduler.postTask(() => {
    p.catch((e) => seen.push(`rejected ${e}`));
    tc2.abort('why');
    queueMicrotask(() => seen.push('microtask'));
    seen.push('returned');
    return 1;
  }, { signal: tc2.signal });
  await assert.rejects(p, (e) => e === 'why');
  assert.deepEqual(seen, ['returned', 'rejected why', 'microtask']);
});

test('post-task-with-abort-signal-in-handler: an abort after an await (a timer) does not reject', async () => {
  // The WPT's second case: the callback returned its promise before the abort,
  // so the task had completed; the result follows the callback's promise.
  const tc = new TaskController();
  const r = await scheduler.postTask(async () => {
    await new Promise((resolve) => setTimeout(resolve, 0));
    tc.abort();
    return 'done';
  }, { signal: tc.signal });
  assert.equal(r, 'done');
});

test('an abort in the callback\'s microtasks rejects the task (the checkpoint comes first)', async () => {
  const tc = new TaskController();
  await assert.rejects(
    scheduler.postTask(() => { queueMicrotask(() => tc.abort('r')); return 1; }, { signal: tc.signal }),
    (e) => e === 'r');
  // The same with an abort from a promise reaction, through a dependent signal.
  const tc2 = new TaskController();
  const dep = TaskSignal.any([tc2.signal]);
  await assert.rejects(
    scheduler.postTask(() => { Promise.resolve().then(() => tc2.abort('d')); return 1; }, { signal: dep }),
    (e) => e === 'd');
  // ... and through a plain AbortSignal.
  const ac = new AbortController();
  await assert.rejects(
    scheduler.postTask(() => { ac.abort('n'); return 1; }, { signal: ac.signal }),
    (e) => e === 'n');
});

test('the result settles after the callback\'s microtask checkpoint', async () => {
  // spec: "clean up after running script" (the checkpoint) comes before the
  // result is resolved: m2, queued by m1, runs before the rejection's handler.
  const ids = [];
  await scheduler.postTask(() => {
    queueMicrotask(() => { ids.push('m1'); queueMicrotask(() => ids.push('m2')); });
    throw new Error('boom');
  }).catch((e) => ids.push(`rejected ${e.message}`));
  assert.deepEqual(ids, ['m1', 'm2', 'rejected boom']);
  const ids2 = [];
  await scheduler.postTask(() => {
    Promise.resolve().then(() => ids2.push('p1')).then(() => ids2.push('p2'));
    return 'v';
  }).then((v) => ids2.push(`fulfilled ${v}`));
  assert.deepEqual(ids2, ['p1', 'p2', 'fulfilled v']);
  // The result's reactions still run before the next task.
  const ids3 = [];
  const a = scheduler.postTask(() => ids3.push('a')).then(() => ids3.push('a settled'));
  const b = scheduler.postTask(() => ids3.push('b'));
  await Promise.all([a, b]);
  assert.deepEqual(ids3, ['a', 'a settled', 'b']);
});

test('post-task-with-signal-and-priority: the priority option wins over the signal', async () => {
  const order = [];
  const tc = new TaskController({ priority: 'user-blocking' });
  await Promise.all([
    scheduler.postTask(() => order.push('bg-with-ub-signal'), { signal: tc.signal, priority: 'background' }),
    scheduler.postTask(() => order.push('uv')),
  ]);
  assert.deepEqual(order, ['uv', 'bg-with-ub-signal']);
  // ... and setPriority on that signal no longer moves the task.
  const order2 = [];
  const tc2 = new TaskController({ priority: 'background' });
  const ps = [
    scheduler.postTask(() => order2.push('fixed-bg'), { signal: tc2.signal, priority: 'background' }),
    scheduler.postTask(() => order2.push('uv')),
  ];
  tc2.setPriority('user-blocking');
  await Promise.all(ps);
  assert.deepEqual(order2, ['uv', 'fixed-bg']);
  // The signal still aborts it.
  const tc3 = new TaskController();
  const p = scheduler.postTask(() => {}, { signal: tc3.signal, priority: 'user-blocking' });
  tc3.abort();
  await assert.rejects(p, { name: 'AbortError' });
});

test('scheduler-replaceable: globalThis.scheduler can be replaced', () => {
  const saved = globalThis.scheduler;
  globalThis.scheduler = 'replaced';
  assert.equal(globalThis.scheduler, 'replaced');
  globalThis.scheduler = saved;
  assert.equal(globalThis.scheduler, saved);
});

test('AbortSignal.timeout() aborts pending tasks with a TimeoutError', async () => {
  const p = scheduler.postTask(() => 'late', { signal: AbortSignal.timeout(5), delay: 1000 });
  await assert.rejects(p, { name: 'TimeoutError' });
});

test('many pending tasks: each keeps its own callback, state and promise', async () => {
  // Enough pending tasks that their slots span several chunks of the task
  // table, with state (signal, priority) and aborts on the later ones.
  const N = 3000;
  const plain = [];
  for (let i = 0; i < N; i++) plain.push(scheduler.postTask(() => i));
  const tc = new TaskController({ priority: 'background' });
  const aborted = [];
  for (let i = 0; i < N; i++) {
    aborted.push(scheduler.postTask(() => 'ran', { signal: tc.signal })
      .then(() => 'fulfilled', (e) => e));
  }
  // The last task's state (its signal) is what yield() inherits.
  // (The abort also rejects the task itself, which is still running.)
  const other = new TaskController();
  let yielded;
  const inherits = scheduler.postTask(async () => {
    other.abort('other');
    yielded = await scheduler.yield().then(() => 'fulfilled', (e) => e);
  }, { signal: other.signal, priority: 'user-blocking' }).then(() => 'fulfilled', (e) => e);
  tc.abort('stop');
  const results = await Promise.all(plain);
  assert.deepEqual(results, Array.from({ length: N }, (_, i) => i));
  const reasons = await Promise.all(aborted);
  assert.ok(reasons.every((r) => r === 'stop'));
  assert.equal(await inherits, 'other');
  assert.equal(yielded, 'other');
  assertNoTaskLeft();
});

// The WPT checks the tests above re-express in their own way, as the WPT
// states them.
test('post-task-without-signals (WPT): each priority option runs and returns', async () => {
  for (const priority of ['user-blocking', 'user-visible', 'background']) {
    assert.equal(await scheduler.postTask(() => priority, { priority }), priority);
  }
});

test('post-task-abort-reason (WPT): all four cases, TaskSignal and AbortSignal, before and after posting', async () => {
  for (const C of [TaskController, AbortController]) {
    const reason = new Error('Custom Abort Error');
    const aborted = new C();
    aborted.abort(reason);
    await assert.rejects(scheduler.postTask(() => {}, { signal: aborted.signal }), (e) => e === reason);
    const later = new C();
    const result = scheduler.postTask(() => {}, { signal: later.signal });
    later.abort(reason);
    await assert.rejects(result, (e) => e === reason);
  }
});

test('post-task-delay (WPT): a user-blocking task with a 10 ms delay', async () => {
  const start = performance.now();
  await scheduler.postTask(() => {
    assert.ok(performance.now() - start >= 10, `ran after ${performance.now() - start} ms`);
  }, { priority: 'user-blocking', delay: 10 });
});

test('post-task-with-signal-and-priority (WPT): a user-blocking option beats a background signal', async () => {
  const task1 = scheduler.postTask(() => 'task1', { priority: 'user-visible' });
  const controller = new TaskController({ priority: 'background' });
  const task2 = scheduler.postTask(() => 'task2', { priority: 'user-blocking', signal: controller.signal });
  assert.equal(await Promise.race([task1, task2]), 'task2');
});

test('scheduler-replaceable (WPT): assigning the global binding replaces it', () => {
  const saved = globalThis.scheduler;
  // eslint-disable-next-line no-global-assign
  scheduler = 'replaced';
  assert.equal(globalThis.scheduler, 'replaced');
  globalThis.scheduler = saved;
});
