// host/bench/latency.js: how long a user-blocking task waits while the
// tenant floods itself with 0.5 ms background chunks: every 5 ms a
// user-blocking task is posted and its start delay (post to run) recorded;
// 100 samples. With priorities honoured the delay is at most one chunk.
// Runtime-neutral; one JSON line.
const CHUNK_MS = 0.5;
const SAMPLES = 100;
const delays = [];
let done = false;
function spin(ms) { const end = performance.now() + ms; while (performance.now() < end); }
function flood() {
  if (done) return;
  for (let i = 0; i < 4; i++) scheduler.postTask(() => spin(CHUNK_MS), { priority: 'background' });
  scheduler.postTask(flood, { priority: 'background' });
}
flood();
function probe() {
  const posted = performance.now();
  scheduler.postTask(() => {
    delays.push(performance.now() - posted);
    if (delays.length < SAMPLES) setTimeout(probe, 5);
    else {
      done = true;
      delays.sort((a, b) => a - b);
      const q = (p) => +delays[Math.min(delays.length - 1, Math.floor(p * delays.length))].toFixed(3);
      console.log(JSON.stringify({ bench: 'latency', samples: SAMPLES, p50_ms: q(0.5), p99_ms: q(0.99), max_ms: q(1) }));
    }
  }, { priority: 'user-blocking' });
}
setTimeout(probe, 5);
