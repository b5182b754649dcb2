// host/bench/leak-victim.js: the leakage study's S1 victim as a JS tenant.
// It works through slots of SLOT_MS each; in a slot whose secret bit is 1
// it runs busy 1 ms tasks back to back, in a 0 slot it stays idle (a 1 ms
// timer checks the clock). The bits are fresh random ones each run, so a
// probe that learns nothing is right in each slot with probability 1/2
// exactly. The first WARM_MS of slots are a warm-up with the same kind of
// secret, not scored (under quantized, levels settle at the first 1 s
// epoch boundary: bench/leak/scenario.c warms up 1.1 s); then SLOTS scored
// slots. When done it sends the scored truth (the bits and the first scored
// slot's start on the shared clock) to the tenant "leak-probe", which
// scores its guesses with it. Run with leak-probe.js: on one thread
// (--threads 1) the probe shares the victim's thread, on two (--threads 2)
// it does not. A preload may set PTS_LEAK_SLOTS and PTS_LEAK_WARM_MS
// (suite_host.c does).
const SLOTS = globalThis.PTS_LEAK_SLOTS ?? 40;
const WARM_MS = globalThis.PTS_LEAK_WARM_MS ?? 0;
const SLOT_MS = 10;
const WARM = Math.ceil(WARM_MS / SLOT_MS);
const bits = Array.from({ length: WARM + SLOTS }, () => (Math.random() < 0.5 ? 1 : 0));
const begin = performance.timeOrigin + performance.now() + 20;
function spin(ms) { const end = performance.now() + ms; while (performance.now() < end); }
function step() {
  const now = performance.timeOrigin + performance.now();
  const slot = Math.floor((now - begin) / SLOT_MS);
  if (slot >= bits.length) {
    host.postMessage('leak-probe',
                     { bits: bits.slice(WARM), start: begin + WARM * SLOT_MS, slotMs: SLOT_MS });
    return;
  }
  if (slot >= 0 && bits[slot]) {
    scheduler.postTask(() => { spin(1); step(); });
  } else {
    setTimeout(step, 1);
  }
}
setTimeout(step, 1);
