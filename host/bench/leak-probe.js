// host/bench/leak-probe.js: the leakage study's attacker as a JS tenant.
// It runs short tasks back to back and records when each starts (on the
// shared clock); a gap longer than GAP_MS means someone else ran on its
// thread. It guesses a slot's bit as 1 when the slot holds such a gap. When
// the victim's truth arrives it prints its accuracy (0.5 = chance) as one
// JSON line.
const GAP_MS = 0.5;
// Preallocated, so the probe itself allocates nothing per sample (a GC
// pause would look like a victim's task).
const starts = new Float64Array(1 << 21);
let n = 0;
let stop = false;
function tick() {
  if (n < starts.length) starts[n++] = performance.timeOrigin + performance.now();
  if (!stop) scheduler.postTask(tick);
}
tick();
onmessage = (e) => {
  stop = true;
  const { bits, start, slotMs } = e.data;
  const busy = new Array(bits.length).fill(0);
  for (let i = 1; i < n; i++) {
    const gap = starts[i] - starts[i - 1];
    const slot = Math.floor((starts[i - 1] - start) / slotMs);
    if (gap > GAP_MS && slot >= 0 && slot < bits.length) busy[slot] += gap;
  }
  let right = 0;
  for (let s = 0; s < bits.length; s++) right += (busy[s] > slotMs / 4 ? 1 : 0) === bits[s] ? 1 : 0;
  console.log(JSON.stringify({ bench: 'leak', slots: bits.length, accuracy: +(right / bits.length).toFixed(3), samples: n }));
};
