/* agents/remote.c: operations on an agent from any thread: the producers'
 * side (admission, the push into the agent's loop inbox and the wake-up of
 * its worker), postTask with a result callback (optionally delivered on
 * another agent's loop), queueing an ordinary task, and the command runner
 * that runs posts in place on the agent's thread; the remote controllers
 * are in controllers.c.
 *
 * Every operation is one command pushed into the agent's loop inbox once
 * admitted (pts__agent_admit), applied whole by the agent's thread between two
 * tasks, or released with PTS_ECANCELED when the loop is freed first. Each
 * command's handler runs exactly once, so each callback and each done runs
 * exactly once.
 *
 * Atomicity of a remote abort racing the start of a task (docs/agents.md):
 * 1. The post command and the abort command are both applied by the agent's
 *    thread, between two tasks; only that thread takes the loop's next
 *    enqueue order and changes the scheduler's queues.
 * 2. When the post applies, the task takes exactly one enqueue order (or
 *    none, if the signal is already aborted: done gets PTS_EABORT at once).
 * 3. When the abort applies, the task is either still queued (the scheduler
 *    removes it, its callback gets PTS_EABORT once, done gets PTS_EABORT) or it
 *    has already started (the abort finds it running or gone: it only sets the
 *    signal; done gets the callback's result).
 * 4. There is no third state: the step that starts a task and the command
 *    that aborts it are serialised by the one thread that owns both.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "agents/agents_impl.h"
#include "sync/alloc.h"
#include "ptsched/promise.h"
#include "sched/sched_internal.h"
#include "sync/nodecache.h"

/* WebIDL [EnforceRange] unsigned long long: at most 2^53 - 1. */
#define MAX_SAFE_INTEGER 9007199254740991LL

/* ==== postTask from any thread ==== */

/* The first part is what every post needs; the poster writes only that
 * part for a post with no done callback, controller or delay (no `extras`),
 * so the pool thread takes one cache line from the poster per task: the
 * part is 56 bytes, the rest of the node cache's first line after its
 * 8-byte tag (sync/nodecache.h). Such a plain post is a node cache's small
 * block: the part, then the scheduler's handle of the task
 * (pts__scheduler_post_in), written by the pool thread if the task waits in
 * a queue. In the caller's pts_agent_task_req (64 bytes) it is the part
 * alone, and a waiting task's handle comes from the scheduler
 * (pts_scheduler_post_task_cb), like a post with extras, which is a large block.
 * Measured in docs/agents.md ("Hot paths"). */
/* ---- the producers' side: admission, the push, the wake hook ---- */

bool pts__inbox_take_slow(pts_agent *a) {
  /* Relaxed: counts, no data travels with them. The applied count only
   * grows, so an old reading only overstates the depth; a fresh one may
   * count commands taken after ours (the depth is then below zero,
   * hence the signed differences). */
  int64_t limit = (int64_t)a->inbox_limit;
  uint64_t t = atomic_fetch_add_explicit(&a->inbox_taken, 1, memory_order_relaxed);
  if ((int64_t)(t - atomic_load_explicit(&a->inbox_seen, memory_order_relaxed)) < limit)
    return true;
  uint64_t applied = atomic_load_explicit(&a->inbox_applied, memory_order_relaxed);
  if (applied > atomic_load_explicit(&a->inbox_seen, memory_order_relaxed))
    atomic_store_explicit(&a->inbox_seen, applied, memory_order_relaxed); /* a hint */
  if ((int64_t)(t - applied) < limit) return true;
  atomic_fetch_sub_explicit(&a->inbox_taken, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&a->st_inbox_refused, 1, memory_order_relaxed);
  return false;
}

void pts__agent_unadmit(pts_agent *a, int rank) {
  /* release: the teardown's load that sees the count back down sees what
   * the caller did with the pool before. */
  atomic_fetch_sub_explicit(&a->posted[rank].n, 1, memory_order_release);
}


void pts__agent_push(pts_agent *a, pts__command *cmd) {
  /* The loop is not touched after the push: once the command has left the
   * inbox, the teardown may free it (destroy protocol step 3). The agent's
   * wake hook, called directly, touches the handle (the caller's reference)
   * and, when it pushes the node, the worker (counted in wakers). */
  pts__loop_push_command_from_any_thread(a->loop, cmd);
  pts__agent_wake(a);
}

/* The loop's wake hook (protocol step 2). Any thread. */
void pts__agent_wake(void *ctx) {
  pts_agent *a = ctx;
  /* A load first: while the agent is signaled (the common case for a
   * stream of posts) the line stays shared and the post writes nothing
   * here. seq_cst: reading true means the worker's clearing store comes
   * later in the total order, so its poll after that store sees our push
   * (the same Dekker pair as the exchange). */
  if (atomic_load_explicit(&a->signaled, memory_order_seq_cst)) return;
  /* Counted before the exchange (seq_cst, a Dekker pair with the teardown's
   * exchange and its loads of the count): a teardown that saw no waker
   * took the token first, so our exchange returns true and we push
   * nothing. */
  atomic_fetch_add_explicit(&a->wakers, 1, memory_order_seq_cst);
  if (!atomic_exchange_explicit(&a->signaled, true, memory_order_seq_cst)) {
    /* Relaxed: a->w changes only while the token is held by a mover, and
     * our exchange took the token from the store that gave it back after
     * the change (seq_cst RMW reads it), which orders the change before. */
    pts__worker *w = atomic_load_explicit(&a->w, memory_order_relaxed);
    pts__mpsc_push(&w->signaled, &a->sig_node);
    pts__parker_unpark(&w->parker);
  }
  atomic_fetch_sub_explicit(&a->wakers, 1, memory_order_release);
}

typedef struct xtask {
  pts__command cmd; /* the post, in the target's inbox */
  pts_agent *agent; /* the target (no reference: used on its thread only) */
  pts_task_callback cb;
  void *data;
  uint64_t due_ns; /* when the task became due, for the start-delay histogram;
                    * 0: not timed (pts_agent_set_delay_stats) */
  int32_t priority;
  uint8_t rank; /* agents_impl.h: taken once, by the poster */
  bool extras;  /* the fields below are set, not the handle */
  /* In the caller's pts_agent_task_req: the caller's again once cb is
   * called, so nothing reads it after that call. A plain post. */
  bool caller_owned;
  union {
    pts__sched_slot handle; /* a plain post's scheduler handle */
    struct {                /* with extras only */
      pts_result_fn done;
      void *done_data;
      pts_agent *reply_to;       /* a reference, or NULL */
      pts_remote_controller *rc; /* a command reference until applied, or NULL */
      pts_signal *signal;        /* borrowed: held by the task's state while pending */
      int64_t delay_ms;
      int status;
      pts_value result;
      pts__command reply_cmd; /* the result, in reply_to's inbox */
      pts__task reply_task;   /* ...then a message task on reply_to's loop */
    };
  };
} xtask;

/* A plain post's block: the common part and the handle. */
#define XTASK_PLAIN_SIZE (offsetof(xtask, handle) + sizeof(pts__sched_slot))
_Static_assert(offsetof(xtask, handle) <= 56, "an xtask's common part fits 56 bytes");
_Static_assert(XTASK_PLAIN_SIZE <= PTS__NODE_SMALL, "a plain post is a small block");
_Static_assert(offsetof(xtask, handle) <= sizeof(pts_agent_task_req) &&
                   _Alignof(xtask) <= _Alignof(pts_agent_task_req),
               "a plain post's common part fits a pts_agent_task_req");

static void xtask_free(xtask *x) {
  if (x->extras) {
    if (x->rc) pts__rc_drop(x->rc);
    if (x->reply_to) pts_agent_unref(x->reply_to);
  }
  pts__node_put(x); /* back to the poster's cache (sync/nodecache.h) */
}

/* done gets the outcome, or PTS_ECLOSED if it could not reach reply_to. */
static void reply_finish(xtask *x, bool reached) {
  pts_value v = x->result;
  if (reached) {
    x->done(x->done_data, x->status, v);
  } else {
    pts_value e = pts_error_value(PTS_ECLOSED, "the reply_to agent was destroyed");
    x->done(x->done_data, PTS_ECLOSED, e);
    pts_value_release(e);
  }
  pts_value_release(v);
  xtask_free(x);
}

static void reply_run(void *d, int status) {
  xtask *x = d;
  reply_finish(x, status == 0);
}

/* On reply_to's thread: queue the delivery as a message task. */
static void reply_cmd(pts__command *cmd, int status) {
  xtask *x = container_of(cmd, xtask, reply_cmd);
  pts_agent *r = x->reply_to;
  pts__agent_applied(r, PTS__RANK_OTHER);
  if (status == 0) {
    pts__task_init(&x->reply_task, pts_loop_default_global(r->loop), reply_run, x);
    if (pts__task_queue(&x->reply_task, PTS_SOURCE_MESSAGE) == 0) return;
  }
  reply_finish(x, false);
}
static const pts__command_type reply_cmd_type = {PTS__CMD_APPLY, reply_cmd};

/* On the target's thread: hand (status, v) to done; takes over v. */
static void deliver(xtask *x, int status, pts_value v) {
  if (v.kind == PTS_VALUE_PROMISE) {
    /* Only a settled adoption reaches here; a promise cannot cross threads. */
    pts_value_release(v);
    v = pts_error_value(PTS_ETYPE, "a promise cannot be a cross-thread result");
    status = PTS_EERROR;
  }
  if (!x->extras || x->done == NULL) {
    pts_value_release(v);
    xtask_free(x);
    return;
  }
  if (x->reply_to == NULL) {
    x->done(x->done_data, status, v);
    pts_value_release(v);
    xtask_free(x);
    return;
  }
  x->status = status;
  x->result = v;
  x->reply_cmd.type = &reply_cmd_type;
  /* r, not x->reply_to, after the push: x may be freed by then on r's
   * thread, and x's reference to r with it, so we hold our own for the
   * push. */
  pts_agent *r = x->reply_to;
  pts_agent_ref(r);
  if (pts__agent_send(r, &x->reply_cmd, PTS__RANK_OTHER)) {
    pts_agent_unref(r);
    return;
  }
  pts_agent_unref(r); /* x still holds one */
  /* reply_to is closed: done learns it here, on the target's thread. */
  reply_finish(x, false);
}

/* A callback that returned a promise: the result is its settlement. */
typedef struct adopt {
  xtask *x;
  bool delivered;
} adopt;

static pts_value adopt_fulfilled(void *d, pts_value arg) {
  adopt *ad = d;
  ad->delivered = true;
  deliver(ad->x, 0, pts_value_copy(arg));
  return pts_undefined();
}

static pts_value adopt_rejected(void *d, pts_value arg) {
  adopt *ad = d;
  ad->delivered = true;
  deliver(ad->x, PTS_EERROR, pts_value_copy(arg));
  return pts_undefined();
}

static void adopt_cleanup(void *d) {
  adopt *ad = d;
  if (!ad->delivered)
    deliver(ad->x, PTS_ECLOSED, pts_error_value(PTS_ECLOSED, "agent destroyed"));
  pts__free(ad);
}

/* The embedder's callback, as script of its own (loop_internal.h). */
/* Calls the task's callback with a status that is not 0 (it will not
 * run): its place in the inbox limit goes back (the callback may free a
 * caller's request: x is read before). */
static pts_value xtask_call(xtask *x, int status) {
  pts_agent *a = x->agent;
  pts__script_enter(a->loop);
  pts_value v = x->cb(x->data, status);
  pts__script_leave(a->loop);
  pts__inbox_give(a, 1);
  return v;
}

/* The callback's value v of a task that ran, once its microtasks have run:
 * the outcome for done, an abort they caused, or the adoption of a returned
 * promise. Out of line, so the plain post's path in xtask_run stays a small
 * function (its prologue saved nine registers for this code's sake). */
static __attribute__((noinline)) void xtask_settle(xtask *x, pts_value v) {
  if (x->extras && x->signal != NULL && pts_signal_aborted(x->signal) &&
      v.kind != PTS_VALUE_PROMISE) {
    pts_value_release(v);
    deliver(x, PTS_EABORT, pts_value_copy(pts_signal_reason(x->signal)));
    return;
  }
  if (v.kind == PTS_VALUE_PROMISE) {
    adopt *ad = pts__malloc(sizeof *ad);
    if (ad != NULL) {
      ad->x = x;
      ad->delivered = false;
      int r = pts_promise_then(v.u.promise, adopt_fulfilled, adopt_rejected, ad,
                               adopt_cleanup, NULL);
      pts_value_release(v);
      if (r != 0) {
        pts__free(ad);
        deliver(x, r, pts_error_value(r, NULL));
      }
      return;
    }
    pts_value_release(v);
    deliver(x, PTS_ENOMEM, pts_error_value(PTS_ENOMEM, NULL));
    return;
  }
  deliver(x, v.kind == PTS_VALUE_ERROR ? PTS_EERROR : 0, v);
}

/* A task that does not run: aborted (only with a controller, so extras),
 * refused by the agent's task limit, or released with the agent. */
static __attribute__((noinline)) void xtask_refuse(xtask *x, int status) {
  if (x->caller_owned) { /* no done to tell, and req is the caller's after cb */
    pts_value_release(xtask_call(x, status == PTS_EQUOTA ? PTS_EQUOTA : PTS_ECANCELED));
    return;
  }
  if (status == PTS_EABORT) {
    pts_value_release(xtask_call(x, PTS_EABORT));
    deliver(x, PTS_EABORT, pts_value_copy(pts_signal_reason(x->signal)));
  } else {
    pts_value_release(xtask_call(x, PTS_ECANCELED));
    deliver(x, PTS_ECLOSED, pts_error_value(PTS_ECLOSED, "agent destroyed"));
  }
}

/* The task's steps once it starts (direct-callback form of postTask).
 * Always inline: the in-place run's pass calls them for each task of a
 * stream, and out of line (where link-time optimisation left them once the
 * program grew) they cost about 20 instructions a task more
 * (docs/benchmarks.md, "But the probe is not every program"). */
static inline __attribute__((always_inline)) void xtask_steps(xtask *x, bool give) {
  pts_agent *a = x->agent;
  if (x->due_ns != 0) {
    uint64_t now = pts__stat_now_ns();
    pts__agent_record_delay(a, now > x->due_ns ? now - x->due_ns : 0);
  }
  bool caller_owned = x->caller_owned;
  /* The scheduler runs this as script already (xtask_call would nest). */
  pts_value v = x->cb(x->data, 0);
  /* The task ran: its place in the inbox limit goes back (a row's tasks'
   * places go back together when the row ends, row_end). */
  if (give) pts__inbox_give(a, 1);
  /* As postTask's result promise: the callback's microtasks run before the
   * outcome is settled (the scheduler called this task as script, so the
   * clean-up is done here), and an abort they cause wins. */
  pts__loop_perform_checkpoint(a->loop);
  if (!caller_owned && (x->extras || v.kind == PTS_VALUE_PROMISE)) {
    xtask_settle(x, v);
    return;
  }
  /* A plain post: nobody waits for the result (deliver() without done), so
   * a caller's request needs no settling, a returned promise included.
   * Only the kinds from BOX on own something to release. */
  if (v.kind >= PTS_VALUE_BOX) pts_value_release(v);
  if (!caller_owned) pts__node_put(x);
}

/* The task, as the scheduler calls it. */
static void xtask_run(void *d, int status) {
  if (status != 0) {
    xtask_refuse(d, status);
    return;
  }
  xtask_steps(d, true);
}

/* The task run in place (status 0): its steps alone, so that they inline
 * into the command runner's pass. */
static void xtask_run_in_place(void *d, int status) {
  (void)status;
  xtask_steps(d, false);
}

/* A post's rank (agents_impl.h): a plain post ranks as its priority. */
static int xtask_rank(const xtask *x) {
  if (x->extras) return PTS__RANK_OTHER;
  return x->priority == PTS_PRIORITY_UNSET ? PTS_PRIORITY_USER_VISIBLE : x->priority;
}

/* The post command, on the target's thread (protocol steps 1-2). */
static void xtask_cmd(pts__command *cmd, int status) {
  xtask *x = container_of(cmd, xtask, cmd);
  pts_agent *a = x->agent;
  pts__agent_applied(a, x->rank);
  if (status != 0 || a->sched == NULL) {
    xtask_run(x, PTS_ECANCELED);
    return;
  }
  int r;
  if (!x->extras && !x->caller_owned) {
    r = pts__scheduler_post_in(a->sched, &x->handle, xtask_run, x, x->priority);
  } else if (!x->extras) { /* the caller's request holds no handle */
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    o.priority = x->priority;
    r = pts_scheduler_post_task_cb(a->sched, xtask_run, x, &o);
  } else {
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    o.priority = x->priority;
    o.delay_ms = x->delay_ms;
    if (x->rc != NULL) {
      pts_controller *c = pts__rc_ensure(x->rc);
      if (c == NULL) {
        xtask_run(x, PTS_ECANCELED);
        return;
      }
      o.signal = pts_controller_signal(c);
    }
    x->signal = o.signal;
    if (x->delay_ms > 0 && x->due_ns != 0) x->due_ns += (uint64_t)x->delay_ms * 1000000u;
    r = pts_scheduler_post_task_cb(a->sched, xtask_run, x, &o);
    /* The task's state holds the signal now; the controller may go. */
    if (x->rc != NULL) {
      pts__rc_drop(x->rc);
      x->rc = NULL;
    }
  }
  if (r == 0) {
    pts__stat_add(&a->st_posts_enqueued, 1);
    return;
  }
  if (r == PTS_EABORT) {
    pts__stat_add(&a->st_posts_rejected, 1);
    xtask_run(x, PTS_EABORT); /* already aborted: never enqueued */
    return;
  }
  if (x->caller_owned) {
    xtask_refuse(x, r == PTS_EQUOTA ? PTS_EQUOTA : PTS_ECANCELED);
    return;
  }
  pts_value_release(xtask_call(x, PTS_ECANCELED));
  deliver(x, r, pts_error_value(r, NULL));
}
static const pts__command_type xtask_cmd_type = {PTS__CMD_AGENT_TASK, xtask_cmd};

/* Whether a command of that rank, popped with nothing else runnable
 * (pts__agent_run_command), may run in place: it has a rank below the top,
 * nothing ranked above it waits, and the default global's scheduler may run
 * a task now (active, not detached, nothing queued). */
static inline bool may_run_in_place(pts_agent *a, int rank) {
  return rank != PTS__RANK_OTHER && a->sched != NULL && pts__agent_nothing_above(a, rank) &&
         pts__scheduler_may_run_now(a->sched);
}

/* The plain posts of one rank run in place in a row by one runner call: they
 * count as applied (and enqueued) together when the row ends, which is
 * before anything else is applied or run and at the latest when the call
 * returns (a pass's limit: 64 tasks), so only a statistics snapshot taken
 * by one of those tasks sees them late. Their places in the inbox limit go
 * back then too, after all their tasks ran: one store a row, not one a
 * task (a producer at the limit is refused until the row ends). The count
 * of the row's own rank is read only by lower ranks' checks, and a row
 * ends before a command of another rank is looked at. */
typedef struct inplace_row {
  pts_agent *a;
  int rank;
  uint32_t n;
} inplace_row;

static void row_end(inplace_row *row) {
  if (row->n == 0) return;
  pts_agent *a = row->a;
  a->applied += row->n;
  a->applied_rank[row->rank] += row->n;
  pts__inbox_give(a, row->n);
  atomic_store_explicit(&a->st_applied, a->applied, memory_order_relaxed);
  pts__stat_add(&a->st_posts_enqueued, row->n);
  row->n = 0;
}

/* A plain post popped with nothing else runnable: it runs at once, as the
 * scheduler's pick, in the command runner's run and row; 0 if it may not. */
static int xtask_run_now(xtask *x, pts__sched_run *run, inplace_row *row) {
  pts_agent *a = x->agent;
  int rank = x->rank;
  if (rank != row->rank) {
    row_end(row);
    row->a = a;
    row->rank = rank;
  }
  if (!may_run_in_place(a, rank)) return 0;
  row->n++;
  return pts__scheduler_run_in(run, a->sched, xtask_run_in_place, x, rank);
}

/* The common part of a post (the poster's stamp only if the agent times
 * its posts: pts_agent_set_delay_stats). */
static void xtask_init(xtask *x, pts_agent *a, int priority, pts_task_callback cb,
                       void *data, bool extras, bool caller_owned) {
  x->cmd.type = &xtask_cmd_type;
  x->agent = a;
  x->cb = cb;
  x->data = data;
  x->due_ns =
      atomic_load_explicit(&a->delay_stats, memory_order_relaxed) ? pts__stat_now_ns() : 0;
  x->priority = priority;
  x->extras = extras;
  x->caller_owned = caller_owned;
  x->rank = (uint8_t)xtask_rank(x);
}

int pts_agent_post_task(pts_agent *a, const pts_agent_post_options *opts,
                        pts_task_callback callback, void *data,
                        pts_result_fn done, void *done_data, pts_agent *reply_to) {
  if (a == NULL || callback == NULL) return PTS_EINVAL;
  pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
  if (opts != NULL) o = *opts;
  if (o.priority != PTS_PRIORITY_UNSET &&
      (o.priority < 0 || o.priority >= PTS_PRIORITY_COUNT))
    return PTS_ETYPE;
  if (o.delay_ms < 0 || o.delay_ms > MAX_SAFE_INTEGER) return PTS_ETYPE;
  if (o.controller != NULL && o.controller->agent != a) return PTS_EFOREIGN;
  bool extras = done != NULL || o.controller != NULL || o.delay_ms != 0;
  xtask *x = pts__node_get(extras ? sizeof *x : XTASK_PLAIN_SIZE);
  if (x == NULL) return PTS_ENOMEM;
  xtask_init(x, a, o.priority, callback, data, extras, false);
  /* reply_to matters only with done (it is where done is called). */
  if (x->extras) { /* deliver() sets status and result before they are read */
    x->done = done;
    x->done_data = done_data;
    x->reply_to = reply_to;
    x->rc = o.controller;
    x->signal = NULL;
    x->delay_ms = o.delay_ms;
  }
  if (!pts__inbox_take(a)) {
    pts__node_put(x);
    return PTS_EQUOTA;
  }
  if (!pts__agent_admit(a, x->rank)) {
    pts__inbox_give(a, 1);
    pts__node_put(x);
    return PTS_ECLOSED;
  }
  if (x->extras && reply_to) pts_agent_ref(reply_to);
  if (x->extras && x->rc) pts__rc_hold(x->rc);
  pts__agent_push(a, &x->cmd);
  return 0;
}

int pts_agent_post_task_req(pts_agent *a, int priority, pts_agent_task_req *req,
                            pts_task_callback callback, void *data) {
  if (a == NULL || req == NULL || callback == NULL) return PTS_EINVAL;
  if (priority != PTS_PRIORITY_UNSET && (priority < 0 || priority >= PTS_PRIORITY_COUNT))
    return PTS_ETYPE;
  xtask *x = (xtask *)(void *)req;
  xtask_init(x, a, priority, callback, data, false, true);
  if (!pts__inbox_take(a)) return PTS_EQUOTA;
  if (pts__agent_send(a, &x->cmd, x->rank)) return 0;
  pts__inbox_give(a, 1);
  return PTS_ECLOSED;
}

/* ==== an ordinary task from any thread ==== */

typedef struct xqueue {
  pts__command cmd;
  pts__task task;
  pts_agent *agent;
  pts_task_fn fn;
  void *data;
  pts_task_source source;
} xqueue;

static void xqueue_run(void *d, int status) {
  xqueue *q = d;
  pts_agent *a = q->agent;
  pts_task_fn fn = q->fn;
  void *data = q->data;
  pts__node_put(q);
  fn(data, status);
  pts__inbox_give(a, 1); /* ran or released: its place in the inbox limit goes back */
}

/* Its rank (agents_impl.h): user input outranks every postTask; the other
 * sources are the FIFO class, which a user-visible postTask shares. */
static int xqueue_rank(const xqueue *q) {
  return q->source == PTS_SOURCE_USER_INPUT ? PTS__RANK_OTHER : PTS_PRIORITY_USER_VISIBLE;
}

static void xqueue_cmd(pts__command *cmd, int status) {
  xqueue *q = container_of(cmd, xqueue, cmd);
  pts__agent_applied(q->agent, xqueue_rank(q));
  if (status == 0) {
    pts__task_init(&q->task, pts_loop_default_global(q->agent->loop), xqueue_run, q);
    if (pts__task_queue(&q->task, q->source) == 0) return;
  }
  pts_loop *loop = q->agent->loop;
  pts__script_enter(loop);
  xqueue_run(q, PTS_ECANCELED);
  pts__script_leave(loop);
}
static const pts__command_type xqueue_cmd_type = {PTS__CMD_AGENT_QUEUE, xqueue_cmd};

int pts_agent_queue_task(pts_agent *a, pts_task_source source, pts_task_fn fn,
                         void *data) {
  if (a == NULL || fn == NULL || (unsigned)source >= PTS_SOURCE_COUNT)
    return PTS_EINVAL;
  xqueue *q = pts__node_get(sizeof *q);
  if (q == NULL) return PTS_ENOMEM;
  q->cmd.type = &xqueue_cmd_type;
  q->agent = a;
  q->fn = fn;
  q->data = data;
  q->source = source;
  int r = PTS_EQUOTA;
  if (pts__inbox_take(a)) {
    if (pts__agent_send(a, &q->cmd, xqueue_rank(q))) return 0;
    pts__inbox_give(a, 1);
    r = PTS_ECLOSED;
  }
  pts__node_put(q);
  return r;
}

/* An ordinary task popped with nothing else runnable: it runs at once, as
 * the loop's pick, like a message task of the loop's own inbox (docs/loop.md,
 * "Processing model"); 0 if it may not. */
static int xqueue_run_now(xqueue *q) {
  pts_agent *a = q->agent;
  int rank = xqueue_rank(q);
  if (!may_run_in_place(a, rank)) return 0;
  pts__agent_applied(a, rank);
  pts__stat_add(&a->st_queued_in_place, 1);
  pts_loop *loop = a->loop;
  (void)pts__loop_take_enqueue_order(loop); /* spec: the task was queued */
  pts__script_enter(loop);
  xqueue_run(q, 0);
  pts__script_leave(loop);
  return PTS__PICK_ORDINARY_TASK;
}

/* The loop's command runner (loop_internal.h): the loop has popped cmd with
 * nothing else runnable. A plain post, or an ordinary task of the timer,
 * message or generic source, then runs at once, exactly as if it were
 * applied and picked as the only runnable task (it takes its enqueue order
 * all the same), unless a command of a higher rank waits behind it: applied
 * together, that one would be picked first, so then cmd is applied as usual
 * and the drain that follows applies the rest. A higher command whose push
 * this thread has not seen yet is concurrent with this pop, so taking it as
 * posted after the task started is a valid order (one whose push happened
 * before cmd's push is ahead of cmd in the inbox). This skips the queue (the
 * scheduler's, or the loop's for an ordinary task), the selection and, for a
 * post, the handle; measured in docs/agents.md ("Hot paths"). */
pts__command *pts__agent_run_command(pts_loop *loop, pts__command *cmd, pts__inbox_pass *pass) {
  /* The commands behind cmd in the same call while they qualify: one
   * call per run, not per task (loop_internal.h). Plain posts of one
   * priority in a row share the scheduler's run (its state set once); the
   * run ends before anything else runs: an ordinary task, or the loop
   * applying a command. */
  pts__sched_run run = PTS__SCHED_RUN_INIT;
  inplace_row row = {NULL, -1, 0};
  do {
    int pick = 0;
    if (cmd->type->kind == PTS__CMD_AGENT_TASK) {
      pick = xtask_run_now(container_of(cmd, xtask, cmd), &run, &row);
    } else if (cmd->type->kind == PTS__CMD_AGENT_QUEUE) {
      row_end(&row);
      row.rank = -1;
      pts__scheduler_run_end(&run);
      pick = xqueue_run_now(container_of(cmd, xqueue, cmd));
    }
    if (pick == 0) {
      row_end(&row);
      pts__scheduler_run_end(&run);
      return cmd;
    }
    pts__inbox_pass_ran(pass, pick);
  } while ((cmd = pts__loop_inbox_next(loop, pass)) != NULL);
  row_end(&row);
  pts__scheduler_run_end(&run);
  return NULL;
}
