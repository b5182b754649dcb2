// scheduler.yield(): the intent of WPT scheduler/tentative/yield/*.any.js
// (priority, abort, inheritance across promises, state cleared, timers).
// Runtime-neutral: uses only the globals test, assert and sleep (harness.js in
// ptsched-host, node-shim.js under Node) and the web API.

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

test('yield-inherit-abort-across-settled-promises', async () => {
  const tc = new TaskController();
  const r = await scheduler.postTask(async () => {
    await Promise.resolve();
    tc.abort('stop');
    return scheduler.yield().then(() => 'resumed', (e) => e);
  }, { signal: tc.signal });
  assert.equal(r, 'stop');
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
  });
