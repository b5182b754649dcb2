// TaskSignal.any(): the intent of WPT scheduler/task-signal-any-*.tentative.
// Runtime-neutral: uses only the globals test, assert and sleep (harness.js in
// ptsched-host, node-shim.js under Node) and the web API.

test('task-signal-any-abort: the result aborts with the first source that aborts', async () => {
  const a = new AbortController();
  const b = new TaskController();
  const any = TaskSignal.any([a.signal, b.signal]);
  assert.ok(any instanceof TaskSignal);
  assert.ok(any instanceof AbortSignal);
  assert.equal(any.priority, 'user-visible');
  assert.equal(any.aborted, false);
  let events = 0;
  any.addEventListener('abort', () => events++);
  const p = scheduler.postTask(() => 'ran', { signal: any });
  const reason = new Error('b went first');
  b.abort(reason);
  assert.equal(any.aborted, true);
  assert.equal(any.reason, reason);
  assert.equal(events, 1);
  await assert.rejects(p, (e) => e === reason);
  a.abort('second');
  assert.equal(any.reason, reason);
  assert.equal(events, 1);
});

test('task-signal-any-abort: an already aborted source gives an aborted signal', async () => {
  const any = TaskSignal.any([new AbortController().signal, AbortSignal.abort('early')],
    { priority: 'background' });
  assert.equal(any.aborted, true);
  assert.equal(any.reason, 'early');
  assert.equal(any.priority, 'background');
  await assert.rejects(scheduler.postTask(() => {}, { signal: any }), (e) => e === 'early');
  assert.equal(TaskSignal.any([]).aborted, false);
  assert.throws(() => TaskSignal.any([{}]), TypeError);
  assert.throws(() => TaskSignal.any([], { priority: 'x' }), TypeError);
});

test('task-signal-any-abort: any of any follows the root, also through AbortSignal.any', async () => {
  const root = new AbortController();
  const mid = TaskSignal.any([root.signal]);
  const leaf = TaskSignal.any([mid]);
  const nodeDep = AbortSignal.any([leaf]);
  const p = scheduler.postTask(() => {}, { signal: leaf, delay: 10 });
  root.abort('root');
  assert.equal(mid.reason, 'root');
  assert.equal(leaf.reason, 'root');
  assert.equal(nodeDep.reason, 'root');
  await assert.rejects(p, (e) => e === 'root');
});

test('task-signal-any-post-task-run-order: fixed-priority composite signals order tasks', async () => {
  const order = [];
  const ps = [];
  for (const [id, priority] of [['B1', 'background'], ['B2', 'background'],
    ['UV1', 'user-visible'], ['UV2', 'user-visible'], ['UB1', 'user-blocking'],
    ['UB2', 'user-blocking']]) {
    ps.push(scheduler.postTask(() => order.push(id), { signal: TaskSignal.any([], { priority }) }));
  }
  await Promise.all(ps);
  assert.deepEqual(order, ['UB1', 'UB2', 'UV1', 'UV2', 'B1', 'B2']);
});

test('task-signal-any-post-task-run-order: a composite signal follows its priority source', async () => {
  const order = [];
  const tc = new TaskController({ priority: 'user-blocking' });
  const any = TaskSignal.any([], { priority: tc.signal });
  assert.equal(any.priority, 'user-blocking');
  const changes = [];
  any.onprioritychange = (e) => changes.push(`${e.previousPriority}->${any.priority}`);
  const ps = [
    scheduler.postTask(() => order.push('B1'), { signal: any }),
    scheduler.postTask(() => order.push('UV1'), { priority: 'user-visible' }),
    scheduler.postTask(() => order.push('UB1'), { priority: 'user-blocking' }),
  ];
  tc.setPriority('background');
  assert.equal(any.priority, 'background');
  assert.deepEqual(changes, ['user-blocking->background']);
  await Promise.all(ps);
  assert.deepEqual(order, ['UB1', 'UV1', 'B1']);
  // A source of fixed priority.
  const order2 = [];
  const parent = TaskSignal.any([], { priority: 'background' });
  const child = TaskSignal.any([], { priority: parent });
  await Promise.all([
    scheduler.postTask(() => order2.push('child'), { signal: child }),
    scheduler.postTask(() => order2.push('uv')),
  ]);
  assert.deepEqual(order2, ['uv', 'child']);
});

