/* agents/controllers.c: remote controllers: a handle, usable from any
 * thread, to a TaskController or AbortController living on an agent's loop
 * (agents.h); abort and setPriority travel as commands through the agent's
 * inbox, like every operation of remote.c.
 *
 * Remote controller lifetime. refs counts: one for all user references
 * (urefs), one for the owner side (the controller registered on the agent's
 * thread, or its creation still pending), one per command in flight. The
 * owner side ends once, on the agent's thread (owner_finalize): when the users
 * are gone (release command), when the agent is torn down, or when its
 * creation command is released. The struct is freed when refs reaches 0.
 */
#include <stdlib.h>
#include <string.h>

#include "agents/agents_impl.h"
#include "sync/alloc.h"
#include "sync/nodecache.h"

void pts__rc_drop(pts_remote_controller *rc) {
  /* acq_rel: the last holder sees the others' writes before freeing. */
  if (atomic_fetch_sub_explicit(&rc->refs, 1, memory_order_acq_rel) == 1) {
    pts_agent_unref(rc->agent);
    pts__free(rc);
  }
}

void pts__rc_hold(pts_remote_controller *rc) {
  atomic_fetch_add_explicit(&rc->refs, 1, memory_order_relaxed);
}

/* Agent's thread: the controller, created and registered on first use. NULL
 * if the owner side is over or creation failed. */
pts_controller *pts__rc_ensure(pts_remote_controller *rc) {
  if (rc->owner_done) return NULL;
  if (rc->registered) return rc->ctrl;
  pts_agent *a = rc->agent;
  int r = rc->priority >= 0 ? pts_task_controller_new(a->loop, rc->priority, &rc->ctrl)
                            : pts_abort_controller_new(a->loop, &rc->ctrl);
  if (r != 0) return NULL;
  rc->registered = true;
  pts__list_prepend(&a->rcs, &rc->link);
  return rc->ctrl;
}

static void owner_finalize(pts_remote_controller *rc) {
  if (rc->owner_done) return;
  rc->owner_done = true;
  if (rc->registered) {
    pts__list_remove(&rc->link);
    rc->registered = false;
    pts_controller_unref(rc->ctrl);
    rc->ctrl = NULL;
  }
  pts__rc_drop(rc); /* the owner side's reference */
}

void pts__agent_release_controllers(pts_agent *a) {
  while (!pts__list_empty(&a->rcs))
    owner_finalize(container_of(pts__list_first(&a->rcs), pts_remote_controller, link));
}

static int rc_alloc(pts_agent *a, int priority, uint32_t refs,
                    pts_remote_controller **out) {
  if (priority >= PTS_PRIORITY_COUNT) return PTS_ETYPE;
  pts_remote_controller *rc = pts__calloc(1, sizeof *rc);
  if (rc == NULL) return PTS_ENOMEM;
  atomic_init(&rc->urefs, 1);
  atomic_init(&rc->refs, refs);
  pts_agent_ref(a);
  rc->agent = a;
  rc->priority = priority < 0 ? -1 : priority;
  *out = rc;
  return 0;
}

static void rc_free_unused(pts_remote_controller *rc) {
  pts_agent_unref(rc->agent);
  pts__free(rc);
}

int pts_remote_controller_new(pts_agent *a, int priority,
                              pts_remote_controller **out) {
  if (a == NULL || out == NULL) return PTS_EINVAL;
  if (!pts__on_agent_thread(a)) return PTS_EFOREIGN;
  if (a->dead) return PTS_ECLOSED;
  pts_remote_controller *rc;
  int r = rc_alloc(a, priority, 2, &rc);
  if (r != 0) return r;
  if (pts__rc_ensure(rc) == NULL) {
    rc_free_unused(rc);
    return PTS_ENOMEM;
  }
  *out = rc;
  return 0;
}

static void create_cmd(pts__command *cmd, int status) {
  pts_remote_controller *rc = container_of(cmd, pts_remote_controller, create_cmd);
  pts__agent_applied(rc->agent, PTS__RANK_OTHER);
  /* A failed creation ends the owner side: later commands get PTS_ECLOSED. */
  if (status != 0 || pts__rc_ensure(rc) == NULL) owner_finalize(rc);
  pts__rc_drop(rc); /* the command's reference */
}
static const pts__command_type create_cmd_type = {PTS__CMD_APPLY, create_cmd};

int pts_remote_controller_new_async(pts_agent *a, int priority,
                                    pts_remote_controller **out) {
  if (a == NULL || out == NULL) return PTS_EINVAL;
  pts_remote_controller *rc;
  int r = rc_alloc(a, priority, 3, &rc); /* users, owner side, create_cmd */
  if (r != 0) return r;
  rc->create_cmd.type = &create_cmd_type;
  if (!pts__agent_send(a, &rc->create_cmd, PTS__RANK_OTHER)) {
    rc_free_unused(rc);
    return PTS_ECLOSED;
  }
  *out = rc;
  return 0;
}

void pts_remote_controller_ref(pts_remote_controller *rc) {
  if (rc) atomic_fetch_add_explicit(&rc->urefs, 1, memory_order_relaxed);
}

static void release_cmd(pts__command *cmd, int status) {
  (void)status; /* applied or released, the owner side ends the same way */
  pts_remote_controller *rc = container_of(cmd, pts_remote_controller, release_cmd);
  pts__agent_applied(rc->agent, PTS__RANK_OTHER);
  owner_finalize(rc);
  pts__rc_drop(rc); /* the users' reference */
}
static const pts__command_type release_cmd_type = {PTS__CMD_APPLY, release_cmd};

void pts_remote_controller_unref(pts_remote_controller *rc) {
  if (rc == NULL) return;
  if (atomic_fetch_sub_explicit(&rc->urefs, 1, memory_order_acq_rel) != 1) return;
  pts_agent *a = rc->agent;
  rc->release_cmd.type = &release_cmd_type;
  /* Our own reference to a for the push: the command may drop rc's, the
   * last one, before the push returns. */
  pts_agent_ref(a);
  bool sent = pts__agent_send(a, &rc->release_cmd, PTS__RANK_OTHER);
  /* Closed: its teardown (or the release of the pending creation command)
   * ends the owner side. */
  if (!sent) pts__rc_drop(rc);
  pts_agent_unref(a);
}

pts_controller *pts_remote_controller_get(pts_remote_controller *rc) {
  if (rc == NULL || !pts__on_agent_thread(rc->agent)) return NULL;
  return pts__rc_ensure(rc);
}

typedef struct rc_op {
  pts__command cmd;
  pts_remote_controller *rc; /* a command reference */
  bool is_abort;
  bool has_reason;
  int priority;
  pts_value reason;
  pts_task_fn done;
  void *done_data;
} rc_op;
_Static_assert(sizeof(rc_op) <= PTS__NODE_LARGE, "an operation fits a node cache block");

static void rc_op_cmd(pts__command *cmd, int status) {
  rc_op *op = container_of(cmd, rc_op, cmd);
  pts_remote_controller *rc = op->rc;
  pts__agent_applied(rc->agent, PTS__RANK_OTHER);
  pts__inbox_give(rc->agent, 1);
  int r = PTS_ECLOSED;
  if (status == 0) {
    pts_controller *c = pts__rc_ensure(rc);
    if (c != NULL)
      r = op->is_abort ? pts_controller_abort(c, op->has_reason ? &op->reason : NULL)
                       : pts_controller_set_priority(c, op->priority);
  }
  if (op->has_reason) pts_value_release(op->reason);
  pts_task_fn done = op->done;
  void *done_data = op->done_data;
  pts_loop *loop = rc->agent->loop;
  pts__node_put(op); /* back to the sender's cache (sync/nodecache.h) */
  pts__rc_drop(rc);
  if (done) {
    pts__script_enter(loop);
    done(done_data, r);
    pts__script_leave(loop);
  }
}
static const pts__command_type rc_op_cmd_type = {PTS__CMD_APPLY, rc_op_cmd};

static int rc_send_op(pts_remote_controller *rc, rc_op *op) {
  op->cmd.type = &rc_op_cmd_type;
  op->rc = rc;
  int r = PTS_EQUOTA;
  if (pts__inbox_take(rc->agent)) {
    pts__rc_hold(rc);
    /* The caller's reference to rc keeps its agent's. */
    if (pts__agent_send(rc->agent, &op->cmd, PTS__RANK_OTHER)) return 0;
    pts__rc_drop(rc);
    pts__inbox_give(rc->agent, 1);
    r = PTS_ECLOSED;
  }
  if (op->has_reason) pts_value_release(op->reason);
  pts__node_put(op);
  return r;
}

/* An operation's block, from the calling thread's node cache like a post's
 * (zeroed: the fields an operation does not set read as unset). */
static rc_op *rc_op_new(void) {
  rc_op *op = pts__node_get(sizeof *op);
  if (op != NULL) memset(op, 0, sizeof *op);
  return op;
}

int pts_remote_controller_abort(pts_remote_controller *rc, const pts_value *reason,
                                pts_task_fn done, void *done_data) {
  if (rc == NULL) return PTS_EINVAL;
  /* A promise belongs to one loop: it cannot travel to another thread. */
  if (reason != NULL && reason->kind == PTS_VALUE_PROMISE) return PTS_EINVAL;
  rc_op *op = rc_op_new();
  if (op == NULL) return PTS_ENOMEM;
  op->is_abort = true;
  if (reason != NULL) {
    op->has_reason = true;
    op->reason = pts_value_copy(*reason);
  }
  op->done = done;
  op->done_data = done_data;
  return rc_send_op(rc, op);
}

int pts_remote_controller_set_priority(pts_remote_controller *rc, int priority,
                                       pts_task_fn done, void *done_data) {
  if (rc == NULL) return PTS_EINVAL;
  if (priority < 0 || priority >= PTS_PRIORITY_COUNT) return PTS_ETYPE;
  rc_op *op = rc_op_new();
  if (op == NULL) return PTS_ENOMEM;
  op->priority = priority;
  op->done = done;
  op->done_data = done_data;
  return rc_send_op(rc, op);
}
