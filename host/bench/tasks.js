// host/bench/tasks.js: postTask throughput. 3000 tasks over the three
// priorities, each a few microseconds of script, then checks that every task
// ran once. Runtime-neutral (web API only): prints one JSON line, the same
// under ptsched-host, the Node binding or scheduler-polyfill. A preload may
// set globalThis.PTS_BENCH_TASKS to change the count (the runner's host
// suite does, to keep 64 tenants' runs short).
const N = globalThis.PTS_BENCH_TASKS || 3000;
const prios = ['user-blocking', 'user-visible', 'background'];
const t0 = performance.now();
let sum = 0;
const ps = [];
for (let i = 0; i < N; i++) {
  ps.push(scheduler.postTask(() => { for (let k = 0; k < 50; k++) sum += k; }, { priority: prios[i % 3] }));
}
Promise.all(ps).then(() => {
  if (sum !== N * 1225) throw new Error('lost tasks');
  const ms = performance.now() - t0;
  console.log(JSON.stringify({ bench: 'tasks', tasks: N, ms: +ms.toFixed(3), per_task_us: +(ms * 1e3 / N).toFixed(3) }));
});
