// host/bench/leak-probe.js: the leakage study's S1 attacker as a JS tenant.
// It runs short tasks back to back and notes when each starts (on the
// shared clock); a gap longer than GAP_MS between two starts means someone
// else ran on its thread. When the victim's truth arrives it sums each
// slot's gap time (a gap split among the slots it spans) and guesses the
// slots of the busier class 1: the two classes are the split of the slots'
// sums that leaves the least variance within each (Otsu's threshold), so
// the guess needs no calibration to the machine's load or the policy. The
// guesses depend only on its own timings, so when those carry nothing
// about the victim each guess is right with probability 1/2 exactly (the
// bits are fresh random ones). It prints how many guesses were right as
// one JSON line.
const GAP_MS = 0.5;
// Only the gaps are kept, in preallocated arrays (the probe starts a task
// every microsecond or so; it allocates nothing per sample, since a GC
// pause would look like a victim's task).
const MAX_GAPS = 1 << 20;
const gapAt = new Float64Array(MAX_GAPS);
const gapLen = new Float64Array(MAX_GAPS);
let gaps = 0;
let n = 0;
let last = -1;
let stop = false;
function tick() {
  const t = performance.timeOrigin + performance.now();
  if (last >= 0 && t - last > GAP_MS && gaps < MAX_GAPS) {
    gapAt[gaps] = last;
    gapLen[gaps++] = t - last;
  }
  last = t;
  n++;
  if (!stop) scheduler.postTask(tick);
}
tick();

// Otsu's threshold: the value v that maximises the between-class variance
// of {x <= v} and {x > v}; -Infinity when all values are equal.
function otsu(xs) {
  const s = Float64Array.from(xs).sort();
  const total = s.reduce((a, b) => a + b, 0);
  let best = -1, thr = -Infinity, below = 0;
  for (let i = 0; i < s.length - 1; i++) {
    below += s[i];
    if (s[i] === s[i + 1]) continue;
    const w0 = (i + 1) / s.length, w1 = 1 - w0;
    const m0 = below / (i + 1), m1 = (total - below) / (s.length - i - 1);
    const v = w0 * w1 * (m0 - m1) * (m0 - m1);
    if (v > best) { best = v; thr = s[i]; }
  }
  return thr;
}

onmessage = (e) => {
  stop = true;
  const { bits, start, slotMs } = e.data;
  const busy = new Float64Array(bits.length);
  for (let i = 0; i < gaps; i++) {
    let a = gapAt[i] - start;
    const b = a + gapLen[i];
    while (a < b) {
      const slot = Math.floor(a / slotMs);
      const end = Math.min(b, (slot + 1) * slotMs);
      if (slot >= 0 && slot < bits.length) busy[slot] += end - a;
      a = end;
    }
  }
  const thr = otsu(busy);
  let right = 0;
  for (let s = 0; s < bits.length; s++) right += (busy[s] > thr ? 1 : 0) === bits[s] ? 1 : 0;
  console.log(JSON.stringify({ bench: 'leak', slots: bits.length, right,
                               accuracy: right / bits.length, samples: n, gaps }));
};
