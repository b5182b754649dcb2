// host/prelude.js: evaluated once in every tenant's realm before its script.
// It shapes the JS objects (EventTarget, Event, DOMException, the signals,
// controllers and the scheduler); every decision about order, priority and
// abort is the C library's, reached through `native` (host/host.cc). The
// native handles (controllers, signals) live in WeakMaps keyed by the JS
// wrappers, so scripts cannot reach them. Returns the hooks the host calls:
// fire (a library event at a signal), makeError, deliver (a message).
(function (native, g) {
  'use strict';
  const secret = Symbol('ptsched.internal');
  const handles = new WeakMap(); // AbortSignal/TaskSignal wrapper -> signal handle
  const controllers = new WeakMap(); // controller -> controller handle
  const lists = new WeakMap(); // EventTarget -> [{type, cb, once, capture, removed, attr}]
  const evstate = new WeakMap(); // Event -> its dispatch state

  function define(obj, name, value) {
    Object.defineProperty(obj, name, { value, writable: true, configurable: true, enumerable: false });
  }
  function dict(v, what) {
    if (v === undefined || v === null) return {};
    if (typeof v !== 'object' && typeof v !== 'function') {
      throw new TypeError(`${what}: the options must be an object`);
    }
    return v;
  }
  // WebIDL [EnforceRange] unsigned long long.
  function enforceRange(v, what) {
    const n = Number(v);
    if (!Number.isFinite(n)) throw new TypeError(`${what}: ${String(v)} is not a finite number`);
    const t = Math.trunc(n);
    if (t < 0 || t > Number.MAX_SAFE_INTEGER) throw new TypeError(`${what}: ${t} is out of range`);
    return t;
  }

  // ---- DOMException (WebIDL): an Error whose name is one of the DOM's ----
  const codes = { IndexSizeError: 1, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11,
    SyntaxError: 12, InvalidAccessError: 15, TypeMismatchError: 17, SecurityError: 18,
    NetworkError: 19, AbortError: 20, TimeoutError: 23, DataCloneError: 25 };
  class DOMException extends Error {
    constructor(message = '', name = 'Error') {
      super(String(message));
      define(this, 'name', String(name));
    }
    get code() { return codes[this.name] || 0; }
  }

  // ---- Event, TaskPriorityChangeEvent ----
  class Event {
    constructor(type, init) {
      if (arguments.length === 0) throw new TypeError('Event: the type is required');
      const i = dict(init, 'Event');
      evstate.set(this, { type: String(type), target: null, current: null, trusted: false,
        dispatching: false, stop: false, canceled: false,
        cancelable: !!i.cancelable, bubbles: !!i.bubbles, time: native.now() });
    }
    get type() { return evstate.get(this).type; }
    get target() { return evstate.get(this).target; }
    get srcElement() { return evstate.get(this).target; }
    get currentTarget() { return evstate.get(this).current; }
    get isTrusted() { return evstate.get(this).trusted; }
    get bubbles() { return evstate.get(this).bubbles; }
    get cancelable() { return evstate.get(this).cancelable; }
    get defaultPrevented() { return evstate.get(this).canceled; }
    get eventPhase() { return evstate.get(this).dispatching ? 2 : 0; }
    get timeStamp() { return evstate.get(this).time; }
    composedPath() { const s = evstate.get(this); return s.dispatching ? [s.current] : []; }
    preventDefault() { const s = evstate.get(this); if (s.cancelable) s.canceled = true; }
    stopPropagation() {}
    stopImmediatePropagation() { evstate.get(this).stop = true; }
  }
  class TaskPriorityChangeEvent extends Event {
    #previous;
    constructor(type, init) {
      if (arguments.length < 2) throw new TypeError('TaskPriorityChangeEvent: 2 arguments required');
      const i = dict(init, 'TaskPriorityChangeEvent');
      if (i.previousPriority === undefined) {
        throw new TypeError('TaskPriorityChangeEvent: previousPriority is required');
      }
      const prev = native.checkPriority(String(i.previousPriority));
      super(type, i);
      this.#previous = prev;
    }
    get previousPriority() { return this.#previous; }
  }

  // ---- EventTarget ----
  function listOf(t) {
    const l = lists.get(t);
    if (!l) throw new TypeError('not an EventTarget');
    return l;
  }
  // A signal's native portal (one library listener) is on while the wrapper
  // has any JS listener: the library's event order reaches them through it.
  function changed(t, l) {
    const h = handles.get(t);
    if (h !== undefined) native.observe(h, l.length > 0 ? t : null);
  }
  function captureOf(o) { return typeof o === 'boolean' ? o : !!(o && typeof o === 'object' && o.capture); }
  class EventTarget {
    constructor() { lists.set(this, []); }
    addEventListener(type, cb, options) {
      const l = listOf(this);
      if (cb === null || cb === undefined) return;
      type = String(type);
      const capture = captureOf(options);
      const o = options && typeof options === 'object' ? options : {};
      const once = !!o.once;
      const signal = o.signal;
      if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('addEventListener: signal must be an AbortSignal');
      if (signal && signal.aborted) return;
      if (l.some((e) => !e.attr && e.type === type && e.cb === cb && e.capture === capture)) return;
      l.push({ type, cb, once, capture, removed: false, attr: false });
      changed(this, l);
      if (signal) signal.addEventListener('abort', () => this.removeEventListener(type, cb, { capture }), { once: true });
    }
    removeEventListener(type, cb, options) {
      const l = listOf(this);
      type = String(type);
      const capture = captureOf(options);
      const i = l.findIndex((e) => !e.attr && e.type === type && e.cb === cb && e.capture === capture);
      if (i < 0) return;
      l[i].removed = true;
      l.splice(i, 1);
      changed(this, l);
    }
    dispatchEvent(event) {
      listOf(this);
      if (!(event instanceof Event)) throw new TypeError('dispatchEvent: not an Event');
      const s = evstate.get(event);
      if (s.dispatching) throw new DOMException('the event is being dispatched', 'InvalidStateError');
      s.trusted = false;
      return dispatch(this, event);
    }
  }
  function dispatch(target, event) {
    const s = evstate.get(event);
    s.dispatching = true;
    s.target = target;
    s.current = target;
    s.stop = false;
    const l = listOf(target);
    for (const e of l.slice()) {
      if (e.removed || e.type !== s.type) continue;
      if (e.once) {
        e.removed = true;
        l.splice(l.indexOf(e), 1);
        changed(target, l);
      }
      try {
        if (typeof e.cb === 'function') e.cb.call(target, event);
        else if (e.cb && typeof e.cb.handleEvent === 'function') e.cb.handleEvent(event);
        else throw new TypeError('the listener is not callable');
      } catch (err) {
        native.reportError(err);
      }
      if (s.stop) break;
    }
    s.dispatching = false;
    s.current = null;
    return !s.canceled;
  }
  // Event handler attributes (onabort...): one entry that keeps its place.
  function getHandler(t, type) {
    const e = listOf(t).find((x) => x.attr && x.type === type);
    return e ? e.cb : null;
  }
  function setHandler(t, type, fn) {
    const l = listOf(t);
    const i = l.findIndex((x) => x.attr && x.type === type);
    if (typeof fn !== 'function' && (typeof fn !== 'object' || fn === null)) fn = null;
    if (fn === null) {
      if (i >= 0) { l[i].removed = true; l.splice(i, 1); changed(t, l); }
    } else if (i >= 0) {
      l[i].cb = fn;
    } else {
      l.push({ type, cb: fn, once: false, capture: false, removed: false, attr: true });
      changed(t, l);
    }
  }

  // ---- AbortSignal, TaskSignal ----
  function H(sig) {
    const h = handles.get(sig);
    if (h === undefined) throw new TypeError('not an AbortSignal');
    return h;
  }
  function wrap(h) {
    return native.signalIsTask(h) ? new TaskSignal(secret, h) : new AbortSignal(secret, h);
  }
  function signalList(signals, what) {
    if (signals === null || signals === undefined || typeof signals[Symbol.iterator] !== 'function') {
      throw new TypeError(`${what}: the signals must be a sequence`);
    }
    return Array.from(signals, (s) => H(s));
  }
  class AbortSignal extends EventTarget {
    constructor(key, h) {
      if (key !== secret) throw new TypeError('Illegal constructor');
      super();
      handles.set(this, h);
    }
    get aborted() { return native.signalAborted(H(this)); }
    get reason() { return native.signalReason(H(this)); }
    throwIfAborted() { if (native.signalAborted(H(this))) throw native.signalReason(H(this)); }
    get onabort() { return getHandler(this, 'abort'); }
    set onabort(fn) { setHandler(this, 'abort', fn); }
    static abort(reason) { return wrap(native.signalAbort(reason)); }
    static timeout(ms) { return wrap(native.signalTimeout(enforceRange(ms, 'AbortSignal.timeout'))); }
    static any(signals) { return wrap(native.signalAny(signalList(signals, 'AbortSignal.any'), false, null, null)); }
  }
  class TaskSignal extends AbortSignal {
    get priority() { return native.signalPriority(H(this)); }
    get onprioritychange() { return getHandler(this, 'prioritychange'); }
    set onprioritychange(fn) { setHandler(this, 'prioritychange', fn); }
    static any(signals, init) {
      const hs = signalList(signals, 'TaskSignal.any');
      const i = dict(init, 'TaskSignal.any');
      let prio = 'user-visible';
      let source = null;
      if (i.priority instanceof TaskSignal) source = H(i.priority);
      else if (i.priority !== undefined) prio = native.checkPriority(String(i.priority));
      return wrap(native.signalAny(hs, true, prio, source));
    }
  }

  // ---- AbortController, TaskController ----
  function C(c) {
    const h = controllers.get(c);
    if (h === undefined) throw new TypeError('not a controller');
    return h;
  }
  class AbortController {
    #signal;
    constructor() {
      // TaskController passes (secret, priority); a script cannot.
      const h = native.controllerNew(arguments[0] === secret ? arguments[1] : undefined);
      controllers.set(this, h);
      this.#signal = wrap(native.controllerSignal(h));
    }
    get signal() { return this.#signal; }
    abort(reason) { native.controllerAbort(C(this), reason); }
  }
  class TaskController extends AbortController {
    constructor(init) {
      const i = dict(init, 'TaskController');
      const p = i.priority === undefined ? 'user-visible' : native.checkPriority(String(i.priority));
      super(secret, p);
    }
    setPriority(priority) { native.controllerSetPriority(C(this), String(priority)); }
  }

  // ---- Scheduler ----
  class Scheduler {
    constructor(key) { if (key !== secret) throw new TypeError('Illegal constructor'); }
    postTask(callback, options) {
      try {
        if (typeof callback !== 'function') throw new TypeError('postTask: the callback is not a function');
        const o = dict(options, 'postTask');
        const delay = o.delay === undefined ? 0 : enforceRange(o.delay, 'postTask delay');
        const priority = o.priority === undefined ? undefined : String(o.priority);
        let sig = null;
        if (o.signal !== undefined) {
          if (!(o.signal instanceof AbortSignal)) throw new TypeError('postTask: signal must be an AbortSignal');
          sig = H(o.signal);
        }
        return native.postTask(callback, priority, sig, delay);
      } catch (e) {
        return Promise.reject(e);
      }
    }
    yield(options) {
      try {
        const o = dict(options, 'yield');
        let priority = o.priority === undefined ? undefined : String(o.priority);
        let sig = o.signal;
        if (sig !== undefined && sig !== 'inherit') {
          if (!(sig instanceof AbortSignal)) throw new TypeError('yield: signal must be an AbortSignal or "inherit"');
          sig = H(sig);
        }
        return native.yield(priority, sig);
      } catch (e) {
        return Promise.reject(e);
      }
    }
  }

  // ---- timers, microtasks, console, performance ----
  function setTimeout(cb, ms = 0, ...args) {
    if (typeof cb !== 'function') throw new TypeError('setTimeout: the callback must be a function');
    let d = Math.trunc(Number(ms));
    if (!(d > 0)) d = 0;
    return native.setTimeout(args.length ? () => cb(...args) : cb, d, false);
  }
  function setInterval(cb, ms = 0, ...args) {
    if (typeof cb !== 'function') throw new TypeError('setInterval: the callback must be a function');
    let d = Math.trunc(Number(ms));
    if (!(d > 0)) d = 0;
    return native.setTimeout(args.length ? () => cb(...args) : cb, d, true);
  }
  // One id space for timeouts and intervals (HTML): either clears either.
  function clearTimeout(id) { if (typeof id === 'number') native.clearTimeout(id); }
  function clearInterval(id) { clearTimeout(id); }
  function queueMicrotask(cb) {
    if (typeof cb !== 'function') throw new TypeError('queueMicrotask: the callback must be a function');
    native.queueMicrotask(cb);
  }
  function show(v, depth) {
    if (typeof v === 'string') return depth ? JSON.stringify(v) : v;
    if (v instanceof Error) return v.stack ? `${v.name}: ${v.message}\n${v.stack}` : String(v);
    if (typeof v === 'function') return `[Function ${v.name || 'anonymous'}]`;
    if (typeof v === 'symbol' || typeof v === 'bigint') return String(v);
    if (v && typeof v === 'object' && depth < 2) {
      if (Array.isArray(v)) return `[ ${v.map((x) => show(x, depth + 1)).join(', ')} ]`;
      const ks = Object.keys(v);
      return ks.length ? `{ ${ks.map((k) => `${k}: ${show(v[k], depth + 1)}`).join(', ')} }` : '{}';
    }
    return String(v);
  }
  const fmt = (args) => args.map((a) => show(a, 0)).join(' ');
  const console = {
    log: (...a) => native.print(1, fmt(a)),
    info: (...a) => native.print(1, fmt(a)),
    debug: (...a) => native.print(1, fmt(a)),
    error: (...a) => native.print(2, fmt(a)),
    warn: (...a) => native.print(2, fmt(a)),
  };
  // timeOrigin: the tenant's start on the host's monotonic clock (ms), the
  // same clock for every tenant, so timeOrigin + now() compares across them.
  const performance = { now: () => native.now(), timeOrigin: native.timeOrigin() };

  // ---- the tenant channel: host.postMessage(name, data), onmessage ----
  const host = {
    get name() { return native.tenantName(); },
    get tenants() { return native.tenantNames(); },
    postMessage(name, data) { native.postMessage(String(name), JSON.stringify(data === undefined ? null : data)); },
  };

  for (const [name, value] of Object.entries({ DOMException, Event, EventTarget, TaskPriorityChangeEvent,
    AbortSignal, TaskSignal, AbortController, TaskController, Scheduler,
    setTimeout, clearTimeout, setInterval, clearInterval, queueMicrotask, console,
    performance, host })) {
    define(g, name, value);
  }
  define(g, 'scheduler', new Scheduler(secret));
  define(g, 'self', g);
  g.onmessage = null;

  return {
    fire(target, type, previous) {
      const ev = type === 'prioritychange'
        ? new TaskPriorityChangeEvent(type, { previousPriority: previous }) : new Event(type);
      evstate.get(ev).trusted = true;
      dispatch(target, ev);
    },
    makeError(name, message) {
      if (name === 'TypeError') return new TypeError(message);
      if (name === 'RangeError') return new RangeError(message);
      if (name === 'Error') return new Error(message);
      return new DOMException(message, name);
    },
    deliver(source, json) {
      const h = g.onmessage;
      if (typeof h === 'function') h.call(g, { type: 'message', data: JSON.parse(json), source });
    },
  };
})
