'use strict';
// setInterval/clearInterval beside setTimeout (HTML "timer initialisation
// steps" with repeat), and the order of timer tasks against postTask.
// Runtime-neutral (docs/host.md, "One suite, two runtimes"): uses only the
// globals test, assert, sleep and assertNoTaskLeft (harness.js in ptsched-host,
// node-shim.js under Node) and the web API. Ids are only passed back to the
// clear functions (Node's are objects).

test('setInterval repeats until clearInterval, with its extra arguments', async () => {
  const seen = [];
  await new Promise((resolve) => {
    const id = setInterval((a, b) => {
      seen.push(`${a}${b}`);
      if (seen.length === 3) {
        clearInterval(id);
        resolve();
      }
    }, 1, 'x', 'y');
  });
  await sleep(10);
  assert.deepEqual(seen, ['xy', 'xy', 'xy']);
});

test('clearInterval before the first run: the callback never runs', async () => {
  let runs = 0;
  const id = setInterval(() => runs++, 0);
  clearInterval(id);
  await sleep(10);
  assert.equal(runs, 0);
});

test('one id space: clearTimeout stops an interval, clearInterval a timeout', async () => {
  let interval = 0;
  let timeout = 0;
  const i = setInterval(() => {
    interval++;
    clearTimeout(i);
  }, 1);
  const t = setTimeout(() => timeout++, 1);
  clearInterval(t);
  await sleep(20);
  assert.equal(interval, 1);
  assert.equal(timeout, 0);
});

test('an interval task runs after the user-blocking tasks queued before it fired', async () => {
  const order = [];
  await new Promise((resolve) => {
    let n = 0;
    const id = setInterval(() => {
      order.push(`interval${n}`);
      if (++n === 2) {
        clearInterval(id);
        resolve();
        return;
      }
      scheduler.postTask(() => order.push(`ub${n}`), { priority: 'user-blocking' });
    }, 1);
  });
  assert.deepEqual(order, ['interval0', 'ub1', 'interval1']);
});

test('timers of equal delay fire in the order they were set, an interval among them', async () => {
  const order = [];
  await new Promise((resolve) => {
    setTimeout(() => order.push('t1'), 5);
    const id = setInterval(() => {
      order.push('i');
      clearInterval(id);
    }, 5);
    setTimeout(() => {
      order.push('t2');
      resolve();
    }, 5);
  });
  assert.deepEqual(order, ['t1', 'i', 't2']);
});
