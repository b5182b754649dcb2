'use strict';
// Node-specific behaviour: the libuv loop integration (I/O, timers and
// immediates interleave with a flood of tasks), process exit, exceptions,
// worker threads, ESM import and AbortSignal interop.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { api, sleep, runChild } = require('./helpers.js');

// Busy-waits ms milliseconds (a task that takes time).
const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); };

test('a flood of tasks does not starve timers, immediates or I/O', async () => {
  let stop = false;
  let ran = 0;
  const flood = (priority) => {
    const again = () => { spin(0.2); ran++; if (!stop) scheduler.postTask(again, { priority }); };
    for (let i = 0; i < 20; i++) scheduler.postTask(again, { priority });
  };
  flood('user-blocking');
  flood('background');
  const t0 = performance.now();
  const lat = {};
  await Promise.all([
    new Promise((r) => setTimeout(() => { lat.timer = performance.now() - t0; r(); }, 5)),
    new Promise((r) => setImmediate(() => { lat.immediate = performance.now() - t0; r(); })),
    fs.promises.readFile(__filename).then(() => { lat.io = performance.now() - t0; }),
  ]);
  const ranBefore = ran;
  await sleep(20);
  stop = true;
  await sleep(5);
  // The check-phase budget is 2 ms; allow for a loaded machine.
  for (const [k, v] of Object.entries(lat)) assert.ok(v < 500, `${k} waited ${v} ms`);
  assert.ok(ran > ranBefore, 'tasks kept running while timers fired');
  assert.ok(ranBefore > 0);
});

test('tasks run as macrotasks between setImmediate callbacks, not all in one go', async () => {
  let stop = false;
  let tasks = 0;
  let immediates = 0;
  const loopTask = () => { spin(0.5); tasks++; if (!stop) scheduler.postTask(loopTask); };
  scheduler.postTask(loopTask);
  await new Promise((resolve) => {
    const imm = () => { immediates++; if (immediates < 20) setImmediate(imm); else resolve(); };
    setImmediate(imm);
  });
  stop = true;
  // 20 loop turns with 0.5 ms tasks and a 2 ms budget: tasks ran in between
  // but did not run thousands to each immediate.
  assert.ok(tasks >= 20, `tasks ${tasks}`);
  assert.ok(tasks < 20 * 50, `tasks ${tasks}`);
});

test('an idle scheduler does not hold the process open', async () => {
  const r = await runChild(`
    const tc = new TaskController();
    scheduler.postTask(() => console.log('ran'));
    scheduler.postTask(() => {}, { signal: tc.signal, delay: 60000 }).catch(() => console.log('aborted'));
    tc.abort();
    TaskSignal.any([tc.signal]);
  `);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'aborted\nran\n'); // the rejection is a microtask of this turn
  assert.ok(r.ms < 10000);
});

test('tasks and continuations settle real promises even if globalThis.Promise was replaced', async () => {
  const r = await runChild(`
    const Original = Promise;
    globalThis.Promise = class NotAPromise { constructor(executor) { this.executor = executor; } };
    const api = require(entry);
    const out = [];
    const done = Original.prototype.then.call(api.scheduler.postTask(async () => {
      out.push(api.scheduler.postTask(() => 1) instanceof Original);
      await api.scheduler.yield();
      await api.scheduler.yield({ priority: 'background' });
      return 2;
    }), (v) => out.push(v));
    Original.prototype.then.call(done, () => console.log(out.join(',')));
  `, { load: false });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'true,2\n');
});

test('a pending delayed task keeps the process alive until it runs', async () => {
  const r = await runChild(`
    const t0 = Date.now();
    scheduler.postTask(() => console.log('delayed', Date.now() - t0 >= 200), { delay: 200 });
  `);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'delayed true\n');
});

test('an exception in a task with no rejection handler reaches uncaughtException', async () => {
  const r = await runChild(`
    process.on('uncaughtException', (e) => { console.log('uncaught', e.message); });
    scheduler.postTask(() => { throw new Error('from task'); });
    scheduler.postTask(() => console.log('next task ran'), { priority: 'background' });
  `);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /uncaught from task/);
  assert.match(r.stdout, /next task ran/);
  // Without a handler the process dies as with any uncaught error.
  const r2 = await runChild(`scheduler.postTask(() => { throw new Error('fatal from task'); });`);
  assert.notEqual(r2.code, 0);
  assert.match(r2.stderr, /fatal from task/);
});

test('an exception in a prioritychange listener reaches uncaughtException', async () => {
  const r = await runChild(`
    process.on('uncaughtException', (e) => console.log('uncaught', e.message));
    const tc = new TaskController();
    tc.signal.addEventListener('prioritychange', () => { throw new Error('listener'); });
    tc.setPriority('background');
    console.log('after', tc.signal.priority);
  `);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'after background\nuncaught listener\n');
});

test('each worker thread gets its own scheduler and loop', async () => {
  const entry = path.resolve(__dirname, '..');
  const src = `
    const { parentPort, workerData } = require('node:worker_threads');
    require(${JSON.stringify(entry)});
    (async () => {
      const order = [];
      const tc = new TaskController({ priority: 'background' });
      const ps = [
        scheduler.postTask(() => order.push('bg'), { signal: tc.signal }),
        scheduler.postTask(() => order.push('uv')),
        scheduler.postTask(async () => { await scheduler.yield(); order.push('ub-cont'); }, { priority: 'user-blocking' }),
      ];
      tc.setPriority('user-blocking');
      await Promise.all(ps);
      await scheduler.postTask(() => {}, { delay: 10 });
      parentPort.postMessage({ id: workerData, order });
    })();
  `;
  const run = (id) => new Promise((resolve, reject) => {
    const w = new Worker(src, { eval: true, workerData: id });
    let msg;
    w.on('message', (m) => { msg = m; });
    w.on('error', reject);
    w.on('exit', (code) => (code === 0 ? resolve(msg) : reject(new Error(`exit ${code}`))));
  });
  const results = await Promise.all([run(1), run(2), run(3)]);
  for (const [i, r] of results.entries()) {
    assert.equal(r.id, i + 1);
    assert.deepEqual(r.order, ['bg', 'ub-cont', 'uv']);
  }
  // The main thread's scheduler is unaffected.
  assert.equal(await scheduler.postTask(() => 'main'), 'main');
});

test('a worker terminated with pending tasks exits cleanly', async () => {
  const entry = path.resolve(__dirname, '..');
  const w = new Worker(`
    require(${JSON.stringify(entry)});
    const { parentPort } = require('node:worker_threads');
    for (let i = 0; i < 1000; i++) scheduler.postTask(() => {}, { delay: 100000 });
    const tc = new TaskController();
    scheduler.postTask(() => {}, { signal: tc.signal, delay: 100000 });
    parentPort.postMessage('ready');
  `, { eval: true });
  await new Promise((r) => w.once('message', r));
  const code = await w.terminate();
  assert.equal(code, 1);
});

test('ESM import gives the same objects', async () => {
  const mod = await import(path.resolve(__dirname, '..', 'index.mjs'));
  assert.equal(mod.scheduler, api.scheduler);
  assert.equal(mod.TaskController, api.TaskController);
  assert.equal(await mod.scheduler.postTask(() => 'esm'), 'esm');
});

test('nothing is left pending after the tests of this file', async () => {
  await sleep(10);
  const [pending] = api._stats();
  assert.equal(pending, 0);
});

test('dropped controllers and signals are collected with their native twins', async () => {
  const v8 = require('node:v8');
  const vm = require('node:vm');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const settle = async () => { for (let i = 0; i < 4; i++) { gc(); await sleep(5); } };
  await settle();
  const [, , before] = api._stats();
  // Held until the peak is read (a GC during the loop may otherwise collect
  // the first ones before the last are made), then dropped.
  let held = [];
  for (let i = 0; i < 2000; i++) {
    const tc = new TaskController();
    const ac = new AbortController();
    const any = TaskSignal.any([tc.signal, ac.signal], { priority: tc.signal });
    await scheduler.postTask(() => {}, { signal: any });
    if (i % 2) tc.abort();
    held.push(tc, ac, any);
  }
  const [, , peak] = api._stats();
  held = null;
  assert.ok(peak >= before + 1000, `peak ${peak}, before ${before}`);
  // Finalizers run after a GC, from the event loop; on a loaded machine that
  // can take a few rounds.
  for (let i = 0; i < 100 && api._stats()[2] >= before + 100; i++) await settle();
  const [pending, , after] = api._stats();
  assert.equal(pending, 0);
  assert.ok(after < before + 100, `native twins left: ${after - before}`);
});

test('process.exit() from inside a task, in workers and on the main thread', async () => {
  // The main thread loads the addon only after the workers are gone, so a
  // worker's teardown unloads it: nothing of ours may run after that.
  const r = await runChild(`
    const { Worker } = require('node:worker_threads');
    let n = 0;
    for (let k = 0; k < 8; k++) {
      const w = new Worker(\`
        require(\${JSON.stringify(entry)});
        const tc = new TaskController();
        for (let i = 0; i < 500; i++) scheduler.postTask(() => {}, { signal: tc.signal });
        scheduler.postTask(() => {}, { delay: 100000 });
        scheduler.postTask(() => process.exit(5), { priority: 'user-blocking' });
      \`, { eval: true });
      w.on('exit', (code) => {
        if (code !== 5) console.log('bad worker exit', code);
        if (++n === 8) {
          require(entry);
          for (let i = 0; i < 500; i++) scheduler.postTask(() => {});
          scheduler.postTask(() => { console.log('workers done'); process.exit(3); }, { priority: 'user-blocking' });
        }
      });
    }
  `, { load: false });
  assert.equal(r.signal, null, r.stderr);
  assert.equal(r.code, 3, r.stderr);
  assert.equal(r.stdout, 'workers done\n');
});

test('the addon loaded twice (require cache cleared): both copies keep working', async () => {
  const { code, stdout, stderr } = await runChild(`
    const a = require(entry);
    for (const k of Object.keys(require.cache)) delete require.cache[k];
    const b = require(entry);
    if (a.scheduler === b.scheduler) throw new Error('one copy');
    const out = [];
    const run = async (name, m) => {
      out.push(name + ' ' + await m.scheduler.postTask(() => 'ran'));
      const tc = new m.TaskController({ priority: 'background' });
      const p = m.scheduler.postTask(() => 'x', { signal: tc.signal });
      tc.abort('stop');
      out.push(name + ' ' + await p.catch((e) => 'rejected ' + e));
      out.push(name + ' ' + await m.scheduler.postTask(async () => { await m.scheduler.yield(); return 'yielded'; },
                                                        { priority: 'user-blocking' }));
      const d = m.TaskSignal.any([new m.TaskController().signal]);
      out.push(name + ' ' + d.priority);
    };
    a.scheduler.postTask(() => out.push('first copy ran'));
    b.scheduler.postTask(() => out.push('second copy ran'));
    Promise.all([run('a', a), run('b', b)]).then(() => {
      console.log(out.sort().join('|'));
    });
  `, { load: false });
  assert.equal(stderr, '');
  assert.equal(code, 0);
  assert.equal(stdout.trim(), ['a ran', 'a rejected stop', 'a user-visible', 'a yielded', 'b ran',
    'b rejected stop', 'b user-visible', 'b yielded', 'first copy ran', 'second copy ran'].join('|'));
});
