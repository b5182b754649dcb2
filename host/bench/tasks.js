// host/bench/tasks.js: a tenant's steady work for the host's scaling
// figures: 2000 postTasks over three priorities, each a few microseconds
// of script, and 200 yields inside one long background task.
const N = 2000;
const prios = ['user-blocking', 'user-visible', 'background'];
let sum = 0;
const ps = [];
for (let i = 0; i < N; i++) {
  ps.push(scheduler.postTask(() => { for (let k = 0; k < 50; k++) sum += k; }, { priority: prios[i % 3] }));
}
ps.push(scheduler.postTask(async () => {
  for (let i = 0; i < 200; i++) await scheduler.yield();
}, { priority: 'background' }));
Promise.all(ps).then(() => { if (sum !== N * 1225) throw new Error('lost tasks'); });
