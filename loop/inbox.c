/* loop/inbox.c: the producers' side of a loop's inbox, from any thread:
 * the push and the wake-up (loop.c's sleep/wake protocol, steps 3-4), and
 * the cross-thread forms of queueing a task (with a block from the node
 * cache, or in a caller's request) and of calling a function on the loop.
 * The owner's side (the drain, the in-place run) is in loop.c. */
#include "loop/loop_impl.h"
#include "sync/intrusive.h"
#include "sync/nodecache.h"

/* Wakes the owner: the pool's hook when attached, else the parker. */
void pts__loop_wake_owner(pts_loop *loop) {
  /* acquire: pairs with the release store in pts__loop_pool_attach, so the
   * ctx stored before it is seen. */
  pts__wake_fn fn = atomic_load_explicit(&loop->wake_fn, memory_order_acquire);
  if (fn != NULL)
    fn(atomic_load_explicit(&loop->wake_ctx, memory_order_relaxed));
  else
    pts__parker_unpark(&loop->parker);
}

void pts__loop_push_command_from_any_thread(pts_loop *loop, pts__command *cmd) {
  pts__mpsc_push(&loop->inbox, &cmd->node);
}

void pts__loop_send_from_any_thread(pts_loop *loop, pts__command *cmd) {
  pts__mpsc_push(&loop->inbox, &cmd->node);
  pts__loop_wake_owner(loop); /* after the push: protocol steps 3 and 4 */
}


/* Applies a message task that did not run in place: it is queued, or
 * released with PTS_ECANCELED when its global cannot take tasks. */
static void message_cmd(pts__command *cmd, int status) {
  xreq *x = container_of(cmd, xreq, cmd);
  pts_task_source source = (pts_task_source)x->t.order;
  if (status == 0 && pts__task_queue(&x->t, source) == 0) return;
  pts_loop *loop = x->t.global->loop;
  pts__script_enter(loop);
  x->t.fn(x->t.data, PTS_ECANCELED);
  pts__script_leave(loop);
}
static const pts__command_type message_cmd_type = {PTS__CMD_MESSAGE, message_cmd};

static void message_send(xreq *x, pts_global *global, pts_task_source source,
                         pts_task_fn fn, void *data) {
  x->cmd.type = &message_cmd_type;
  pts__task_init(&x->t, global, fn, data);
  x->t.order = (uint64_t)source;
  pts__loop_send_from_any_thread(global->loop, &x->cmd);
}

/* An xpost's task: the block goes back to the producer's cache
 * (sync/nodecache.h) before the caller's function runs. */
static void xpost_run(void *d, int status) {
  xpost *x = d;
  pts_task_fn fn = x->fn;
  void *data = x->data;
  pts__node_put(x);
  fn(data, status);
}

int pts_queue_task_from_any_thread(pts_global *global, pts_task_source source,
                                   pts_task_fn fn, void *data) {
  if (global == NULL || fn == NULL || (unsigned)source >= PTS_SOURCE_COUNT)
    return PTS_EINVAL;
  xpost *x = pts__node_get(sizeof *x);
  if (x == NULL) return PTS_ENOMEM;
  x->fn = fn;
  x->data = data;
  message_send(&x->m, global, source, xpost_run, x);
  return 0;
}

int pts_queue_task_req_from_any_thread(pts_global *global, pts_task_source source,
                                       pts_task_req *req, pts_task_fn fn,
                                       void *data) {
  if (global == NULL || req == NULL || fn == NULL ||
      (unsigned)source >= PTS_SOURCE_COUNT)
    return PTS_EINVAL;
  message_send((xreq *)(void *)req, global, source, fn, data);
  return 0;
}

typedef struct xcall {
  pts__command cmd;
  pts_loop *loop;
  pts_task_fn fn;
  void *data;
} xcall;

static void xcall_cmd(pts__command *cmd, int status) {
  xcall *x = container_of(cmd, xcall, cmd);
  pts_loop *loop = x->loop;
  pts_task_fn fn = x->fn;
  void *data = x->data;
  pts__node_put(x);
  pts__script_enter(loop);
  fn(data, status);
  pts__script_leave(loop);
}
static const pts__command_type xcall_cmd_type = {PTS__CMD_APPLY, xcall_cmd};

int pts_loop_call_from_any_thread(pts_loop *loop, pts_task_fn fn, void *data) {
  if (loop == NULL || fn == NULL) return PTS_EINVAL;
  xcall *x = pts__node_get(sizeof *x);
  if (x == NULL) return PTS_ENOMEM;
  x->cmd.type = &xcall_cmd_type;
  x->loop = loop;
  x->fn = fn;
  x->data = data;
  pts__loop_send_from_any_thread(loop, &x->cmd);
  return 0;
}
