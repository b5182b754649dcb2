'use strict';
// The Node benchmark: the ptsched binding against scheduler-polyfill (npm) in
// the same run. Each (implementation, case, run) is its own child process, so
// neither implementation pays for the other (the binding's loaded addon and
// libuv handles, the polyfill's MessageChannel), and the runs alternate
// between the two. Prints one table of medians and ratios and writes
// JSON to --out (default: stdout only).
//
// usage: node bench/bench.js [--runs N] [--out file.json]
//        node bench/bench.js --child IMPL CASE   (internal)

const { spawnSync } = require('node:child_process');
const path = require('node:path');
const fs = require('node:fs');

// CPU time (user + system, all threads) in ns since `c0`: the machine is
// shared, so wall time also counts time other processes held the cores.
const cpuNs = (c0) => { const c = process.cpuUsage(c0); return (c.user + c.system) * 1000; };

const CASES = {
  // Burst: post N tasks, then await them all; ns per task (post + run).
  async burst(s) {
    const N = 100000;
    const f = () => {};
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    const ps = new Array(N);
    for (let i = 0; i < N; i++) ps[i] = s.postTask(f);
    await Promise.all(ps);
    return { value: Number(process.hrtime.bigint() - t0) / N, unit: 'ns/task', cpu: cpuNs(c0) / N };
  },
  // Chain: each task posts the next from inside; ns per hop.
  async chain(s) {
    const N = 20000;
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    await new Promise((resolve) => {
      let n = 0;
      const step = () => { if (++n === N) resolve(); else s.postTask(step); };
      s.postTask(step);
    });
    return { value: Number(process.hrtime.bigint() - t0) / N, unit: 'ns/hop', cpu: cpuNs(c0) / N };
  },
  // Yield round trip: await scheduler.yield() N times inside one task.
  async yield(s) {
    const N = 20000;
    const r = await s.postTask(async () => {
      const t0 = process.hrtime.bigint();
      const c0 = process.cpuUsage();
      for (let i = 0; i < N; i++) await s.yield();
      return { value: Number(process.hrtime.bigint() - t0) / N, cpu: cpuNs(c0) / N };
    });
    return { ...r, unit: 'ns/yield' };
  },
  // setPriority with P pending tasks on the controller's signal (PENDING,
  // default 10,000); per call, alternating priorities
  // (nobody listens for the event), after a warm-up.
  async setpriority(s, api) {
    const P = Number(process.env.PENDING || 10000);
    const tc = new api.TaskController({ priority: 'background' });
    const f = () => {};
    const ps = [];
    for (let i = 0; i < P; i++) ps.push(s.postTask(f, { signal: tc.signal }));
    const prios = ['user-blocking', 'user-visible', 'background'];
    // Warm up the JIT on another controller first (steady-state cost).
    const warm = new api.TaskController();
    for (let i = 0; i < 3000; i++) warm.setPriority(prios[i % 3]);
    // Batches of 30 calls (each one a real change), so the clock read is
    // not most of what is measured; median over 101 batches.
    const times = [];
    for (let b = 0; b < 101; b++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 30; i++) tc.setPriority(prios[i % 3]);
      times.push(Number(process.hrtime.bigint() - t0) / 30);
    }
    await Promise.all(ps);
    times.sort((a, b) => a - b);
    return { value: times[times.length >> 1], unit: 'ns/call' };
  },
  // Abort with 10,000 pending tasks on the signal: one abort() call, whole.
  async abort(s, api) {
    const P = 10000;
    const tc = new api.TaskController();
    const f = () => {};
    const ps = [];
    for (let i = 0; i < P; i++) ps.push(s.postTask(f, { signal: tc.signal }).catch(() => 1));
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    tc.abort();
    const ns = Number(process.hrtime.bigint() - t0);
    const cpu = cpuNs(c0);
    await Promise.all(ps);
    return { value: ns / 1000, unit: 'us/abort', cpu: cpu / 1000, per_task_ns: ns / P };
  },
  // new TaskController() against Node's own new AbortController() in the
  // same child (value: ns per TaskController; ac: ns per AbortController),
  // alternating batches of 10,000, median of 41 batches each; the objects
  // are kept in a ring so they are not optimised away.
  async controller(s, api) {
    const B = 10000;
    const ring = new Array(1024);
    const TC = api.TaskController;
    const batch = (C) => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < B; i++) ring[i & 1023] = new C();
      return Number(process.hrtime.bigint() - t0) / B;
    };
    for (let w = 0; w < 20; w++) { batch(TC); batch(AbortController); }
    const tc = [];
    const ac = [];
    for (let b = 0; b < 41; b++) { tc.push(batch(TC)); ac.push(batch(AbortController)); }
    // Then, as a reference (after the measurement above, so it does not
    // change it): an empty `class extends AbortController {}` against
    // AbortController, the same way. V8 11.3 (Node 20) does not inline the
    // super() call of any subclass of a class with fields (docs/node.md).
    const Sub = class extends AbortController {};
    for (let w = 0; w < 20; w++) { batch(Sub); batch(AbortController); }
    const sub = [];
    const ac2 = [];
    for (let b = 0; b < 41; b++) { sub.push(batch(Sub)); ac2.push(batch(AbortController)); }
    return { value: median(tc), unit: 'ns/new', ac: median(ac), sub_over_ac: median(sub) / median(ac2) };
  },
  // abort() of a pending task: N controllers with one pending task each
  // (its promise has a catch), then each aborted; ns per abort() call.
  async abort1(s, api) {
    const N = 20000;
    const f = () => {};
    const skip = () => 1;
    const tcs = new Array(N);
    const ps = new Array(N);
    for (let i = 0; i < N; i++) {
      tcs[i] = new api.TaskController();
      ps[i] = s.postTask(f, { signal: tcs[i].signal }).catch(skip);
    }
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    for (let i = 0; i < N; i++) tcs[i].abort();
    const ns = Number(process.hrtime.bigint() - t0);
    const cpu = cpuNs(c0);
    await Promise.all(ps);
    // Then, as a reference: Node's own part, N plain AbortControllers (signal
    // read, no task, no listener) each aborted: the DOMException and the
    // abort event that every abort() above also pays.
    const acs = new Array(N);
    for (let i = 0; i < N; i++) { acs[i] = new AbortController(); acs[i].signal; }
    const t1 = process.hrtime.bigint();
    const c1 = process.cpuUsage();
    for (let i = 0; i < N; i++) acs[i].abort();
    const ac = Number(process.hrtime.bigint() - t1) / N;
    return { value: ns / N, unit: 'ns/abort', cpu: cpu / N, ac, ac_cpu: cpuNs(c1) / N };
  },
  // React's scheduler (SchedulerPostTask) shape: a TaskController per task
  // at the task's priority, postTask with its signal and a catch for the
  // AbortError, one task in ten cancelled (controller.abort()) right after
  // it was posted; then await them all. ns per task.
  async react(s, api) {
    const N = 50000;
    const prios = ['user-blocking', 'user-visible', 'background'];
    const handleAbortError = () => {};
    let ran = 0;
    const work = () => { ran++; };
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    const ps = new Array(N);
    for (let i = 0; i < N; i++) {
      const controller = new api.TaskController({ priority: prios[i % 3] });
      ps[i] = s.postTask(work, { signal: controller.signal }).catch(handleAbortError);
      if (i % 10 === 9) controller.abort();
    }
    await Promise.all(ps);
    if (ran !== N - N / 10) throw new Error(`ran ${ran}`);
    const value = Number(process.hrtime.bigint() - t0) / N;
    const cpu = cpuNs(c0) / N;
    // Then, as a reference: the same controllers, signals and aborts with no
    // task posted (each signal kept, as a pending task keeps it above): what
    // the objects alone cost, before any scheduling.
    const keep = new Array(N);
    const t1 = process.hrtime.bigint();
    const c1 = process.cpuUsage();
    for (let i = 0; i < N; i++) {
      const controller = new api.TaskController({ priority: prios[i % 3] });
      keep[i] = controller.signal;
      if (i % 10 === 9) controller.abort();
    }
    const objects = Number(process.hrtime.bigint() - t1) / N;
    return { value, unit: 'ns/task', cpu, objects, objects_cpu: cpuNs(c1) / N };
  },
  // Bytes per pending task: heap + external + native (RSS) growth over N
  // posted, not yet run tasks (one shared callback; promises kept).
  async bytes(s) {
    const N = 200000;
    const f = () => {};
    const keep = new Array(N);
    global.gc(); global.gc();
    const m0 = process.memoryUsage();
    for (let i = 0; i < N; i++) keep[i] = s.postTask(f);
    global.gc(); global.gc();
    const m1 = process.memoryUsage();
    await Promise.all(keep);
    return {
      value: (m1.rss - m0.rss) / N,
      unit: 'B/task (rss)',
      heap: (m1.heapUsed - m0.heapUsed) / N,
      external: (m1.external - m0.external) / N,
    };
  },
  // A user-blocking task's start delay during a background flood: tasks of
  // ~20 us keep the queue full; every 3 ms a timer posts a user-blocking task
  // and the delay from post to start is recorded. Median of 50.
  async flood(s) {
    let stop = false;
    const spin = () => { const e = process.hrtime.bigint() + 20000n; while (process.hrtime.bigint() < e); };
    const refill = () => {
      for (let i = 0; i < 200; i++) s.postTask(spin, { priority: 'background' });
    };
    let inFlight = 0;
    const bg = () => { spin(); if (--inFlight < 100 && !stop) { inFlight += 200; refill(); } };
    const post = () => { for (let i = 0; i < 200; i++) s.postTask(bg, { priority: 'background' }); inFlight += 200; };
    post();
    const delays = [];
    await new Promise((resolve) => {
      const tick = () => {
        const t0 = process.hrtime.bigint();
        s.postTask(() => {
          delays.push(Number(process.hrtime.bigint() - t0) / 1000);
          if (delays.length === 50) { stop = true; resolve(); } else setTimeout(tick, 3);
        }, { priority: 'user-blocking' });
      };
      setTimeout(tick, 3);
    });
    delays.sort((a, b) => a - b);
    return { value: delays[delays.length >> 1], unit: 'us delay' };
  },
};

function loadImpl(impl) {
  if (impl === 'ptsched') {
    const api = require('..');
    return { s: api.scheduler, api };
  }
  globalThis.self = globalThis; // the polyfill installs itself on `self`
  require('scheduler-polyfill');
  return { s: globalThis.scheduler, api: { TaskController: globalThis.TaskController } };
}

async function child(impl, name) {
  const { s, api } = loadImpl(impl);
  const r = await CASES[name](s, api);
  process.stdout.write(JSON.stringify(r) + '\n');
  process.exit(0); // the polyfill's MessageChannel would keep the process alive
}

function median(xs) {
  const a = [...xs].sort((x, y) => x - y);
  const m = a.length >> 1;
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2;
}

function main() {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : dflt;
  };
  const runs = Number(opt('--runs', 5));
  const only = opt('--case', null);
  const names = only ? only.split(',') : Object.keys(CASES);
  const results = {};
  for (const name of names) {
    results[name] = { ptsched: [], polyfill: [] };
    for (let r = 0; r < runs; r++) {
      for (const impl of ['ptsched', 'polyfill']) {
        const p = spawnSync(process.execPath,
          ['--expose-gc', __filename, '--child', impl, name],
          { encoding: 'utf8', env: process.env, timeout: 120000 });
        if (p.status !== 0) {
          process.stderr.write(`${impl} ${name} failed: ${p.stderr}\n`);
          process.exitCode = 1;
          continue;
        }
        results[name][impl].push(JSON.parse(p.stdout.trim().split('\n').pop()));
      }
    }
  }
  const rows = [];
  for (const name of names) {
    const a = results[name].ptsched.map((x) => x.value);
    const b = results[name].polyfill.map((x) => x.value);
    const ma = median(a);
    const mb = median(b);
    const unit = (results[name].ptsched[0] || results[name].polyfill[0] || {}).unit;
    const extra = {};
    for (const k of ['cpu', 'heap', 'external', 'per_task_ns', 'ac', 'ac_cpu', 'sub_over_ac', 'objects', 'objects_cpu']) {
      if (results[name].ptsched[0] && k in results[name].ptsched[0]) {
        extra[k] = [median(results[name].ptsched.map((x) => x[k])),
                    median(results[name].polyfill.map((x) => x[k]))];
      }
    }
    if (name === 'controller') {
      // The target is against Node's AbortController, in the binding's child.
      extra.tc_over_ac = [ma / median(results[name].ptsched.map((x) => x.ac)), 1];
    }
    // What the binding's own part of the case would have to fit in: the
    // reference measured in its child (Node's abort() alone; the React
    // shape's objects alone) over the polyfill's whole case.
    const ref = { abort1: 'ac', react: 'objects' }[name];
    if (ref && results[name].ptsched.length && results[name].polyfill.length) {
      const pt = (k) => median(results[name].ptsched.map((x) => x[k]));
      extra[`${ref}_over_polyfill`] = [pt(ref) / mb, 1];
      extra[`${ref}_over_polyfill (cpu)`] = [
        pt(`${ref}_cpu`) / median(results[name].polyfill.map((x) => x.cpu)), 1];
    }
    rows.push({ case: name, unit, ptsched: ma, polyfill: mb, ratio: ma / mb, runs: a.length, extra });
  }
  const fmt = (x) => (x === undefined || Number.isNaN(x) ? '-' : x < 10 ? x.toFixed(3) : x.toFixed(0));
  console.log(`node ${process.version}, ${runs} runs per case, medians`);
  console.log('| case | unit | ptsched | scheduler-polyfill | ratio |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.case} | ${r.unit} | ${fmt(r.ptsched)} | ${fmt(r.polyfill)} | ${r.ratio.toFixed(3)} |`);
    for (const [k, [x, y]] of Object.entries(r.extra)) {
      console.log(`| ${r.case} (${k}) | | ${fmt(x)} | ${fmt(y)} | ${(x / y).toFixed(3)} |`);
    }
  }
  const out = opt('--out', null);
  if (out) fs.writeFileSync(out, JSON.stringify({ node: process.version, runs, rows, results }, null, 2));
}

if (process.argv[2] === '--child') {
  child(process.argv[3], process.argv[4]).catch((e) => { console.error(e); process.exit(1); });
} else {
  main();
}
