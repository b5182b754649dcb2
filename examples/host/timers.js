// Timers, microtasks and AbortSignal.timeout() in one tenant.
const t0 = performance.now();
queueMicrotask(() => console.log('microtask first'));
const id = setTimeout(() => console.log('cancelled: never printed'), 5);
clearTimeout(id);
setTimeout(() => console.log(`timer after ${performance.now() - t0 >= 20 ? '>= 20' : '< 20'} ms`), 20);
scheduler.postTask(() => 'late', { signal: AbortSignal.timeout(10), delay: 1000 })
  .catch((e) => console.log(`postTask rejected: ${e.name}`));
