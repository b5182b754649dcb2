'use strict';
// ptsched for Node.js: the WICG Prioritized Task Scheduling API over the
// native ptsched loop (src/binding.c). The JS objects here are thin views:
// TaskController is Node's AbortController, TaskSignal is a Node AbortSignal
// (so `instanceof AbortSignal`, AbortSignal.any and EventTarget all work),
// and the native pts_signal behind each holds the priority and abort state the
// queues use.
//
// Scheduling state (spec: "current scheduling state", HostMakeJobCallback):
// while a task runs, the addon sets V8's continuation-preserved embedder data
// to the task's state; V8 stores that value on every promise reaction when it
// is registered (then, await) and restores it while the reaction runs, so an
// `await` continuation sees the state current at registration, across any
// number of awaits, at no cost per promise. Only promise jobs carry it
// (timers, I/O and immediates do not), as in the spec.

const path = require('node:path');
const fs = require('node:fs');

// The addon: PTSCHED_NODE_ADDON, else node-gyp's build (an installed
// package: build/Release), else the repository's Bazel build (node/build.sh).
function loadBinding() {
  const candidates = [
    process.env.PTSCHED_NODE_ADDON,
    path.join(__dirname, '..', 'build', 'Release', 'ptsched.node'),
    path.join(__dirname, '..', 'build', 'ptsched.node'),
  ];
  for (const file of candidates) {
    if (file && fs.existsSync(file)) {
      const mod = { exports: {} };
      process.dlopen(mod, path.resolve(file));
      return mod.exports;
    }
  }
  throw new Error('ptsched: the addon is not built; run `npm rebuild ptsched` ' +
                  '(node-gyp, needs a C compiler and python3), or in the ptsched ' +
                  'repository `bash node/build.sh` (Bazel)');
}

const native = loadBinding();

const NAMES = ['background', 'user-visible', 'user-blocking'];
const PRIO = { 'background': 0, 'user-visible': 1, 'user-blocking': 2 };
// Per signal (a TaskSignal or any Node AbortSignal the package has used):
// {c: the controller that aborts it (a TaskController, or the hidden
// AbortController of a TaskSignal.any() result), undefined for a plain Node
// signal; h: the native twin's handle, made on first use; dep: a
// TaskSignal.any() result}. In a WeakMap, not in properties: every Node
// AbortSignal has a map of its own (Node 20 sets its prototype after
// construction), so each property added to one copies its map (3-5 us
// measured), where a WeakMap entry costs a fraction of that.
const sigData = new WeakMap();
const kHandler = Symbol('ptsched.onprioritychange');
const kHandlerSet = Symbol('ptsched.onprioritychange.installed');
const kToken = Symbol('ptsched.token');
const kPriority = Symbol('ptsched.priority');
const kSignal = Symbol('ptsched.signal');

// ---- the task table ----
// Three entries a task: the callback, the scheduling state and the promise.
// The addon holds the slot number, reads the state from here when the task
// has one, and settles the promise (src/engine.cc), so the promise is the
// only other object a task costs. Yield continuations are not here: the
// addon keeps their promises and settles them without calling JS (a
// continuation is only its promise's fulfilment).
//
// The table is chunks of 1,024 slots (24 KB each, below V8's large-object
// size), added as slots are first needed and never copied: one growing
// array was reallocated (and copied) at every growth step as a young large
// object, and a burst of 100,000 tasks paid for that. Free slots are a list
// threaded through their first entry, so freeing one allocates nothing.

const CHUNK_BITS = 10;
const CHUNK_SLOTS = 1 << CHUNK_BITS;
const CHUNK_MASK = CHUNK_SLOTS - 1;
const table = []; // chunks of CHUNK_SLOTS slots, three entries each
let freeHead = -1; // free slots, threaded through their first entry
let slotCount = 0; // slots handed out at least once

function newSlot(cb, state) {
  let i = freeHead;
  let c;
  if (i >= 0) {
    c = table[i >> CHUNK_BITS];
    freeHead = c[(i & CHUNK_MASK) * 3];
  } else {
    i = slotCount++;
    if ((i & CHUNK_MASK) === 0) table.push(new Array(3 * CHUNK_SLOTS).fill(undefined));
    c = table[i >> CHUNK_BITS];
  }
  const o = (i & CHUNK_MASK) * 3;
  c[o] = cb;
  c[o + 1] = state;
  return i;
}

function releaseSlot(i) {
  const c = table[i >> CHUNK_BITS];
  const o = (i & CHUNK_MASK) * 3;
  c[o] = freeHead;
  c[o + 1] = undefined;
  c[o + 2] = undefined;
  freeHead = i;
}

// Called by the addon inside a Node callback scope for each task: hands the
// task's promise and scheduling state to the addon (enter(), which makes the
// state current), frees the slot and returns what the callback returns (or
// throws what it throws). The addon settles the promise after the scope's
// checkpoint (engine.cc), unless an abort rejected it meanwhile. (The addon
// reading the two entries itself cost more than this call: v8::Object::Get
// is a generic lookup.)
function run(i) {
  const c = table[i >> CHUNK_BITS];
  const o = (i & CHUNK_MASK) * 3;
  const cb = c[o];
  enter(c[o + 2], c[o + 1]);
  c[o] = freeHead;
  c[o + 1] = undefined;
  c[o + 2] = undefined;
  freeHead = i;
  return cb();
}

// What native.abort() returns: undefined, a count of slots in abortSlots,
// or (too many for it) an Int32Array of them.
const abortSlots = new Int32Array(256);
function releaseSlots(r) {
  if (r === undefined) return;
  if (typeof r === 'number') {
    for (let k = 0; k < r; k++) releaseSlot(abortSlots[k]);
  } else {
    for (let k = 0; k < r.length; k++) releaseSlot(r[k]);
  }
}

// A task's or continuation's promise: made here, settled by the addon
// through the V8 API. Optimised code allocates only the promise (the unused
// resolving functions are optimised away), faster than the V8 API's
// generic allocation. The intrinsic Promise (the addon settles only real
// promises), even if globalThis.Promise was replaced before this loaded.
const NativePromise = Object.getPrototypeOf((async () => {})()).constructor;
function noop() {}

function post(cb, handle, priority, delay, state) {
  const i = newSlot(cb, state);
  const p = new NativePromise(noop);
  table[i >> CHUNK_BITS][(i & CHUNK_MASK) * 3 + 2] = p;
  try {
    if (handle === undefined && priority === -1 && delay === 0) {
      // Nothing was queued: the Node-API form tries again and throws the error.
      if (fastPost(i) !== true) native.post(i);
    } else {
      native.post(i, handle, priority, delay);
    }
    return p;
  } catch (e) {
    releaseSlot(i);
    throw e;
  }
}

// Queues a continuation for the scheduling state {abort, prio} (prio: a
// priority number or a TaskSignal) and returns its promise, which the addon
// keeps and settles (a continuation has no table slot).
function queueYield(abort, prio, p = new NativePromise(noop)) {
  if (typeof prio === 'number') {
    native.yield(abort === null ? undefined : nativeOf(abort), prio, p);
  } else if (abort === prio) {
    native.yield(nativeOf(abort), -1, p);
  } else {
    // The priority follows a TaskSignal other than the abort source: one
    // dependent signal carries both.
    const both = TaskSignal.any(abort === null ? [] : [abort], { priority: prio });
    native.yield(nativeOf(both), -1, p);
  }
  return p;
}

// scheduler.yield() without options: inherit both. One native call reads the
// current state and, when there is none (user-visible, no signal), queues.
function yieldInherit() {
  const p = new NativePromise(noop);
  if (fastYield(p) === true) return p;
  // A state to inherit (or queueing failed: the Node-API form tries again
  // and throws the error).
  const inherited = currentState();
  if (inherited === undefined) return queueYield(null, 1, p);
  const abort = inherited.a;
  if (abort !== null && abort.aborted) return Promise.reject(abort.reason);
  return queueYield(abort, inherited.p, p);
}

function onPriorityChange(signal, previous) {
  signal.dispatchEvent(new TaskPriorityChangeEvent('prioritychange', {
    previousPriority: NAMES[previous],
  }));
}

// A native signal's abort event (the library's "signal abort", which runs
// the source's abort steps and event before each dependent's): fires the JS
// signal's own abort event, through Node's AbortController (a no-op if it
// has fired already).
function onAbort(signal, reason) {
  const d = sigData.get(signal);
  if (d !== undefined && d.c !== undefined) nodeAbort.call(d.c, reason);
  listenedDependents.delete(signal);
}

// TaskSignal.any() results kept alive for their listeners (see
// TaskSignal.prototype.addEventListener).
const listenedDependents = new Set();

const fast = native.init(run, onPriorityChange, onAbort, { __proto__: null }, table,
                         CHUNK_BITS, abortSlots);
const fastPost = fast.post;
const fastYield = fast.yield;
const enter = fast.enter;
// The current scheduling state: {a: abort source or null, p: priority source
// (a TaskSignal, or a fixed priority number)}, or undefined (null in the
// spec), read from V8's continuation-preserved embedder data.
const currentState = fast.state;

// ---- WebIDL conversions ----

function toPriority(value) {
  const s = `${value}`;
  if (!Object.prototype.hasOwnProperty.call(PRIO, s)) {
    throw new TypeError(`'${s}' is not a valid TaskPriority`);
  }
  return PRIO[s];
}

// [EnforceRange] unsigned long long
function toDelay(value) {
  let x = Number(value);
  if (!Number.isFinite(x)) throw new TypeError('delay is not a finite number');
  x = Math.trunc(x);
  if (x < 0 || x > Number.MAX_SAFE_INTEGER) throw new TypeError('delay is out of range');
  return x;
}

function toDictionary(value, what) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' && typeof value !== 'function') {
    throw new TypeError(`${what} is not an object`);
  }
  return value;
}

// ---- signals ----

// The 'abort' listener that hands a Node signal's abort to its native twin
// (spec: the signal's abort algorithms, which reject the pending tasks, then
// its dependents'). Node fires the signal's event itself, so the dependents
// (TaskSignal.any() results) fire from this listener, before the signal's
// listeners registered after it (docs/node.md, Limits). (Listening on a Node
// AbortSignal.any() dependent instead would order them as DOM does, but Node
// keeps such a dependent with listeners alive until it aborts: every plain
// signal used once would be kept for good.)
function forwardAbort(event) {
  const signal = event.target;
  releaseSlots(native.abort(sigData.get(signal).h, signal.reason));
}

// The native handle of any AbortSignal, made on first use: a
// TaskController's signal gets a task controller (aborted through
// TaskController.prototype.abort), any other a plain controller that a
// listener aborts when Node fires the signal's event.
function nativeOf(signal) {
  let d = sigData.get(signal);
  if (d === undefined) {
    d = { c: undefined, h: undefined, dep: false };
    sigData.set(signal, d);
  }
  let h = d.h;
  if (h === undefined) {
    const tc = d.c;
    if (tc instanceof TaskController) {
      h = native.controller(true, tc[kPriority] ?? 1);
    } else {
      h = native.controller(false, 0);
      if (!nodeAborted.call(signal)) signal.addEventListener('abort', forwardAbort, { once: true });
    }
    d.h = h;
    if (nodeAborted.call(signal)) native.abort(h, signal.reason); // pending nothing yet
  }
  return h;
}

function isTaskSignal(s) {
  const d = sigData.get(s);
  return d !== undefined && d.c !== undefined;
}

function checkTaskSignal(s) {
  if (!isTaskSignal(s)) throw new TypeError('Illegal invocation');
}

// A new Node AbortSignal made into a TaskSignal; the controller that can
// abort it is kept with its data.
function newTaskSignal(controller, dep, handle) {
  const s = nodeSignal.call(controller);
  Object.setPrototypeOf(s, TaskSignal.prototype);
  const d = { c: controller, h: undefined, dep };
  sigData.set(s, d);
  if (handle !== undefined) d.h = handle(s);
  return s;
}

class TaskSignal extends AbortSignal {
  constructor() {
    throw new TypeError('Illegal constructor');
    super(); // eslint-disable-line no-unreachable
  }

  addEventListener(type, listener, options) {
    if (isTaskSignal(this)) {
      const t = `${type}`;
      if (t === 'prioritychange') native.listen(nativeOf(this), this);
      // A TaskSignal.any() result that someone listens to stays alive while
      // it can still fire (until it aborts), even if JS drops it: the
      // native twin only holds it weakly. (Node's AbortSignal.any() does
      // the same for its dependent signals.)
      if (sigData.get(this).dep && !this.aborted && (t === 'prioritychange' || t === 'abort')) {
        listenedDependents.add(this);
      }
    }
    return super.addEventListener(type, listener, options);
  }

  // A TaskSignal.any() result is aborted (with its reason) as soon as the
  // library marks it, before its source's abort event fires (DOM "signal
  // abort" steps 3-4); Node's own state follows at its event.
  get aborted() {
    if (super.aborted) return true;
    const d = sigData.get(this);
    return d !== undefined && d.dep && native.aborted(d.h);
  }

  get reason() {
    const d = sigData.get(this);
    if (d === undefined || !d.dep || super.aborted) return super.reason;
    return native.aborted(d.h) ? native.reason() : undefined;
  }

  throwIfAborted() {
    if (this.aborted) throw this.reason;
  }

  get priority() {
    checkTaskSignal(this);
    const d = sigData.get(this);
    // No native twin yet: a TaskController's signal still at its initial
    // priority (setPriority makes the twin).
    if (d.h === undefined) return NAMES[d.c[kPriority] ?? 1];
    return NAMES[native.priority(d.h)];
  }

  get onprioritychange() {
    checkTaskSignal(this);
    return this[kHandler] ?? null;
  }

  set onprioritychange(value) {
    checkTaskSignal(this);
    const h = (typeof value === 'object' || typeof value === 'function') ? value : null;
    this[kHandler] = h;
    // The handler keeps the listener position it first got (DOM event handlers).
    if (h !== null && !this[kHandlerSet]) {
      this[kHandlerSet] = true;
      this.addEventListener('prioritychange', callHandler);
    }
  }

  // spec: TaskSignal.any(signals, init)
  static any(signals, init = undefined) {
    const list = [];
    for (const s of signals) {
      if (!(s instanceof AbortSignal)) throw new TypeError('not an AbortSignal');
      list.push(s);
    }
    const dict = toDictionary(init, 'init');
    let priority = 1;
    let source;
    if (dict !== undefined && dict.priority !== undefined) {
      const p = dict.priority;
      if (p instanceof TaskSignal) source = p;
      else priority = toPriority(p);
    }
    const ac = new AbortController();
    const aborted = list.find((s) => s.aborted);
    if (aborted !== undefined) {
      const s = newTaskSignal(ac, false, (sig) => native.any([], priority, source && nativeOf(source), sig, []));
      ac.abort(aborted.reason);
      return s;
    }
    const handles = list.map(nativeOf);
    const s = newTaskSignal(ac, true, (sig) => native.any(handles, priority, source && nativeOf(source), sig, list));
    return s;
  }
}

function callHandler(event) {
  const h = event.currentTarget[kHandler];
  if (typeof h === 'function') {
    if (h.call(event.currentTarget, event) === false) event.preventDefault();
  }
}

const nodeAbort = AbortController.prototype.abort;
const nodeSignal = Object.getOwnPropertyDescriptor(AbortController.prototype, 'signal').get;
const nodeAborted = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted').get;

// As Node's AbortController (which makes its signal on first use), a
// TaskController costs its object only: the TaskSignal is made when first
// read, and its native twin when first used (nativeOf), so a controller
// that is never used by postTask is as cheap as an AbortController.
class TaskController extends AbortController {
  constructor(init = undefined) {
    if (init === undefined) {
      super();
      return;
    }
    const dict = toDictionary(init, 'init');
    const priority = dict !== undefined && dict.priority !== undefined ? toPriority(dict.priority) : 1;
    super();
    if (priority !== 1) this[kPriority] = priority; // absent: user-visible
  }

  get signal() {
    return this[kSignal] ?? (this[kSignal] = newTaskSignal(this, false, undefined));
  }

  // spec (DOM): signal abort, by the library when the signal has a native
  // twin: the pending tasks' abort steps, the signal's abort event (onAbort,
  // which fires the JS one), then each dependent's steps and event.
  abort(reason = new DOMException('This operation was aborted', 'AbortError')) {
    const s = this[kSignal];
    const h = s === undefined ? undefined : sigData.get(s).h;
    if (h !== undefined && !nodeAborted.call(s)) releaseSlots(native.abort(h, reason));
    nodeAbort.call(this, reason);
  }

  setPriority(priority) {
    const p = toPriority(priority);
    const s = this.signal;
    if (native.setPriority(nativeOf(s), p) < 0) {
      throw new DOMException('a priority change of this signal is being dispatched',
                             'NotAllowedError');
    }
  }
}

class TaskPriorityChangeEvent extends Event {
  #previous;
  constructor(type, init) {
    if (arguments.length < 2) throw new TypeError('init is required');
    const dict = toDictionary(init, 'init');
    if (dict === undefined || dict.previousPriority === undefined) {
      throw new TypeError('previousPriority is required');
    }
    const previous = NAMES[toPriority(dict.previousPriority)];
    super(type, dict);
    this.#previous = previous;
  }

  get previousPriority() {
    return this.#previous;
  }
}

// ---- the scheduler ----

class Scheduler {
  constructor(token) {
    if (token !== kToken) throw new TypeError('Illegal constructor');
  }

  // spec: schedule a postTask task
  postTask(callback, options = undefined) {
    try {
      if (typeof callback !== 'function') throw new TypeError('callback is not a function');
      if (options === undefined) return post(callback, undefined, -1, 0, undefined);
      const dict = toDictionary(options, 'options');
      let delay = 0;
      let priority = -1;
      let signal = null;
      if (dict !== undefined) { // members in WebIDL (lexicographic) order
        if (dict.delay !== undefined) delay = toDelay(dict.delay);
        if (dict.priority !== undefined) priority = toPriority(dict.priority);
        if (dict.signal !== undefined) {
          if (!(dict.signal instanceof AbortSignal)) throw new TypeError('signal is not an AbortSignal');
          signal = dict.signal;
        }
      }
      if (signal === null) {
        if (priority === -1) return post(callback, undefined, -1, delay, undefined);
        return post(callback, undefined, priority, delay, { a: null, p: priority });
      }
      if (signal.aborted) return Promise.reject(signal.reason);
      const state = {
        a: signal,
        p: priority !== -1 ? priority : (isTaskSignal(signal) ? signal : 1),
      };
      return post(callback, nativeOf(signal), priority, delay, state);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  // spec: schedule a yield continuation
  yield(options = undefined) {
    try {
      if (options === undefined) return yieldInherit();
      let signalOpt = null;
      let priorityOpt = null;
      const dict = toDictionary(options, 'options');
      if (dict !== undefined) {
        if (dict.priority !== undefined) {
          const p = `${dict.priority}`;
          priorityOpt = p === 'inherit' ? 'inherit' : toPriority(p);
        }
        if (dict.signal !== undefined) {
          const s = dict.signal;
          if (s instanceof AbortSignal) signalOpt = s;
          else if (`${s}` === 'inherit') signalOpt = 'inherit';
          else throw new TypeError('signal is neither an AbortSignal nor "inherit"');
        }
      }
      if (signalOpt === null && priorityOpt === null) {
        signalOpt = 'inherit';
        priorityOpt = 'inherit';
      } else if (signalOpt === 'inherit' && priorityOpt === null) {
        priorityOpt = 'inherit';
      }
      // spec: compute the scheduling state from options
      const inherited = currentState();
      let abort = null;
      let prio = null;
      if (signalOpt === 'inherit') {
        if (inherited !== undefined) abort = inherited.a;
      } else {
        abort = signalOpt;
      }
      if (priorityOpt === 'inherit') {
        if (inherited !== undefined) prio = inherited.p;
      } else if (priorityOpt !== null) {
        prio = priorityOpt;
      } else if (signalOpt !== null && signalOpt !== 'inherit' && isTaskSignal(signalOpt)) {
        prio = signalOpt;
      }
      if (prio === null) prio = 1;
      if (abort !== null && abort.aborted) return Promise.reject(abort.reason);
      return queueYield(abort, prio);
    } catch (e) {
      return Promise.reject(e);
    }
  }
}

const scheduler = new Scheduler(kToken);

// queueMicrotask with HostMakeJobCallback: V8 carries the scheduling state on
// promise reactions but not on microtasks queued by queueMicrotask(), so the
// state current when it is called is restored around the callback.
const nodeQueueMicrotask = globalThis.queueMicrotask;
function queueMicrotask(callback) {
  const state = typeof callback === 'function' ? currentState() : undefined;
  if (state === undefined) return nodeQueueMicrotask(callback);
  return nodeQueueMicrotask(() => {
    const saved = currentState();
    native.setState(state);
    try {
      callback();
    } finally {
      native.setState(saved);
    }
  });
}

function install(target = globalThis) {
  const define = (name, value, enumerable) => Object.defineProperty(target, name, {
    value, writable: true, configurable: true, enumerable,
  });
  define('scheduler', scheduler, true);
  define('Scheduler', Scheduler, false);
  define('TaskController', TaskController, false);
  define('TaskSignal', TaskSignal, false);
  define('TaskPriorityChangeEvent', TaskPriorityChangeEvent, false);
  if (target.queueMicrotask === nodeQueueMicrotask) define('queueMicrotask', queueMicrotask, true);
}

module.exports = {
  scheduler,
  Scheduler,
  TaskController,
  TaskSignal,
  TaskPriorityChangeEvent,
  install,
  queueMicrotask,
  // For tests: [pending tasks, pending delayed tasks, live native signals].
  _stats: () => native.stats(),
};
