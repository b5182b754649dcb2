/* ptsched for Node.js: the Node-API addon behind node/lib/ptsched.js.
 *
 * One env_st per Node environment (the main thread and each worker thread):
 * its own pts_loop, created on that thread and run only there, from three
 * libuv handles of the environment's own uv loop. The JS objects
 * (TaskController, TaskSignal, Node's AbortSignal) are views; the native
 * pts_signal behind each is the source of truth for priority and abort, so
 * queue order, setPriority and abort cost what they cost in C.
 *
 * Loop integration (the invariant: ptsched never blocks or starves libuv):
 *  1. post/yield queue into the pts_loop and start `idle`, which keeps libuv's
 *     poll from blocking and keeps the process alive while work is runnable.
 *  2. `check` (after poll, the setImmediate phase) runs the pts_loop until it
 *     is idle or a time budget (BUDGET_NS) is spent: then pts_loop_stop() ends
 *     the run after the current task and the rest waits for the next
 *     iteration, after I/O and timers had their turn.
 *  3. A run that ends idle stops `idle`: an idle scheduler holds nothing open
 *     (`check` is unref'd).
 *  4. Delayed tasks: their deadlines (pts clock) sit in a small binary heap;
 *     `timer` (ref'd while any delayed task is pending) wakes the loop at the
 *     earliest and starts `idle`. Entries of aborted tasks only cause one
 *     spurious wake-up.
 * Each task runs inside its own Node callback scope, so process.nextTick
 * callbacks and the microtask checkpoint run after it, like any macrotask;
 * the task's promise is settled inside that scope, before the checkpoint
 * (engine.cc: pts_node_engine_run).
 *
 * Abort: JS calls abort(handle, reason) from the signal's 'abort' listener;
 * pts_controller_abort() then calls every pending task's function with
 * PTS_EABORT synchronously, and those reject with st->reason (the JS reason).
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <uv.h>

#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptsched.h"

#include "engine.h"

/* The budget is checked after every task. With an invariant TSC (x86-64)
 * the check reads the counter itself, scaled by a rate measured against
 * uv_hrtime once the addon has been loaded for CALIBRATE_NS: on the project
 * machine (a VM) clock_gettime takes 29 ns and rdtsc 11, and the clock was
 * about a tenth of a task's run path. Elsewhere uv_hrtime is read. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif
#define CALIBRATE_NS (10 * 1000 * 1000)

/* How long one check-phase run may take before libuv gets the thread back. */
#define BUDGET_NS (2 * 1000 * 1000)

typedef struct env_st {
  napi_env env;
  uv_loop_t *uv;
  pts_loop *loop;
  pts_scheduler *sched;
  uv_check_t check;
  uv_idle_t idle;
  uv_timer_t timer;
  pts_node_engine *engine; /* run(slot), the task table, the async resource */
  napi_ref prio_fn;    /* JS: onPriorityChange(signal, previous) */
  napi_ref abort_fn;   /* JS: onAbort(signal, reason) */
  napi_value reason;   /* the abort reason while abort() runs, else NULL */
  uint64_t budget_end;
  bool budget_hit;
  bool tsc;            /* the TSC is invariant (HAVE_TSC); tsc0/ns0 set */
  uint64_t tsc0, ns0;  /* the TSC and uv_hrtime at load, for the rate */
  uint64_t tsc_budget; /* BUDGET_NS in TSC ticks; 0 until calibrated */
  uint64_t tsc_end;    /* budget_end in TSC ticks, if tsc_budget */
  bool closing;        /* env teardown began: no more JS */
  napi_async_cleanup_hook_handle cleanup_handle;
  int open_handles;    /* uv handles not yet closed */
  size_t mirrors;      /* live mirrors (they point at us) */
  size_t delayed;      /* delayed tasks not yet run or aborted */
  uint64_t armed;      /* deadline the timer is armed for, 0 = none */
  uint64_t *heap;      /* deadlines of delayed tasks, min-heap, pts ns */
  size_t heap_n, heap_cap;
  size_t pending;      /* tasks and continuations not yet settled */
  int32_t *aborted;    /* slots of the tasks abort() released, see js_abort */
  int32_t *abort_buf;  /* JS's Int32Array for them (init), kept by abort_ref */
  size_t abort_buf_len;
  napi_ref abort_ref;
  size_t n_aborted, cap_aborted;
  /* The result promise of each pending task with an abort source, by slot
   * (pts_scheduler_post_task: its abort steps stay attached until the task
   * completes), NULL elsewhere; and the running task's. */
  pts_promise **cps;
  size_t cap_cps;
  pts_promise *run_cp;
} env_st;

/* A postTask task is a slot number of the JS task table (lib/ptsched.js:
 * callback, state, promise), carried as the pts task's data with two bits:
 * "delayed", and "has a scheduling state" (a postTask with a signal or a
 * priority), so a task without one does not read it. No allocation, no
 * reference and no handle per task here, and the only JS object per task
 * besides the caller's callback is the promise. A yield continuation has the
 * "yield" bit and an index of the addon's own store of pending yield promises
 * instead (engine.cc): running one needs no JS call. */
#define SLOT_DATA(slot, delayed, state)                                        \
  ((void *)(uintptr_t)(((uintptr_t)(slot) << 3) | ((uintptr_t)(state) << 1) | (delayed)))
#define YIELD_DATA(index) ((void *)(uintptr_t)(((uintptr_t)(index) << 3) | 4u))
#define DATA_SLOT(data) ((int32_t)((uintptr_t)(data) >> 3))
#define DATA_YIELD(data) (((uintptr_t)(data) >> 2) & 1u)
#define DATA_STATE(data) (((uintptr_t)(data) >> 1) & 1u)
#define DATA_DELAYED(data) ((uintptr_t)(data) & 1u)

/* The native side of one JS AbortSignal/TaskSignal. */
typedef struct mirror {
  env_st *st;
  pts_controller *ctl; /* NULL for a TaskSignal.any() result */
  pts_signal *sig;
  napi_ref js;         /* weak: the JS signal, made once the twin has a
                        * listener (mirror_ref); NULL before */
  bool listens;        /* an abort listener is registered (data = this) */
  bool listens_pc;     /* a prioritychange listener is registered */
} mirror;

#define CHECK(call)                                                            \
  do {                                                                         \
    if ((call) != napi_ok) return NULL;                                        \
  } while (0)

static napi_value throw_code(napi_env env, int code) {
  const char *dom = pts_err_dom_name(code);
  char name[32];
  snprintf(name, sizeof name, "%s", dom ? dom : pts_err_name(code));
  if (code == PTS_ETYPE) napi_throw_type_error(env, NULL, pts_strerror(code));
  else if (code == PTS_ERANGE) napi_throw_range_error(env, NULL, pts_strerror(code));
  else napi_throw_error(env, name, pts_strerror(code));
  return NULL;
}

static void maybe_free_st(env_st *st) {
  if (st->closing && st->open_handles == 0 && st->mirrors == 0) {
    free(st->aborted);
    free(st->cps);
    free(st->heap);
    free(st);
  }
}

/* Reports an exception left by a JS call we made, as Node reports any
 * callback's: process 'uncaughtException'. */
static void report_pending(napi_env env) {
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (pending) {
    napi_value e;
    napi_get_and_clear_last_exception(env, &e);
    napi_fatal_exception(env, e);
  }
}

/* ---- delayed-task heap ---- */

static void heap_push(env_st *st, uint64_t v) {
  if (st->heap_n == st->heap_cap) {
    size_t cap = st->heap_cap ? st->heap_cap * 2 : 16;
    uint64_t *h = realloc(st->heap, cap * sizeof *h);
    if (!h) return; /* the timer re-arms from the next deadline; a late wake is all */
    st->heap = h;
    st->heap_cap = cap;
  }
  size_t i = st->heap_n++;
  while (i > 0 && st->heap[(i - 1) / 2] > v) {
    st->heap[i] = st->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  st->heap[i] = v;
}

static void heap_pop(env_st *st) {
  uint64_t v = st->heap[--st->heap_n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= st->heap_n) break;
    if (c + 1 < st->heap_n && st->heap[c + 1] < st->heap[c]) c++;
    if (st->heap[c] >= v) break;
    st->heap[i] = st->heap[c];
    i = c;
  }
  if (st->heap_n) st->heap[i] = v;
}

static void on_timer(uv_timer_t *h);

static void arm_timer(env_st *st) {
  if (st->delayed == 0) {
    st->heap_n = 0;
    st->armed = 0;
    uv_timer_stop(&st->timer);
    return;
  }
  if (st->heap_n == 0) return;
  uint64_t next = st->heap[0];
  if (st->armed && st->armed <= next && uv_is_active((uv_handle_t *)&st->timer))
    return;
  uint64_t now = pts_loop_now(st->loop);
  uint64_t ms = next > now ? (next - now + 999999) / 1000000 : 0;
  st->armed = next;
  uv_timer_start(&st->timer, on_timer, ms, 0);
}

static void on_idle(uv_idle_t *h) { (void)h; }

static void wake(env_st *st) { uv_idle_start(&st->idle, on_idle); }

static void on_timer(uv_timer_t *h) {
  env_st *st = h->data;
  uint64_t now = pts_loop_now(st->loop);
  st->armed = 0;
  while (st->heap_n && st->heap[0] <= now) heap_pop(st);
  wake(st);
  arm_timer(st);
}

/* ---- running tasks ---- */

/* The env_st whose pts_loop is calling back on this thread: set by each
 * call into ptsched that can call task_fn (the loop's run, abort, teardown),
 * and restored after, since the addon may be loaded more than once into one
 * environment (each load has its own env_st and loop). */
static _Thread_local env_st *cur_st;

static env_st *enter_st(env_st *st) {
  env_st *saved = cur_st;
  cur_st = st;
  return saved;
}

static void run_loop(void *arg) {
  env_st *st = arg;
  env_st *saved = enter_st(st);
  pts_loop_run(st->loop, PTS_RUN_UNTIL_IDLE);
  cur_st = saved;
}

static void on_check(uv_check_t *h) {
  env_st *st = h->data;
  if (!uv_is_active((uv_handle_t *)&st->idle)) return;
  uint64_t now = uv_hrtime();
  st->budget_end = now + BUDGET_NS;
  st->budget_hit = false;
#if HAVE_TSC
  if (st->tsc) {
    uint64_t t = __rdtsc();
    if (st->tsc_budget == 0 && now - st->ns0 >= CALIBRATE_NS) {
      double per_ns = (double)(t - st->tsc0) / (double)(now - st->ns0);
      /* A rate outside 0.1-100 GHz is not a clock to trust. */
      if (per_ns > 0.1 && per_ns < 100) st->tsc_budget = (uint64_t)(BUDGET_NS * per_ns);
      else st->tsc = false;
    }
    st->tsc_end = t + st->tsc_budget;
  }
#endif
  /* One handle scope for the whole run (engine.h). */
  pts_node_engine_scoped(st->engine, run_loop, st);
  if (!st->budget_hit) uv_idle_stop(&st->idle);
}

/* After each task: end the run once the budget is spent. The clock is read
 * after every task (the TSC or a vDSO read, see HAVE_TSC): sampling every
 * Nth task would let N - 1 long tasks overrun the budget and starve I/O. */
static void after_task(env_st *st) {
  if (st->budget_hit) return;
#if HAVE_TSC
  bool over = st->tsc_budget ? __rdtsc() >= st->tsc_end : uv_hrtime() >= st->budget_end;
#else
  bool over = uv_hrtime() >= st->budget_end;
#endif
  if (over) {
    st->budget_hit = true;
    pts_loop_stop(st->loop);
  }
}

/* spec: the task handle's abort steps, for the running task. The library
 * rejects its result promise (run_cp) where its abort steps come in the
 * signal's abort: before the later ones' steps and the signal's event. JS
 * learns of it at the next of those (each calls this first) or when the
 * abort returns, so its JS promise is rejected in the library's order. */
static void sync_running(env_st *st) {
  if (st->run_cp && pts_promise_get_state(st->run_cp) == PTS_PROMISE_REJECTED)
    pts_node_engine_reject_running(st->engine, st->reason);
}

/* The task function of both forms. status 0: run the task (engine.cc: its
 * state, run(slot) and its promise, in a callback scope); PTS_EABORT: the
 * slot is handed back by the abort() that is running; PTS_ECANCELED: the
 * loop is going away. */
static void task_fn(void *data, int status) {
  env_st *st = cur_st;
  st->pending--;
  if (DATA_DELAYED(data)) {
    st->delayed--;
    if (st->delayed == 0) arm_timer(st);
  }
  if (st->closing || status == PTS_ECANCELED) return;
  if (status != 0) sync_running(st);
  int32_t slot = DATA_SLOT(data);
  if (DATA_YIELD(data)) {
    /* A yield continuation: settle its promise (rejected inside js_abort,
     * fulfilled in a callback scope otherwise). */
    if (status != 0) {
      pts_node_engine_settle_yield(st->engine, slot, false, st->reason);
    } else if (pts_node_engine_settle_yield(st->engine, slot, true, NULL) < 0) {
      st->budget_hit = true;
      pts_loop_stop(st->loop);
    } else {
      after_task(st);
    }
    return;
  }
  if (status != 0) {
    /* Inside js_abort: reject now with its reason; JS frees the slot. */
    pts_node_engine_reject(st->engine, slot, st->reason);
    if (st->n_aborted == st->cap_aborted) {
      size_t cap = st->cap_aborted ? st->cap_aborted * 2 : 64;
      int32_t *a = realloc(st->aborted, cap * sizeof *a);
      if (!a) return; /* out of memory: the slot is not reused */
      st->aborted = a;
      st->cap_aborted = cap;
    }
    st->aborted[st->n_aborted++] = slot;
    return;
  }
  if (pts_node_engine_run(st->engine, slot, DATA_STATE(data)) < 0) {
    /* The isolate is terminating (process.exit() in a worker): run no more
     * JS; teardown releases the rest. */
    st->budget_hit = true;
    pts_loop_stop(st->loop);
    return;
  }
  after_task(st);
}

/* The callback of a task with an abort source (pts_scheduler_post_task):
 * while it runs, its result promise is run_cp, which the library rejects if
 * the signal aborts before the task completes (js_abort then rejects the JS
 * promise). Its own result is not used: the JS promise is settled by the
 * engine, from the callback's outcome, unless that abort came first. */
static pts_value task_cb(void *data, int status) {
  env_st *st = cur_st;
  int32_t slot = DATA_SLOT(data);
  pts_promise *cp = st->cps[slot];
  st->cps[slot] = NULL;
  pts_promise *saved = st->run_cp;
  if (status == 0) st->run_cp = cp;
  task_fn(data, status);
  st->run_cp = saved;
  pts_promise_unref(cp);
  return pts_undefined();
}

/* ---- argument helpers ---- */

static env_st *get_st(napi_env env) {
  void *p = NULL;
  napi_get_instance_data(env, &p);
  return p;
}

static mirror *get_mirror(napi_env env, napi_value v) {
  napi_valuetype ty;
  if (napi_typeof(env, v, &ty) != napi_ok || ty != napi_external) return NULL;
  void *p = NULL;
  napi_get_value_external(env, v, &p);
  return p;
}

static int get_int(napi_env env, napi_value v, int dflt) {
  int32_t i;
  if (napi_get_value_int32(env, v, &i) != napi_ok) return dflt;
  return i;
}

/* ---- scheduler ---- */

/* The common part of post and yield: queue(...) as the pts call. On an
 * error nothing is queued and a JS error is thrown (returns false). */
typedef int (*queue_fn)(env_st *st, void *data, const void *opts);

static bool queue_slot(napi_env env, env_st *st, int32_t slot, queue_fn queue,
                       void *data, const void *opts) {
  int rc = slot < 0 ? PTS_EINVAL : queue(st, data, opts);
  if (rc < 0) {
    throw_code(env, rc);
    return false;
  }
  st->pending++;
  return true;
}

static int queue_post(env_st *st, void *data, const void *opts) {
  const pts_post_options *o = opts;
  if (!o->signal) return pts_scheduler_post_task_cb(st->sched, task_fn, data, opts);
  /* With an abort source: the promise form, whose result stays abortable
   * until the task completes (task_cb). */
  size_t slot = (size_t)DATA_SLOT(data);
  if (slot >= st->cap_cps) {
    size_t cap = st->cap_cps ? st->cap_cps : 64;
    while (cap <= slot) cap *= 2;
    pts_promise **a = realloc(st->cps, cap * sizeof *a);
    if (!a) return PTS_ENOMEM;
    memset(a + st->cap_cps, 0, (cap - st->cap_cps) * sizeof *a);
    st->cps = a;
    st->cap_cps = cap;
  }
  /* A signal the library has aborted while JS has not yet seen it (a
   * dependent, from a listener of its source): the library calls task_cb
   * with PTS_EABORT during the call and returns the rejected promise. */
  pts_promise *cp = NULL;
  st->cps[slot] = NULL;
  env_st *saved = enter_st(st);
  int rc = pts_scheduler_post_task(st->sched, task_cb, data, opts, &cp);
  cur_st = saved;
  if (rc == 0 && pts_promise_get_state(cp) == PTS_PROMISE_PENDING) st->cps[slot] = cp;
  else pts_promise_unref(cp);
  return rc;
}

static int queue_yield(env_st *st, void *data, const void *opts) {
  return pts_scheduler_yield_cb(st->sched, opts, task_fn, data);
}

/* post(slot, signalHandle|undefined, priority|-1, delayMs): queues the task
 * of that slot (JS made its promise, the slot's third entry); throws
 * (nothing queued) on an error code. */
static napi_value js_post(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  env_st *st = get_st(env);
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  if (argc > 1) {
    mirror *m = get_mirror(env, argv[1]);
    double delay = 0;
    napi_get_value_double(env, argv[3], &delay);
    o.signal = m ? m->sig : NULL;
    o.priority = get_int(env, argv[2], PTS_PRIORITY_UNSET);
    o.delay_ms = (int64_t)delay;
  }
  bool delayed = o.delay_ms > 0;
  bool state = o.signal || o.priority != PTS_PRIORITY_UNSET; /* as JS post() */
  int32_t slot = get_int(env, argv[0], -1);
  if (!queue_slot(env, st, slot, queue_post, SLOT_DATA(slot, delayed, state), &o)) return NULL;
  if (delayed) {
    st->delayed++;
    heap_push(st, pts_loop_now(st->loop) + (uint64_t)o.delay_ms * 1000000u);
    arm_timer(st);
  } else {
    wake(st);
  }
  return NULL;
}

int pts_node_post_plain(void *host, int32_t slot) {
  env_st *st = host;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  if (st->closing || slot < 0) return PTS_EINVAL;
  int rc = queue_post(st, SLOT_DATA(slot, 0, 0), &o);
  if (rc < 0) return rc;
  st->pending++;
  wake(st);
  return 0;
}

int pts_node_yield_plain(void *host, int32_t index) {
  env_st *st = host;
  pts_yield_options o = PTS_YIELD_OPTIONS_INIT;
  o.priority = PTS_PRIORITY_USER_VISIBLE;
  if (st->closing) return PTS_EINVAL;
  int rc = queue_yield(st, YIELD_DATA(index), &o);
  if (rc < 0) return rc;
  st->pending++;
  wake(st);
  return 0;
}

/* yield(signalHandle|undefined, priority|-1, promise): the caller (JS) has
 * computed the scheduling state and made the promise; this queues the
 * continuation that fulfils it. */
static napi_value js_yield(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  env_st *st = get_st(env);
  mirror *m = get_mirror(env, argv[0]);
  pts_yield_options o = PTS_YIELD_OPTIONS_INIT;
  o.signal = m ? m->sig : NULL;
  o.priority = get_int(env, argv[1], PTS_PRIORITY_UNSET);
  if (!m && o.priority == PTS_PRIORITY_UNSET) o.priority = PTS_PRIORITY_USER_VISIBLE;
  int32_t index = pts_node_engine_keep_yield(st->engine, argv[2]);
  if (index < 0) return throw_code(env, PTS_EINVAL);
  if (!queue_slot(env, st, index, queue_yield, YIELD_DATA(index), &o)) {
    pts_node_engine_drop_yield(st->engine, index);
    return NULL;
  }
  wake(st);
  return NULL;
}

/* ---- signals ---- */

static void on_native_event(void *data, const pts_event *ev) {
  mirror *m = data;
  env_st *st = m->st;
  if (st->closing) return;
  if (ev->type == PTS_EVENT_ABORT) sync_running(st);
  napi_env env = st->env;
  napi_handle_scope hs;
  napi_open_handle_scope(env, &hs);
  napi_value sig = NULL, fn, undef, argv[2], r;
  if (m->js) napi_get_reference_value(env, m->js, &sig);
  if (sig) {
    napi_get_undefined(env, &undef);
    argv[0] = sig;
    if (ev->type == PTS_EVENT_PRIORITYCHANGE) {
      napi_get_reference_value(env, st->prio_fn, &fn);
      napi_create_int32(env, ev->previous_priority, &argv[1]);
    } else {
      napi_get_reference_value(env, st->abort_fn, &fn);
      argv[1] = st->reason ? st->reason : undef;
    }
    if (napi_call_function(env, undef, fn, 2, argv, &r) != napi_ok)
      report_pending(env);
  }
  napi_close_handle_scope(env, hs);
}

static void mirror_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  mirror *m = data;
  env_st *st = m->st;
  if (!st->closing) {
    if (m->listens)
      pts_signal_remove_listener(m->sig, PTS_EVENT_ABORT, on_native_event, m);
    if (m->listens_pc)
      pts_signal_remove_listener(m->sig, PTS_EVENT_PRIORITYCHANGE, on_native_event, m);
    if (m->ctl) pts_controller_unref(m->ctl);
    else pts_signal_unref(m->sig);
    if (m->js) napi_delete_reference(env, m->js);
  }
  free(m);
  st->mirrors--;
  maybe_free_st(st);
}

/* The weak reference to the JS signal that native events are delivered to,
 * made when the first listener is added: a twin that only carries tasks
 * (a React-style controller per task) costs no reference. */
static bool mirror_ref(napi_env env, mirror *m, napi_value jssig) {
  return m->js || napi_create_reference(env, jssig, 0, &m->js) == napi_ok;
}

static napi_value wrap_mirror(napi_env env, env_st *st, mirror *m) {
  napi_value ext;
  m->st = st;
  if (napi_create_external(env, m, mirror_finalize, NULL, &ext) != napi_ok) {
    if (m->ctl) pts_controller_unref(m->ctl);
    else pts_signal_unref(m->sig);
    free(m);
    return NULL;
  }
  st->mirrors++;
  return ext;
}

/* controller(isTask, priority) -> handle */
static napi_value js_controller(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  env_st *st = get_st(env);
  bool is_task = false;
  napi_get_value_bool(env, argv[0], &is_task);
  mirror *m = calloc(1, sizeof *m);
  if (!m) return throw_code(env, PTS_ENOMEM);
  int rc = is_task ? pts_task_controller_new(st->loop, get_int(env, argv[1], -1), &m->ctl)
                   : pts_abort_controller_new(st->loop, &m->ctl);
  if (rc < 0) {
    free(m);
    return throw_code(env, rc);
  }
  m->sig = pts_controller_signal(m->ctl);
  return wrap_mirror(env, st, m);
}

/* any(handles[], priority, prioritySourceHandle|undefined, jsSignal,
 * jsSources[]) */
static napi_value js_any(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  env_st *st = get_st(env);
  uint32_t n = 0;
  napi_get_array_length(env, argv[0], &n);
  pts_signal **sigs = malloc((n ? n : 1) * sizeof *sigs);
  if (!sigs) return throw_code(env, PTS_ENOMEM);
  for (uint32_t i = 0; i < n; i++) {
    napi_value e, js;
    napi_get_element(env, argv[0], i, &e);
    napi_get_element(env, argv[4], i, &js);
    mirror *sm = get_mirror(env, e);
    if (!sm) {
      free(sigs);
      return throw_code(env, PTS_EINVAL);
    }
    sigs[i] = sm->sig;
    /* spec (DOM): signal abort fires the source's abort event before its
     * dependents'. A controller's JS event is fired from its native one
     * (JS onAbort), so the library's own order holds: the source's steps
     * and event, then each dependent's. */
    if (sm->ctl && !sm->listens && mirror_ref(env, sm, js) &&
        pts_signal_add_listener(sm->sig, PTS_EVENT_ABORT, on_native_event, sm, false) == 0)
      sm->listens = true;
  }
  pts_task_signal_any_init init = PTS_TASK_SIGNAL_ANY_INIT;
  init.priority = get_int(env, argv[1], PTS_PRIORITY_USER_VISIBLE);
  mirror *ps = get_mirror(env, argv[2]);
  init.priority_source = ps ? ps->sig : NULL;
  mirror *m = calloc(1, sizeof *m);
  int rc = m ? pts_task_signal_any(st->loop, sigs, n, &init, &m->sig) : PTS_ENOMEM;
  free(sigs);
  if (rc < 0) {
    free(m);
    return throw_code(env, rc);
  }
  napi_value ext = wrap_mirror(env, st, m);
  if (ext && mirror_ref(env, m, argv[3]) &&
      pts_signal_add_listener(m->sig, PTS_EVENT_ABORT, on_native_event, m, false) == 0)
    m->listens = true;
  return ext;
}

/* abort(handle, reason) -> the slots whose tasks this abort released (their
 * promises already rejected with reason): their count, the slots in the
 * shared Int32Array of init, or, when they do not fit there, a new
 * Int32Array of them; undefined if none. Aborts nest (an
 * abort listener may abort another signal): each call hands back only the
 * slots added during its own extent, outside nested calls. */
static napi_value js_abort(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  env_st *st = get_st(env);
  mirror *m = get_mirror(env, argv[0]);
  if (!m || !m->ctl) return NULL;
  napi_value saved = st->reason;
  size_t start = st->n_aborted;
  st->reason = argv[1];
  env_st *saved_st = enter_st(st);
  pts_controller_abort(m->ctl, NULL);
  cur_st = saved_st;
  sync_running(st);
  st->reason = saved;
  size_t n = st->n_aborted - start;
  if (n == 0) return NULL;
  void *buf;
  napi_value ab, arr;
  st->n_aborted = start;
  if (n <= st->abort_buf_len) {
    /* The common case: the slots go to JS's shared Int32Array (no
     * allocation), and the count is returned. */
    memcpy(st->abort_buf, st->aborted + start, n * sizeof(int32_t));
    CHECK(napi_create_uint32(env, (uint32_t)n, &arr));
    return arr;
  }
  CHECK(napi_create_arraybuffer(env, n * sizeof(int32_t), &buf, &ab));
  memcpy(buf, st->aborted + start, n * sizeof(int32_t));
  CHECK(napi_create_typedarray(env, napi_int32_array, n, ab, 0, &arr));
  return arr;
}

/* setPriority(handle, priority) -> 0 or a PTS_E* code (PTS_ENOTALLOWED while
 * this signal's priority change is being dispatched). */
static napi_value js_set_priority(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mirror *m = get_mirror(env, argv[0]);
  if (!m || !m->ctl) return throw_code(env, PTS_EINVAL);
  napi_value r;
  CHECK(napi_create_int32(env, pts_controller_set_priority(m->ctl, get_int(env, argv[1], -1)), &r));
  return r;
}

/* listen(handle): from now on the signal's priority changes call JS
 * onPriorityChange. Registered only once JS listens for 'prioritychange', so
 * a change nobody observes costs no JS call and no event object. */
static napi_value js_listen(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mirror *m = get_mirror(env, argv[0]);
  if (m && !m->listens_pc && mirror_ref(env, m, argv[1]) &&
      pts_signal_add_listener(m->sig, PTS_EVENT_PRIORITYCHANGE, on_native_event, m, false) == 0)
    m->listens_pc = true;
  return NULL;
}

/* aborted(handle) -> whether the native signal is aborted: a dependent is
 * marked before any abort event fires (DOM "signal abort" steps 3-4), while
 * its JS twin learns it only at its own event. reason() -> the reason of
 * the abort that is running (the one a marked dependent has), or undefined. */
static napi_value js_aborted(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], r;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mirror *m = get_mirror(env, argv[0]);
  CHECK(napi_get_boolean(env, m && pts_signal_aborted(m->sig), &r));
  return r;
}

static napi_value js_reason(napi_env env, napi_callback_info info) {
  (void)info;
  env_st *st = get_st(env);
  return st->reason;
}

static napi_value js_priority(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], r;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mirror *m = get_mirror(env, argv[0]);
  CHECK(napi_create_int32(env, m ? pts_signal_priority(m->sig) : -1, &r));
  return r;
}

/* stats() -> [pending, delayed, mirrors] for tests. */
static napi_value js_stats(napi_env env, napi_callback_info info) {
  (void)info;
  env_st *st = get_st(env);
  napi_value arr, v;
  CHECK(napi_create_array_with_length(env, 3, &arr));
  double vals[3] = {(double)st->pending, (double)st->delayed, (double)st->mirrors};
  for (uint32_t i = 0; i < 3; i++) {
    napi_create_double(env, vals[i], &v);
    napi_set_element(env, arr, i, v);
  }
  return arr;
}

/* state(): the current scheduling state (V8's continuation-preserved
 * embedder data), or undefined. */
static napi_value js_state(napi_env env, napi_callback_info info) {
  (void)env;
  (void)info;
  return pts_node_cped_get();
}

/* setState(state): makes state current (for the queueMicrotask wrapper). */
static napi_value js_set_state(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  pts_node_cped_set(argv[0]);
  return NULL;
}

/* init(run, onPriorityChange, onAbort, resource, table, chunkBits,
 * abortSlots) -> {post, yield, state}, the per-task entry points
 * (engine.cc). abortSlots: the Int32Array abort() writes released slots
 * to. */
static napi_value js_init(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  env_st *st = get_st(env);
  if (st->engine) return NULL;
  napi_typedarray_type ty;
  void *data;
  size_t len;
  CHECK(napi_get_typedarray_info(env, argv[6], &ty, &len, &data, NULL, NULL));
  if (ty != napi_int32_array) return throw_code(env, PTS_EINVAL);
  CHECK(napi_create_reference(env, argv[6], 1, &st->abort_ref));
  st->abort_buf = data;
  st->abort_buf_len = len;
  CHECK(napi_create_reference(env, argv[1], 1, &st->prio_fn));
  CHECK(napi_create_reference(env, argv[2], 1, &st->abort_fn));
  st->engine = pts_node_engine_new(argv[0], argv[4], argv[3], get_int(env, argv[5], 0), st);
  if (!st->engine) return throw_code(env, PTS_EINVAL);
  napi_value fast = pts_node_engine_functions(st->engine);
  if (!fast) return throw_code(env, PTS_ENOMEM);
  return fast;
}

/* ---- lifecycle ---- */

/* The last handle closed: teardown may go on (Node unloads the addon after
 * its async cleanup hooks are removed, so no callback of ours runs later). */
static void on_closed(uv_handle_t *h) {
  env_st *st = h->data;
  if (--st->open_handles == 0) napi_remove_async_cleanup_hook(st->cleanup_handle);
  maybe_free_st(st);
}

/* Environment teardown (process exit, worker end), an async cleanup hook:
 * the remaining tasks are released without JS, then the handles closed;
 * on_closed ends the hook when libuv has closed them. */
static void cleanup(napi_async_cleanup_hook_handle handle, void *arg) {
  env_st *st = arg;
  st->cleanup_handle = handle;
  st->closing = true;
  env_st *saved = enter_st(st);
  pts_loop_free(st->loop);
  cur_st = saved;
  st->loop = NULL;
  pts_node_engine_free(st->engine);
  st->engine = NULL;
  uv_close((uv_handle_t *)&st->check, on_closed);
  uv_close((uv_handle_t *)&st->idle, on_closed);
  uv_close((uv_handle_t *)&st->timer, on_closed);
}

NAPI_MODULE_INIT() {
  env_st *st = get_st(env);
  if (!st) {
    st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->env = env;
    if (napi_get_uv_event_loop(env, &st->uv) != napi_ok ||
        pts_loop_new(NULL, &st->loop) != 0) {
      free(st);
      napi_throw_error(env, NULL, "ptsched: cannot create the loop");
      return NULL;
    }
    st->sched = pts_global_scheduler(pts_loop_default_global(st->loop));
    uv_check_init(st->uv, &st->check);
    uv_idle_init(st->uv, &st->idle);
    uv_timer_init(st->uv, &st->timer);
    st->check.data = st->idle.data = st->timer.data = st;
#if HAVE_TSC
    unsigned a, b, c, d;
    /* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in all
     * states, so ticks convert to time. */
    if (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8))) {
      st->tsc = true;
      st->tsc0 = __rdtsc();
      st->ns0 = uv_hrtime();
    }
#endif
    st->open_handles = 3;
    uv_check_start(&st->check, on_check);
    uv_unref((uv_handle_t *)&st->check);
    napi_set_instance_data(env, st, NULL, NULL);
    napi_add_async_cleanup_hook(env, cleanup, st, NULL);
  }
  static const struct {
    const char *name;
    napi_callback fn;
  } fns[] = {
      {"init", js_init},         {"post", js_post},
      {"yield", js_yield},       {"controller", js_controller},
      {"any", js_any},           {"abort", js_abort},
      {"setPriority", js_set_priority}, {"priority", js_priority},
      {"stats", js_stats},       {"listen", js_listen},
      {"state", js_state},       {"setState", js_set_state},
      {"aborted", js_aborted},   {"reason", js_reason},
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value f;
    CHECK(napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f));
    CHECK(napi_set_named_property(env, exports, fns[i].name, f));
  }
  return exports;
}
