'use strict';
// scheduler.yield(): the intent of WPT scheduler/tentative/yield/*.any.js
// (priority, abort, inheritance across promises, state cleared, timers).
// Runtime-neutral (docs/host.md, "One suite, two runtimes"): uses only the
// globals test, assert, sleep and assertNoTaskLeft (harness.js in ptsched-host,
// node-shim.js under Node) and the web API. Node-only cases: node/test.

// Inside a task posted with `options`: await a timer-resolved promise (the
// continuation runs in a later turn, outside the task), post a user-blocking
// and a background subtask, yield, and record the order.
function inheritAcrossPromises(options) {
  const ids = [];
  const task = scheduler.postTask(async () => {
    await new Promise((r) => setTimeout(r, 1));
    await new Promise((r) => setTimeout(r, 0));
    const subtasks = [
      scheduler.postTask(() => ids.push('ub-subtask'), { priority: 'user-blocking' }),
      scheduler.postTask(() => ids.push('bg-subtask'), { priority: 'background' }),
      scheduler.postTask(() => ids.push('uv-subtask'), { priority: 'user-visible' }),
    ];
    await scheduler.yield();
    ids.push('continuation');
    await Promise.all(subtasks);
  }, options);
  return task.then(() => ids.join());
}

const EXPECTED = {
  'user-blocking': 'continuation,ub-subtask,uv-subtask,bg-subtask',
  'user-visible': 'ub-subtask,continuation,uv-subtask,bg-subtask',
  'background': 'ub-subtask,uv-subtask,continuation,bg-subtask',
};

for (const priority of Object.keys(EXPECTED)) {
  test(`yield-inherit-across-promises: priority option (${priority})`, async () => {
    assert.equal(await inheritAcrossPromises({ priority }), EXPECTED[priority]);
  });
  test(`yield-inherit-across-promises: TaskSignal (${priority})`, async () => {
    const tc = new TaskController({ priority });
    assert.equal(await inheritAcrossPromises({ signal: tc.signal }), EXPECTED[priority]);
  });
}

test('yield-inherit-across-promises: a later setPriority of the task signal moves the continuation', async () => {
  const tc = new TaskController({ priority: 'background' });
  const ids = [];
  await scheduler.postTask(async () => {
    await sleep(1);
    const sub = scheduler.postTask(() => ids.push('uv-subtask'));
    const y = scheduler.yield().then(() => ids.push('continuation'));
    tc.setPriority('user-blocking');
    await Promise.all([sub, y]);
  }, { signal: tc.signal });
  assert.deepEqual(ids, ['continuation', 'uv-subtask']);
});

test('yield-inherit-across-promises: abort is inherited', async () => {
  const tc = new TaskController();
  const r = await scheduler.postTask(async () => {
    await sleep(1);
    tc.abort();
    try {
      await scheduler.yield();
      return 'resumed';
    } catch (e) {
      return e.name;
    }
  }, { signal: tc.signal });
  assert.equal(r, 'AbortError');
});

test('yield-inherit-across-settled-promises: awaiting settled promises keeps the state', async () => {
  const ids = [];
  await scheduler.postTask(async () => {
    await Promise.resolve();
    await 1;
    await Promise.reject(new Error('x')).catch(() => {});
    const sub = scheduler.postTask(() => ids.push('uv-subtask'));
    await scheduler.yield();
    ids.push('continuation');
    await sub;
  }, { priority: 'user-blocking' });
  assert.deepEqual(ids, ['continuation', 'uv-subtask']);
});

// yield-inherit-abort-across-settled-promises: the abort comes from a
// separate, later task (an abort inside the task would reject the task's own
// result and mask a continuation that lost its abort source).
function yieldThenAbort(tc) {
  scheduler.postTask(() => tc.abort(), { priority: 'user-blocking' });
  assert.equal(tc.signal.aborted, false);
  return assert.rejects(scheduler.yield(), { name: 'AbortError' });
}
// The WPT's ways of reaching yield() from a task's callback through
// promises: each calls step(arg) after one kind of intervening promise.
function viaPromises(step) {
  return {
    'no intervening promise': (x) => step(x),
    'across a pending promise': async (x) => {
      await new Promise((resolve) => queueMicrotask(resolve));
      await step(x);
    },
    'across an await of a settled promise': async (x) => { await Promise.resolve(); await step(x); },
    'across an await of a non-promise': async (x) => { await null; await step(x); },
    'in then() on a settled promise': (x) => Promise.resolve().then(() => step(x)),
    'in a chained then() on a settled promise': (x) => Promise.resolve().then(() => {}).then(() => step(x)),
    'across an await of a thenable': async (x) => { await { then(resolve) { resolve(); } }; await step(x); },
    'across a promise resolved with a thenable': async (x) => {
      await new Promise((resolve) => resolve({ then(r) { r(); } }));
      await step(x);
    },
  };
}
const abortInheritance = viaPromises(yieldThenAbort);
for (const [name, body] of Object.entries(abortInheritance)) {
  test(`yield-inherit-abort-across-settled-promises: ${name}`, async () => {
    const tc = new TaskController();
    await scheduler.postTask(() => body(tc), { signal: tc.signal });
  });
}

test('yield-abort: an abort in the task before yield rejects the yield and the task', async () => {
  const tc = new TaskController();
  let yieldOutcome;
  const task = scheduler.postTask(async () => {
    tc.abort();
    const p = scheduler.yield();
    yieldOutcome = await p.then(() => 'fulfilled', (e) => e.name);
  }, { signal: tc.signal });
  await assert.rejects(task, { name: 'AbortError' });
  await sleep(1);
  assert.equal(yieldOutcome, 'AbortError');
});

test('yield inherits the .then() registration context, not the resolve context', async () => {
  const ids = [];
  let resolve;
  let p1 = new Promise((r) => { resolve = r; });
  p1 = p1.then(async () => { await scheduler.yield(); ids.push('continuation'); });
  await scheduler.postTask(resolve, { priority: 'user-blocking' });
  const p2 = scheduler.postTask(() => ids.push('task'), { priority: 'user-blocking' });
  await Promise.all([p1, p2]);
  assert.deepEqual(ids, ['task', 'continuation']);
});

test('yield inherits through queueMicrotask()', async () => {
  const ids = [];
  let resolve;
  let p1 = new Promise((r) => { resolve = r; });
  p1 = p1.then(async () => { ids.push('p1-start'); await scheduler.yield(); ids.push('p1-continuation'); });
  const p2 = scheduler.postTask(() => {
    resolve();
    queueMicrotask(async () => { ids.push('p2-start'); await scheduler.yield(); ids.push('p2-continuation'); });
  }, { priority: 'user-blocking' });
  const p3 = scheduler.postTask(() => ids.push('p3'), { priority: 'user-blocking' });
  await Promise.all([p1, p2, p3]);
  await sleep(5);
  assert.deepEqual(ids, ['p1-start', 'p2-start', 'p2-continuation', 'p3', 'p1-continuation']);
});

test('yield-scheduling-state-cleared: a timer queued in a task does not inherit', async () => {
  const ids = [];
  await new Promise((done) => {
    scheduler.postTask(() => {
      setTimeout(async () => {
        const task = scheduler.postTask(() => ids.push('task'), { priority: 'user-visible' });
        await scheduler.yield();
        ids.push('continuation');
        await task;
        done();
      });
    }, { priority: 'background' });
  });
  // Default (user-visible) continuation beats a user-visible task.
  assert.deepEqual(ids, ['continuation', 'task']);
});

test('yield-priority-timers: continuations run before the next timers', async () => {
  const ids = [];
  const tasks = [
    new Promise((resolve) => setTimeout(async () => {
      ids.push('t1');
      for (let i = 1; i < 4; i++) { await scheduler.yield(); ids.push(`y${i}`); }
      resolve();
    })),
    new Promise((resolve) => setTimeout(() => { ids.push('t2'); resolve(); })),
    new Promise((resolve) => setTimeout(() => { ids.push('t3'); resolve(); })),
  ];
  await Promise.all(tasks);
  // The WPT expects t1,y1,y2,y3,t2,t3. Node runs every timer due in one
  // timers phase before the check phase where ptsched runs, so when t2 and
  // t3 fall due with t1 (the usual case) Node gives t1,t2,t3,y1,y2,y3; when
  // the millisecond ticks between them it gives the WPT order. Either way
  // the continuations run in order, after t1, with nothing between them.
  // ptsched-host runs a timer per task, so it gives the WPT order.
  assert.ok(['t1,t2,t3,y1,y2,y3', 't1,y1,y2,y3,t2,t3', 't1,t2,y1,y2,y3,t3'].includes(ids.join()),
    ids.join());
});

test('yield-priority-posttask: a continuation runs just above tasks of its priority', async () => {
  for (const [priority, expected] of [
    ['user-blocking', 'c,ub,uv,bg'], ['user-visible', 'ub,c,uv,bg'], ['background', 'ub,uv,c,bg']]) {
    const ids = [];
    await scheduler.postTask(async () => {
      const ps = [
        scheduler.postTask(() => ids.push('bg'), { priority: 'background' }),
        scheduler.postTask(() => ids.push('uv'), { priority: 'user-visible' }),
        scheduler.postTask(() => ids.push('ub'), { priority: 'user-blocking' }),
      ];
      await scheduler.yield();
      ids.push('c');
      await Promise.all(ps);
    }, { priority });
    assert.equal(ids.join(), expected, priority);
  }
});

test('yield options: explicit priority and signal, "inherit", conversions', async () => {
  const ids = [];
  await scheduler.postTask(async () => {
    const ps = [scheduler.postTask(() => ids.push('uv'))];
    await scheduler.yield({ priority: 'background' });
    ids.push('bg-continuation');
    await Promise.all(ps);
  }, { priority: 'user-blocking' });
  assert.deepEqual(ids, ['uv', 'bg-continuation']);
  // signal "inherit" with no priority inherits both.
  const ids2 = [];
  await scheduler.postTask(async () => {
    const ps = [scheduler.postTask(() => ids2.push('uv'))];
    await scheduler.yield({ signal: 'inherit' });
    ids2.push('c');
    await Promise.all(ps);
  }, { priority: 'user-blocking' });
  assert.deepEqual(ids2, ['c', 'uv']);
  // An explicit signal with priority "inherit": abort from the signal,
  // priority from the task's TaskSignal, which setPriority still moves.
  const tc = new TaskController({ priority: 'background' });
  const ac = new AbortController();
  const ids3 = [];
  await scheduler.postTask(async () => {
    const ps = [scheduler.postTask(() => ids3.push('uv'))];
    const y = scheduler.yield({ signal: ac.signal, priority: 'inherit' }).then(() => ids3.push('c'));
    tc.setPriority('user-blocking');
    await Promise.all([...ps, y]);
  }, { signal: tc.signal });
  assert.deepEqual(ids3, ['c', 'uv']);
  await assert.rejects(scheduler.yield({ priority: 'soonish' }), TypeError);
  await assert.rejects(scheduler.yield({ signal: 'other' }), TypeError);
  assert.equal(await scheduler.yield(), undefined);
});

test('yield-abort: an aborted or aborting signal rejects the continuation', async () => {
  await assert.rejects(scheduler.yield({ signal: AbortSignal.abort('already') }), (e) => e === 'already');
  const ac = new AbortController();
  const p = scheduler.yield({ signal: ac.signal });
  ac.abort();
  await assert.rejects(p, { name: 'AbortError' });
  // Outside any task, yield() has no signal to inherit and resolves.
  assert.equal(await scheduler.yield(), undefined);
});

test('many pending yield continuations: each resumes once, in order; aborted ones reject',
  { timeout: 20000 }, async () => {
    // Outside any task: no state to inherit, so these take the addon's
    // fast path; thousands are pending at once.
    const N = 3000;
    const order = [];
    const resumed = [];
    for (let i = 0; i < N; i++) {
      resumed.push((async () => {
        await scheduler.yield();
        order.push(i);
        await scheduler.yield();
        order.push(N + i);
      })());
    }
    const tc = new TaskController();
    const aborted = [];
    for (let i = 0; i < N; i++) {
      aborted.push(scheduler.yield({ signal: tc.signal }).then(() => 'resumed', (e) => e));
    }
    tc.abort('stop');
    await Promise.all(resumed);
    assert.deepEqual(order, Array.from({ length: 2 * N }, (_, i) => i));
    assert.ok((await Promise.all(aborted)).every((r) => r === 'stop'));
    assertNoTaskLeft();
  });

// WPT yield-inherit-across-settled-promises: in a background task, race a
// continuation against a user-visible task posted just before the yield;
// with the state inherited the continuation is background and runs after it.
function raceContinuation(ids) {
  const task = scheduler.postTask(() => { ids.push('task'); }, { priority: 'user-visible' });
  return scheduler.yield().then(() => { ids.push('continuation'); return task; });
}
const settledInheritance = viaPromises(raceContinuation);
for (const [name, body] of Object.entries(settledInheritance)) {
  test(`yield-inherit-across-settled-promises: ${name}`, async () => {
    const ids = [];
    await scheduler.postTask(() => body(ids), { priority: 'background' });
    assert.equal(ids.join(), 'task,continuation');
  });
}

// WPT yield-priority-posttask: a task that yields three times with
// yieldOptions, then two tasks of each priority posted in descending order.
async function yieldOrder(taskOptions, yieldOptions) {
  const ids = [];
  const tasks = [scheduler.postTask(async () => {
    ids.push('y0');
    for (let i = 1; i < 4; i++) { await scheduler.yield(yieldOptions); ids.push(`y${i}`); }
  }, taskOptions)];
  for (const [id, priority] of [['ub1', 'user-blocking'], ['ub2', 'user-blocking'], ['uv1', 'user-visible'],
    ['uv2', 'user-visible'], ['bg1', 'background'], ['bg2', 'background']]) {
    tasks.push(scheduler.postTask(() => { ids.push(id); }, { priority }));
  }
  await Promise.all(tasks);
  return ids.join();
}
const ORDERS = {
  'user-blocking': 'y0,y1,y2,y3,ub1,ub2,uv1,uv2,bg1,bg2',
  'user-visible': 'ub1,ub2,y0,y1,y2,y3,uv1,uv2,bg1,bg2',
  'background': 'ub1,ub2,uv1,uv2,y0,y1,y2,y3,bg1,bg2',
};

test('yield-priority-posttask: priority and signal options, inherit, inherit by default', async () => {
  const priorityConfigs = [[{}, 'user-visible'], [{ priority: 'user-visible' }, 'user-visible'],
    [{ priority: 'user-blocking' }, 'user-blocking'], [{ priority: 'background' }, 'background']];
  const signalConfigs = Object.keys(ORDERS).map((p) => [{ signal: new TaskController({ priority: p }).signal }, p]);
  for (const [options, p] of priorityConfigs) {
    assert.equal(await yieldOrder(options, options), ORDERS[p]);
    assert.equal(await yieldOrder(options, { priority: 'inherit' }), ORDERS[p]);
  }
  for (const [options, p] of signalConfigs) {
    assert.equal(await yieldOrder(options, options), ORDERS[p]);
    assert.equal(await yieldOrder(options, { signal: 'inherit' }), ORDERS[p]);
    assert.equal(await yieldOrder(options, {}), ORDERS[p]);
  }
  const bg = new TaskController({ priority: 'background' }).signal;
  const different = 'y0,ub1,ub2,uv1,uv2,y1,y2,y3,bg1,bg2';
  assert.equal(await yieldOrder({ priority: 'user-blocking' }, { priority: 'background' }), different);
  assert.equal(await yieldOrder({ priority: 'user-blocking' }, { signal: bg }), different);
  assert.equal(await yieldOrder({ priority: 'user-blocking' }, { signal: bg, priority: 'user-blocking' }),
    ORDERS['user-blocking']);
});

test('yield-priority-posttask: a TaskSignal\'s dynamic priority; mixed inheritance and default', async () => {
  const ids = [];
  const controller = new TaskController();
  await scheduler.postTask(async () => {
    ids.push('y0');
    const subtasks = [scheduler.postTask(() => { ids.push('uv1'); }), scheduler.postTask(() => { ids.push('uv2'); })];
    await scheduler.yield({ signal: 'inherit' });
    ids.push('y1');
    await scheduler.yield({ signal: 'inherit' });
    ids.push('y2');
    controller.setPriority('background');
    await scheduler.yield({ signal: 'inherit' });
    ids.push('y3');
    await scheduler.yield({ signal: 'inherit' });
    ids.push('y4');
    await Promise.all(subtasks);
  }, { signal: controller.signal });
  assert.equal(ids.join(), 'y0,y1,y2,uv1,uv2,y3,y4');
  const ids2 = [];
  await scheduler.postTask(async () => {
    ids2.push('y0');
    const subtasks = [scheduler.postTask(() => { ids2.push('ub1'); }, { priority: 'user-blocking' }),
      scheduler.postTask(() => { ids2.push('uv1'); })];
    await scheduler.yield({ priority: 'user-visible' });
    ids2.push('y1');
    await scheduler.yield({ priority: 'user-visible' });
    ids2.push('y2');
    subtasks.push(scheduler.postTask(() => { ids2.push('ub2'); }, { priority: 'user-blocking' }));
    subtasks.push(scheduler.postTask(() => { ids2.push('uv2'); }));
    await scheduler.yield({ signal: 'inherit' });
    ids2.push('y3');
    await scheduler.yield({ signal: 'inherit' });
    ids2.push('y4');
    await Promise.all(subtasks);
  }, { priority: 'user-blocking' });
  assert.equal(ids2.join(), 'y0,ub1,y1,y2,y3,y4,ub2,uv1,uv2');
});
