// A tenant that uses the whole scheduling API: priorities, a TaskController
// whose priority changes while its tasks wait, yield() inside a long task,
// and an abort. Prints the order the library chose.
const order = [];
const tc = new TaskController({ priority: 'background' });
tc.signal.onprioritychange = (e) => order.push(`prioritychange ${e.previousPriority}->${tc.signal.priority}`);
const work = [
  scheduler.postTask(() => order.push('bg (moved up)'), { signal: tc.signal }),
  scheduler.postTask(() => order.push('user-visible')),
  scheduler.postTask(() => order.push('user-blocking'), { priority: 'user-blocking' }),
];
tc.setPriority('user-blocking');
const ac = new AbortController();
const dropped = scheduler.postTask(() => order.push('never'), { signal: ac.signal })
  .catch((e) => order.push(`aborted: ${e.name}`));
ac.abort();
const long = scheduler.postTask(async () => {
  for (let i = 0; i < 3; i++) {
    order.push(`chunk ${i}`);
    await scheduler.yield();
  }
}, { priority: 'background' });
Promise.all([...work, dropped, long]).then(() => console.log(order.join('\n')));
