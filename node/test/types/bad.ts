// Must NOT compile: an unknown priority, a TaskSignal from a plain signal.
const bad1 = scheduler.postTask(() => 1, { priority: 'urgent' });
const bad2: TaskSignal = new AbortController().signal;
void [bad1, bad2];
