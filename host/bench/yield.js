// host/bench/yield.js: the cost of one scheduler.yield() round trip inside a
// background task (5000 yields). Runtime-neutral; one JSON line.
const N = 5000;
scheduler.postTask(async () => {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await scheduler.yield();
  const ms = performance.now() - t0;
  console.log(JSON.stringify({ bench: 'yield', yields: N, ms: +ms.toFixed(3), per_yield_us: +(ms * 1e3 / N).toFixed(3) }));
}, { priority: 'background' });
