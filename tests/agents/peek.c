/* tests/agents/peek.c: a C window into the loop for the agents tests
 * (loop_internal.h is C only): the next enqueue order, taken. */
#include "loop/loop_internal.h"

uint64_t pts_test_take_order(pts_loop *loop);
uint64_t pts_test_take_order(pts_loop *loop) {
  return pts__loop_take_enqueue_order(loop);
}

#include "agents/agents_impl.h"

/* which = 0: cross-thread posts the scheduler accepted; 1: refused because
 * their signal was already aborted; 2: pts_agent_queue_task tasks run in
 * place. */
uint64_t pts_test_agent_posts(pts_agent *a, int which);
uint64_t pts_test_agent_posts(pts_agent *a, int which) {
  _Atomic uint64_t *c = which == 2   ? &a->st_queued_in_place
                        : which == 1 ? &a->st_posts_rejected
                                     : &a->st_posts_enqueued;
  return atomic_load_explicit(c, memory_order_relaxed);
}

/* The admission protocol, driven by hand: a command of the top rank admitted
 * (false if the agent is closed), then pushed. The probe records how its
 * command was applied or released. */
static struct {
  pts__command cmd;
  pts_agent *a;
  _Atomic int calls, status;
} probe;

static void probe_cmd(pts__command *cmd, int status) {
  (void)cmd;
  pts__agent_applied(probe.a, PTS__RANK_OTHER);
  atomic_store(&probe.status, status);
  atomic_fetch_add(&probe.calls, 1);
}
static const pts__command_type probe_cmd_type = {PTS__CMD_APPLY, probe_cmd};

bool pts_test_agent_admit(pts_agent *a);
bool pts_test_agent_admit(pts_agent *a) { return pts__agent_admit(a, PTS__RANK_OTHER); }

void pts_test_agent_push_probe(pts_agent *a);
void pts_test_agent_push_probe(pts_agent *a) {
  probe.cmd.type = &probe_cmd_type;
  probe.a = a;
  atomic_store(&probe.calls, 0);
  atomic_store(&probe.status, -1);
  pts__agent_push(a, &probe.cmd);
}

int pts_test_probe_calls(void);
int pts_test_probe_calls(void) { return atomic_load(&probe.calls); }
int pts_test_probe_status(void);
int pts_test_probe_status(void) { return atomic_load(&probe.status); }

/* A producer inside the wake hook's slow path, simulated: delta +1 enters,
 * -1 leaves. */
void pts_test_agent_waker(pts_agent *a, int delta);
void pts_test_agent_waker(pts_agent *a, int delta) {
  atomic_fetch_add(&a->wakers, (uint32_t)delta);
}

/* The agent's wake token. */
bool pts_test_agent_signaled(pts_agent *a);
bool pts_test_agent_signaled(pts_agent *a) { return atomic_load(&a->signaled); }

/* The pool's quantized slot length and whether it balances (as decided
 * from its options by pts_pool_new). */
uint64_t pts_test_pool_slot_ns(pts_pool *p);
uint64_t pts_test_pool_slot_ns(pts_pool *p) { return p->q.slot_ns; }
bool pts_test_pool_balances(pts_pool *p);
bool pts_test_pool_balances(pts_pool *p) { return p->balance; }
