'use strict';
// TaskSignal.any(): the intent of WPT scheduler/task-signal-any-*.tentative.
// Runtime-neutral (docs/host.md, "One suite, two runtimes"): uses only the
// globals test, assert, sleep and assertNoTaskLeft (harness.js in ptsched-host,
// node-shim.js under Node) and the web API. Node-only cases: node/test.

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
  const dep = AbortSignal.any([leaf]);
  const p = scheduler.postTask(() => {}, { signal: leaf, delay: 10 });
  root.abort('root');
  assert.equal(mid.reason, 'root');
  assert.equal(leaf.reason, 'root');
  assert.equal(dep.reason, 'root');
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

// The WPT's five signals (all dependents linked to the root): the order in
// which their abort events fire when controller aborts.
function abortEventOrder(controller) {
  const signals = [controller.signal];
  signals.push(TaskSignal.any([controller.signal]));
  signals.push(TaskSignal.any([controller.signal]));
  signals.push(TaskSignal.any([signals[0]]));
  signals.push(TaskSignal.any([signals[1]]));
  let result = '';
  signals.forEach((s, i) => s.addEventListener('abort', () => { result += i; }));
  controller.abort();
  assert.ok(signals.every((s) => s.aborted));
  return result;
}

// WPT dom/abort/resources/abort-signal-any-tests.js, run by
// task-signal-any-abort.tentative with TaskController (DOM "signal abort":
// dependents are marked aborted first, the source's abort event reaches all
// its listeners, then each dependent's event fires).
test('task-signal-any-abort: the source\'s abort event fires before its dependents\'', () => {
  const c = new TaskController();
  const d = TaskSignal.any([c.signal]);
  const seen = [];
  c.signal.addEventListener('abort', () => seen.push('source'));
  d.addEventListener('abort', () => seen.push('dependent'));
  c.abort();
  assert.equal(seen.join(), 'source,dependent');
  assert.equal(abortEventOrder(new TaskController()), '01234');
});

test('task-signal-any-abort: dependents are marked aborted before abort events fire', () => {
  const c = new TaskController();
  const s1 = TaskSignal.any([c.signal]);
  const s2 = TaskSignal.any([s1]);
  let fired = false;
  c.signal.addEventListener('abort', () => {
    const s3 = TaskSignal.any([s2]);
    assert.equal(c.signal.aborted, true);
    assert.equal(s1.aborted, true);
    assert.equal(s2.aborted, true);
    assert.equal(s1.reason, 'why');
    assert.throws(() => s2.throwIfAborted(), (e) => e === 'why');
    assert.equal(s3.aborted, true);
    assert.equal(s3.reason, 'why');
    fired = true;
  });
  c.abort('why');
  assert.ok(fired);
  assert.equal(s2.reason, 'why');
});

test('task-signal-any-abort: reentrant aborts, intermediate signals, onabort', () => {
  const c1 = new TaskController();
  const c2 = new TaskController();
  const signal = TaskSignal.any([c1.signal, c2.signal]);
  let count = 0;
  c1.signal.addEventListener('abort', () => c2.abort('reason 2'));
  signal.addEventListener('abort', () => count++);
  c1.abort('reason 1');
  assert.equal(count, 1);
  assert.equal(signal.reason, 'reason 1');
  const c = new TaskController();
  let combined = TaskSignal.any([c.signal]);
  for (let i = 0; i < 3; i++) combined = TaskSignal.any([combined]);
  let target;
  combined.onabort = (e) => { target = e.target; };
  c.abort('the reason');
  assert.equal(target, combined);
  assert.equal(combined.reason, 'the reason');
  // The same signal twice, and the first aborted source's reason wins.
  const d = new TaskController();
  const twice = TaskSignal.any([d.signal, d.signal]);
  d.abort('r');
  assert.equal(twice.reason, 'r');
  const e1 = new TaskController(); e1.abort('reason 1');
  const e2 = new TaskController(); e2.abort('reason 2');
  assert.equal(TaskSignal.any([e1.signal, e2.signal, e1.signal]).reason, 'reason 1');
});

