// host/bench/leak-victim.js: the leakage study's victim as a JS tenant. It
// works through SLOTS slots of SLOT_MS each; in a slot whose secret bit is 1
// it runs busy 1 ms tasks back to back, in a 0 slot it stays idle. When done
// it sends the truth (the bits and its start on the shared clock) to the
// tenant "leak-probe", which scores its guesses with it. Run with
// leak-probe.js: on one thread (--threads 1) the probe shares the victim's
// thread, on two (--threads 2) it does not.
const SLOTS = 40;
const SLOT_MS = 10;
let seed = 12345;
const bits = Array.from({ length: SLOTS }, () => { seed = (seed * 1103515245 + 12345) % 2147483648; return (seed >> 16) & 1; });
const start = performance.timeOrigin + performance.now() + 20;
function spin(ms) { const end = performance.now() + ms; while (performance.now() < end); }
function step() {
  const now = performance.timeOrigin + performance.now();
  const slot = Math.floor((now - start) / SLOT_MS);
  if (slot >= SLOTS) {
    host.postMessage('leak-probe', { bits, start, slotMs: SLOT_MS });
    return;
  }
  if (slot >= 0 && bits[slot]) {
    scheduler.postTask(() => { spin(1); step(); });
  } else {
    setTimeout(step, 1);
  }
}
setTimeout(step, 1);
