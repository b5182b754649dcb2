// A typed use of the package, checked by `tsc --noEmit` (test/types.test.js).
import api, { scheduler as s, TaskController as TC } from 'ptsched';

async function main(): Promise<void> {
  const tc = new TaskController({ priority: 'background' });
  const n: number = await scheduler.postTask(() => 1, { signal: tc.signal, delay: 5 });
  const str: string = await s.postTask(async () => 'x', { priority: 'user-blocking' });
  tc.setPriority('user-visible');
  const p: TaskPriority = tc.signal.priority;
  tc.signal.addEventListener('prioritychange', (e) => { const prev: TaskPriority = e.previousPriority; void prev; });
  tc.signal.onprioritychange = (e) => console.log(e.previousPriority);
  const any: TaskSignal = TaskSignal.any([tc.signal, new AbortController().signal], { priority: tc.signal });
  await scheduler.yield({ signal: 'inherit', priority: 'inherit' });
  await api.scheduler.yield();
  const ev = new TaskPriorityChangeEvent('prioritychange', { previousPriority: 'background' });
  const ctl: AbortController = new TC();
  const sig: AbortSignal = any;
  void [n, str, p, ev, ctl, sig];
}
void main;
