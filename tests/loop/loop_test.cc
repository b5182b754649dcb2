// The loop: run modes, stop, sleeping and waking, the inbox, owner checks,
// globals, embedded tasks, microtask checkpoints, the pool, bad input.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "util.h"

extern "C" uint64_t pts_test_loop_wakes(pts_loop *loop);
extern "C" uint32_t pts_test_loop_ready_count(pts_loop *loop);
extern "C" uint32_t pts_test_loop_ready_len(pts_loop *loop);

using namespace std::chrono_literals;

static void noop(void *, int) {}

TEST(Loop, BadInput) {
  EXPECT_EQ(pts_loop_new(nullptr, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_loop_free(nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_loop_run(nullptr, PTS_RUN_UNTIL_IDLE), PTS_EINVAL);
  EXPECT_EQ(pts_loop_stop(nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_loop_advance(nullptr, 1), PTS_EINVAL);
  EXPECT_EQ(pts_loop_default_global(nullptr), nullptr);
  EXPECT_EQ(pts_global_loop(nullptr), nullptr);
  EXPECT_FALSE(pts_global_is_active(nullptr));
  EXPECT_FALSE(pts_global_is_detached(nullptr));
  EXPECT_EQ(pts_global_new(nullptr, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_global_detach(nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_global_set_active(nullptr, true), PTS_EINVAL);
  EXPECT_EQ(pts_queue_task(nullptr, PTS_SOURCE_GENERIC, noop, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_queue_task_from_any_thread(nullptr, PTS_SOURCE_GENERIC, noop, nullptr),
            PTS_EINVAL);
  EXPECT_EQ(pts_loop_call_from_any_thread(nullptr, noop, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_queue_microtask(nullptr, noop, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_timer_start(nullptr, 1, noop, nullptr, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_timer_cancel(nullptr, 1), PTS_EINVAL);
  EXPECT_EQ(pts_loop_capture_state(nullptr), nullptr);
  pts_sched_state_unref(nullptr);

  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  EXPECT_EQ(pts_loop_run(loop, (pts_run_mode)7), PTS_EINVAL);
  EXPECT_EQ(pts_loop_run(loop, (pts_run_mode)-1), PTS_EINVAL);
  EXPECT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, nullptr, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_queue_task(g, (pts_task_source)PTS_SOURCE_COUNT, noop, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_queue_task(g, (pts_task_source)-3, noop, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_queue_task_from_any_thread(g, PTS_SOURCE_COUNT, noop, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_queue_task_from_any_thread(g, PTS_SOURCE_GENERIC, nullptr, nullptr),
            PTS_EINVAL);
  EXPECT_EQ(pts_loop_call_from_any_thread(loop, nullptr, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_queue_microtask(loop, nullptr, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_global_new(loop, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_loop_advance(loop, 5), PTS_EINVAL);  // real clock
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);  // nothing ran
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, RunUntilIdleRunsEverythingAndReturns) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec a{&log, "a"}, b{&log, "b"}, c{&log, "c"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &a), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_MESSAGE, rec_fn, &b), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_TIMER, rec_fn, &c), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "a b c");
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);
  EXPECT_EQ(a.calls + b.calls + c.calls, 3);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

struct Chain {
  pts_global *g;
  int left;
  int ran = 0;
};
static void chain_fn(void *d, int status) {
  Chain *c = static_cast<Chain *>(d);
  if (status) return;
  c->ran++;
  if (--c->left > 0) {
    ASSERT_EQ(pts_queue_task(c->g, PTS_SOURCE_GENERIC, chain_fn, c), 0);
  }
}

TEST(Loop, RunUntilIdleAlsoRunsTasksQueuedMeanwhile) {
  pts_loop *loop = new_loop();
  Chain c{pts_loop_default_global(loop), 50};
  ASSERT_EQ(pts_queue_task(c.g, PTS_SOURCE_GENERIC, chain_fn, &c), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(c.ran, 50);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, RunOnceRunsOneTask) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec a{&log, "a"}, b{&log, "b"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &a), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &b), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_ONCE), 1);
  EXPECT_EQ(log.str(), "a");
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_ONCE), 1);
  EXPECT_EQ(log.str(), "a b");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, RunOnceSleepsUntilACrossThreadPost) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec a{&log, "x"};
  std::thread t([&] {
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(pts_queue_task_from_any_thread(g, PTS_SOURCE_MESSAGE, rec_fn, &a), 0);
  });
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_ONCE), 1);
  t.join();
  EXPECT_EQ(log.str(), "x");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, StopBeforeRunMakesTheNextRunReturnAtOnce) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec a{&log, "a"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &a), 0);
  ASSERT_EQ(pts_loop_stop(loop), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_FOREVER), 0);
  EXPECT_EQ(a.calls, 0);
  // The stop was consumed: the next run works.
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

static void stop_fn(void *d, int status) {
  if (status == 0) pts_loop_stop(static_cast<pts_loop *>(d));
}

TEST(Loop, StopFromATaskReturnsAfterThatTask) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec a{&log, "a"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, stop_fn, loop), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &a), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_FOREVER), 1);
  EXPECT_EQ(a.calls, 0);
  EXPECT_EQ(pts_loop_free(loop), 0);  // a gets PTS_ECANCELED
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(a.last_status, PTS_ECANCELED);
}

TEST(Loop, StopFromAnotherThreadWhileForeverSleeps) {
  pts_loop *loop = new_loop();
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(pts_loop_stop(loop), 0);
  });
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_FOREVER), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 40ms);
  t.join();
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, ParkedLoopWakesOnCrossThreadPost) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);  // the loop is parked by now
    EXPECT_EQ(pts_queue_task_from_any_thread(g, PTS_SOURCE_GENERIC, stop_fn, loop), 0);
  });
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_FOREVER), 1);
  t.join();
  EXPECT_GE(pts_test_loop_wakes(loop), 1u);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, BusyLoopIsNotWokenPerPost) {
  // Posts while the owner is running (not parked) issue no futex wake.
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  for (int i = 0; i < 100; i++)
    ASSERT_EQ(pts_queue_task_from_any_thread(g, PTS_SOURCE_GENERIC, noop, nullptr), 0);
  EXPECT_EQ(pts_test_loop_wakes(loop), 0u);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

struct Reentry {
  pts_loop *loop;
  int run_rc = 1, free_rc = 1, adv_rc = 1;
};
static void reenter_fn(void *d, int status) {
  if (status) return;
  Reentry *r = static_cast<Reentry *>(d);
  r->run_rc = pts_loop_run(r->loop, PTS_RUN_UNTIL_IDLE);
  r->free_rc = pts_loop_free(r->loop);
  r->adv_rc = pts_loop_advance(r->loop, 1);
}

TEST(Loop, ReentrantRunFreeAndAdvanceAreBusy) {
  pts_loop *loop = new_loop(true);
  Reentry r{loop};
  ASSERT_EQ(pts_queue_task(pts_loop_default_global(loop), PTS_SOURCE_GENERIC, reenter_fn, &r), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(r.run_rc, PTS_EBUSY);
  EXPECT_EQ(r.free_rc, PTS_EBUSY);
  EXPECT_EQ(r.adv_rc, PTS_EBUSY);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, RunOnAnotherThreadMakesItTheOwnerAndBlocksOtherRuns) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  std::atomic<bool> owner_in_task{false};
  std::atomic<int> started{0};
  struct Ctx {
    pts_loop *loop;
    std::atomic<bool> *owner;
    std::atomic<int> *started;
  } ctx{loop, &owner_in_task, &started};
  auto fn = [](void *d, int status) {
    if (status) return;
    Ctx *c = static_cast<Ctx *>(d);
    c->owner->store(pts__loop_is_owner(c->loop));
    c->started->store(1);
  };
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, fn, &ctx), 0);
  std::thread t([&] { EXPECT_EQ(pts_loop_run(loop, PTS_RUN_FOREVER), 1); });
  while (started.load() == 0) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(owner_in_task.load());
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), PTS_EBUSY);
  pts_loop_stop(loop);
  t.join();
  EXPECT_TRUE(pts__loop_is_owner(loop));  // back to the creator
  EXPECT_EQ(pts_loop_free(loop), 0);
}

#ifndef NDEBUG
TEST(Loop, ForeignThreadCallsReturnEforeignAndReport) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  pts_promise *p;
  ASSERT_EQ(pts_promise_new(loop, &p), 0);
  testing::internal::CaptureStderr();
  std::thread t([&] {
    EXPECT_FALSE(pts__loop_is_owner(loop));
    EXPECT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, noop, nullptr), PTS_EFOREIGN);
    EXPECT_EQ(pts_queue_microtask(loop, noop, nullptr), PTS_EFOREIGN);
    EXPECT_EQ(pts_timer_start(g, 5, noop, nullptr, nullptr), PTS_EFOREIGN);
    EXPECT_EQ(pts_timer_cancel(g, 1), PTS_EFOREIGN);
    pts_global *g2;
    EXPECT_EQ(pts_global_new(loop, &g2), PTS_EFOREIGN);
    EXPECT_EQ(pts_global_detach(g), PTS_EFOREIGN);
    EXPECT_EQ(pts_global_set_active(g, false), PTS_EFOREIGN);
    EXPECT_EQ(pts_loop_free(loop), PTS_EFOREIGN);
    EXPECT_EQ(pts_promise_resolve(p, pts_int(1)), PTS_EFOREIGN);
    EXPECT_EQ(pts_promise_then(p, nullptr, nullptr, nullptr, nullptr, nullptr),
              PTS_EFOREIGN);
    EXPECT_EQ(pts_request_idle_callback(g, nullptr, nullptr, 0, nullptr), PTS_EINVAL);
    EXPECT_EQ(pts_loop_capture_state(loop), nullptr);
    // The thread-safe entry points still work.
    EXPECT_EQ(pts_loop_call_from_any_thread(loop, noop, nullptr), 0);
  });
  t.join();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ptsched: pts_queue_task called from a foreign thread"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("pts_loop_free called from a foreign thread"), std::string::npos);
  EXPECT_EQ(pts_promise_get_state(p), PTS_PROMISE_PENDING);
  pts_promise_unref(p);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);
  EXPECT_EQ(pts_loop_free(loop), 0);
}
#endif

TEST(Loop, BindThreadMovesOwnership) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec a{&log, "a"};
  std::thread t([&] {
    pts__loop_bind_thread(loop);
    EXPECT_TRUE(pts__loop_is_owner(loop));
    EXPECT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &a), 0);
    EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  });
  t.join();
  EXPECT_FALSE(pts__loop_is_owner(loop));
  pts__loop_bind_thread(loop);
  EXPECT_TRUE(pts__loop_is_owner(loop));
  EXPECT_EQ(log.str(), "a");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

// 4 producers x N posts: each runs exactly once and per-producer FIFO.
struct Stress {
  pts_loop *loop;
  int producers;
  long per;
  std::vector<long> next;
  long total = 0;
};
struct Item {
  Stress *s;
  int producer;
  long seq;
};
static void stress_fn(void *d, int status) {
  Item *it = static_cast<Item *>(d);
  Stress *s = it->s;
  EXPECT_EQ(status, 0);
  EXPECT_EQ(it->seq, s->next[it->producer]) << "producer " << it->producer;
  s->next[it->producer] = it->seq + 1;
  if (++s->total == s->producers * s->per) pts_loop_stop(s->loop);
}

// P producer threads post N tasks each with post(g, source, item, index),
// over the three non-input sources; the loop checks exactly once and
// per-producer order (stress_fn).
template <typename PostFn>
static void ManyProducers(int P, long N, PostFn post) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Stress s{loop, P, N, std::vector<long>(P, 0)};
  std::vector<std::vector<Item>> items(P);
  for (int p = 0; p < P; p++) {
    items[p].resize(N);
    for (long i = 0; i < N; i++) items[p][i] = Item{&s, p, i};
  }
  std::vector<std::thread> ts;
  for (int p = 0; p < P; p++) {
    ts.emplace_back([&, p] {
      for (long i = 0; i < N; i++)
        ASSERT_EQ(post(g, (pts_task_source)(1 + (i % 3)), &items[p][i], p, i), 0);
    });
  }
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_FOREVER), 1);
  for (auto &t : ts) t.join();
  EXPECT_EQ(s.total, P * N);
  for (int p = 0; p < P; p++) EXPECT_EQ(s.next[p], N);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);  // nothing twice
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, ManyProducersExactlyOnceAndPerProducerFifo) {
  ManyProducers(4, 100000, [](pts_global *g, pts_task_source src, Item *it, int, long) {
    return pts_queue_task_from_any_thread(g, src, stress_fn, it);
  });
}

struct CallCtx {
  pts_loop *loop;
  Log *log;
  Rec *micro;
};
static void call_fn(void *d, int status) {
  CallCtx *c = static_cast<CallCtx *>(d);
  c->log->add(status == 0 ? "cmd" : "cmd!");
  if (status == 0) {
    EXPECT_EQ(pts_queue_microtask(c->loop, rec_fn, c->micro), 0);
  }
}

TEST(Loop, CallFromAnyThreadRunsBetweenTasksNotAsATask) {
  pts_loop *loop = new_loop();
  Log log;
  Rec m{&log, "micro"};
  CallCtx c{loop, &log, &m};
  std::thread t([&] { EXPECT_EQ(pts_loop_call_from_any_thread(loop, call_fn, &c), 0); });
  t.join();
  // Not a task: the run reports none; its microtask is not left waiting.
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);
  EXPECT_EQ(log.str(), "cmd micro");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

struct EmbeddedCmd {
  pts__command cmd;
  int status = 1;
  int calls = 0;
};
static void embedded_cmd_fn(pts__command *c, int status) {
  EmbeddedCmd *e = reinterpret_cast<EmbeddedCmd *>(c);
  e->status = status;
  e->calls++;
}
static const pts__command_type embedded_cmd_fn_type = {PTS__CMD_APPLY, embedded_cmd_fn};

TEST(Loop, EmbeddedCommandsRunOrAreCanceled) {
  pts_loop *loop = new_loop();
  EmbeddedCmd a, b;
  a.cmd.type = &embedded_cmd_fn_type;
  b.cmd.type = &embedded_cmd_fn_type;
  std::thread t([&] { pts__loop_send_from_any_thread(loop, &a.cmd); });
  t.join();
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(a.status, 0);
  pts__loop_send_from_any_thread(loop, &b.cmd);
  EXPECT_EQ(pts_loop_free(loop), 0);
  EXPECT_EQ(b.calls, 1);
  EXPECT_EQ(b.status, PTS_ECANCELED);
}

struct MicroCtx {
  pts_loop *loop;
  Log *log;
  std::string label;
  int depth;
};
static void micro_fn(void *d, int status) {
  MicroCtx *m = static_cast<MicroCtx *>(d);
  if (status) return;
  m->log->add(m->label);
  if (m->depth-- > 0) {
    m->label += "+";
    EXPECT_EQ(pts_queue_microtask(m->loop, micro_fn, m), 0);
  }
}
struct TaskQueuesMicro {
  MicroCtx *m;
  Log *log;
  std::string label;
};
static void task_queues_micro(void *d, int status) {
  TaskQueuesMicro *t = static_cast<TaskQueuesMicro *>(d);
  if (status) return;
  t->log->add(t->label);
  EXPECT_EQ(pts_queue_microtask(t->m->loop, micro_fn, t->m), 0);
}

TEST(Loop, MicrotaskCheckpointAfterEachTaskDrainsNewMicrotasksToo) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  MicroCtx m1{loop, &log, "m1", 2}, m2{loop, &log, "m2", 0};
  TaskQueuesMicro a{&m1, &log, "A"}, b{&m2, &log, "B"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, task_queues_micro, &a), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, task_queues_micro, &b), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "A m1 m1+ m1++ B m2");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, GlobalsDetachReleasesTasksAndClosesThem) {
  pts_loop *loop = new_loop();
  pts_global *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  EXPECT_EQ(pts_global_loop(g), loop);
  EXPECT_TRUE(pts_global_is_active(g));
  Log log;
  Rec a{&log, "a"}, b{&log, "b"}, x{&log, "x"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &a), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_USER_INPUT, rec_fn, &b), 0);
  ASSERT_EQ(pts_global_detach(g), 0);
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(a.last_status, PTS_ECANCELED);
  EXPECT_EQ(b.last_status, PTS_ECANCELED);
  EXPECT_TRUE(pts_global_is_detached(g));
  EXPECT_FALSE(pts_global_is_active(g));
  EXPECT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &x), PTS_ECLOSED);
  EXPECT_EQ(pts_timer_start(g, 1, rec_fn, &x, nullptr), PTS_ECLOSED);
  EXPECT_EQ(pts_global_set_active(g, false), PTS_ECLOSED);
  EXPECT_EQ(pts_global_detach(g), 0);  // twice: no-op
  EXPECT_EQ(a.calls, 1);
  // A cross-thread post to a detached global is canceled at the drain.
  std::thread t([&] {
    EXPECT_EQ(pts_queue_task_from_any_thread(g, PTS_SOURCE_GENERIC, rec_fn, &x), 0);
  });
  t.join();
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);
  EXPECT_EQ(x.calls, 1);
  EXPECT_EQ(x.last_status, PTS_ECANCELED);
  EXPECT_EQ(pts_loop_free(loop), 0);
  EXPECT_EQ(log.str(), "b! a! x!");
}

TEST(Loop, InactiveGlobalsTasksAreNotRunnableAndKeepTheirOrder) {
  pts_loop *loop = new_loop();
  pts_global *d = pts_loop_default_global(loop), *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  Log log;
  Rec r[6] = {{&log, "d1"}, {&log, "g1"}, {&log, "d2"}, {&log, "g2"}, {&log, "d3"}, {&log, "g3"}};
  for (int i = 0; i < 6; i++)
    ASSERT_EQ(pts_queue_task(i % 2 ? g : d, PTS_SOURCE_GENERIC, rec_fn, &r[i]), 0);
  ASSERT_EQ(pts_global_set_active(g, false), 0);
  EXPECT_FALSE(pts_global_is_active(g));
  EXPECT_EQ(pts_global_set_active(g, false), 0);  // no change: fine
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "d1 d2 d3");
  Rec late{&log, "d4"};
  ASSERT_EQ(pts_queue_task(d, PTS_SOURCE_GENERIC, rec_fn, &late), 0);
  ASSERT_EQ(pts_global_set_active(g, true), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  // g's tasks kept their enqueue order, older than d4.
  EXPECT_EQ(log.str(), "d1 d2 d3 g1 g2 g3 d4");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

// The hot paths test the ready list by its count (loop_impl.h, nready):
// the count follows the list as globals get tasks, go inactive, come back,
// run dry and detach.
TEST(Loop, ReadyCountFollowsTheReadyList) {
  pts_loop *loop = new_loop();
  pts_global *d = pts_loop_default_global(loop), *g, *h;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  ASSERT_EQ(pts_global_new(loop, &h), 0);
  auto ready = [&](uint32_t n) {
    EXPECT_EQ(pts_test_loop_ready_len(loop), n);
    EXPECT_EQ(pts_test_loop_ready_count(loop), n);
  };
  ready(0);
  Log log;
  Rec r[4] = {{&log, "d"}, {&log, "g"}, {&log, "h"}, {&log, "h2"}};
  ASSERT_EQ(pts_queue_task(d, PTS_SOURCE_GENERIC, rec_fn, &r[0]), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &r[1]), 0);
  ASSERT_EQ(pts_queue_task(h, PTS_SOURCE_GENERIC, rec_fn, &r[2]), 0);
  ready(3);
  ASSERT_EQ(pts_queue_task(h, PTS_SOURCE_GENERIC, rec_fn, &r[3]), 0);
  ready(3);  // a global is on the list once
  ASSERT_EQ(pts_global_set_active(g, false), 0);
  ready(2);
  ASSERT_EQ(pts_global_detach(h), 0);  // its tasks canceled
  ready(1);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  ready(0);
  ASSERT_EQ(pts_global_set_active(g, true), 0);
  ready(1);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  ready(0);
  EXPECT_EQ(log.str(), "h! h2! d g");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, EnqueueOrderIsSharedWithOrdinaryTasks) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  EXPECT_EQ(pts__loop_take_enqueue_order(loop), 1u);  // starts at 1
  pts__task t1, t2;
  pts__task_init(&t1, g, noop, nullptr);
  pts__task_init(&t2, g, noop, nullptr);
  ASSERT_EQ(pts__task_queue(&t1, PTS_SOURCE_MESSAGE), 0);
  EXPECT_EQ(t1.order, 2u);
  EXPECT_EQ(pts__loop_take_enqueue_order(loop), 3u);
  ASSERT_EQ(pts__task_queue(&t2, PTS_SOURCE_TIMER), 0);
  EXPECT_EQ(t2.order, 4u);
  EXPECT_EQ(pts__task_queue(&t2, PTS_SOURCE_TIMER), PTS_EBUSY);  // already queued
  EXPECT_TRUE(pts__task_dequeue(&t1));
  EXPECT_FALSE(pts__task_dequeue(&t1));
  EXPECT_TRUE(pts__task_dequeue(&t2));
  EXPECT_EQ(pts__task_queue(&t1, (pts_task_source)9), PTS_EINVAL);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);  // dequeued: never run
  pts_global *g2;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  ASSERT_EQ(pts_global_detach(g2), 0);
  pts__task t3;
  pts__task_init(&t3, g2, noop, nullptr);
  EXPECT_EQ(pts__task_queue(&t3, PTS_SOURCE_GENERIC), PTS_ECLOSED);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, GlobalSlotAndProviderCtx) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  void **slot = pts__global_sched_slot(g);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(*slot, nullptr);
  EXPECT_EQ(pts__loop_provider_ctx(loop), nullptr);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, PoolReusesBlocksBySizeClass) {
  pts_loop *loop = new_loop();
  void *a = pts__loop_pool_alloc(loop, 40);
  ASSERT_NE(a, nullptr);
  memset(a, 0xab, 40);
  pts__loop_pool_free(loop, a, 40);
  void *b = pts__loop_pool_alloc(loop, 48);  // same 48-byte class
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_EQ(a, b);
#endif
  void *big = pts__loop_pool_alloc(loop, 1000);  // beyond the classes: malloc
  ASSERT_NE(big, nullptr);
  memset(big, 0, 1000);
  pts__loop_pool_free(loop, big, 1000);
  void *c = pts__loop_pool_alloc(loop, 128);
  void *z = pts__loop_pool_alloc(loop, 0);
  ASSERT_NE(z, nullptr);
  pts__loop_pool_free(loop, b, 48);
  pts__loop_pool_free(loop, c, 128);
  pts__loop_pool_free(loop, z, 0);
  pts__loop_pool_free(loop, nullptr, 16);
  EXPECT_EQ(pts_loop_free(loop), 0);  // releases the free lists (LSan checks)
}

// ---- caller-owned requests and the inbox hot path (docs/loop.md) ----

TEST(Loop, TaskRequestBadInputLeavesTheRequestAlone) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  pts_task_req req;
  memset(&req, 0xab, sizeof req);
  EXPECT_EQ(pts_queue_task_req_from_any_thread(nullptr, PTS_SOURCE_MESSAGE, &req, noop, nullptr),
            PTS_EINVAL);
  EXPECT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, nullptr, noop, nullptr),
            PTS_EINVAL);
  EXPECT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &req, nullptr, nullptr),
            PTS_EINVAL);
  EXPECT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_COUNT, &req, noop, nullptr),
            PTS_EINVAL);
  for (size_t i = 0; i < sizeof req; i++)
    ASSERT_EQ(reinterpret_cast<unsigned char *>(&req)[i], 0xab);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

// A request may be reused from its own callback: the loop is done with it.
struct ReqChain {
  pts_global *g;
  pts_task_req req;
  int left;
  Log *log;
};
static void req_chain_fn(void *d, int status) {
  ReqChain *c = static_cast<ReqChain *>(d);
  c->log->add(status == 0 ? "r" + std::to_string(c->left) : "cancel");
  if (status == 0 && --c->left > 0) {
    ASSERT_EQ(pts_queue_task_req_from_any_thread(c->g, PTS_SOURCE_MESSAGE, &c->req,
                                                 req_chain_fn, c), 0);
  }
}

TEST(Loop, TaskRequestRunsOnceAndIsReusableFromItsCallback) {
  pts_loop *loop = new_loop();
  Log log;
  ReqChain c{pts_loop_default_global(loop), {}, 3, &log};
  ASSERT_EQ(pts_queue_task_req_from_any_thread(c.g, PTS_SOURCE_MESSAGE, &c.req, req_chain_fn, &c),
            0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "r3 r2 r1");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, TaskRequestIsCanceledByDetachAndByFree) {
  pts_loop *loop = new_loop();
  pts_global *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  Log log;
  Rec a{&log, "a"}, b{&log, "b"};
  pts_task_req ra, rb;
  ASSERT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &ra, rec_fn, &a), 0);
  ASSERT_EQ(pts_global_detach(g), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);  // drained: g is detached
  EXPECT_EQ(log.str(), "a!");
  ASSERT_EQ(pts_queue_task_req_from_any_thread(pts_loop_default_global(loop), PTS_SOURCE_MESSAGE,
                                               &rb, rec_fn, &b), 0);
  EXPECT_EQ(pts_loop_free(loop), 0);  // still in the inbox
  EXPECT_EQ(log.str(), "a! b!");
  EXPECT_EQ(a.calls + b.calls, 2);
}

TEST(Loop, InboxTaskDoesNotOvertakeRunnableWork) {
  // The hot path runs a message task straight from the inbox only when it
  // would be the pick anyway. Here a generic task is queued first, and an
  // inactive global's message task must not run at all.
  pts_loop *loop = new_loop();
  pts_global *d = pts_loop_default_global(loop), *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  ASSERT_EQ(pts_global_set_active(g, false), 0);
  Log log;
  Rec first{&log, "generic"}, x{&log, "msg"}, y{&log, "inactive"};
  pts_task_req rx, ry;
  ASSERT_EQ(pts_queue_task(d, PTS_SOURCE_GENERIC, rec_fn, &first), 0);
  ASSERT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &ry, rec_fn, &y), 0);
  ASSERT_EQ(pts_queue_task_req_from_any_thread(d, PTS_SOURCE_MESSAGE, &rx, rec_fn, &x), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_ONCE), 1);
  EXPECT_EQ(log.str(), "generic");
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "generic msg");
  ASSERT_EQ(pts_global_set_active(g, true), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "generic msg inactive");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, InboxTaskTakesAnEnqueueOrderOnTheHotPath) {
  // spec: a queued task takes the next enqueue order; the hot path runs it
  // without queueing but must consume its order all the same.
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  uint64_t before = pts__loop_take_enqueue_order(loop);
  Log log;
  Rec x{&log, "x"};
  pts_task_req rx;
  ASSERT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &rx, rec_fn, &x), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_ONCE), 1);
  EXPECT_EQ(pts__loop_take_enqueue_order(loop), before + 2);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

// A message task that, when it runs, queues a generic task or stops the
// loop, then records itself.
struct Then {
  Rec rec;
  pts_global *g;
  Rec *queue;  // queued as a generic task when set
  bool stop;
};

void then_fn(void *data, int status) {
  auto *t = static_cast<Then *>(data);
  rec_fn(&t->rec, status);
  if (status != 0) return;
  if (t->queue) {
    ASSERT_EQ(pts_queue_task(t->g, PTS_SOURCE_GENERIC, rec_fn, t->queue), 0);
  }
  if (t->stop) pts_loop_stop(pts_global_loop(t->g));
}

TEST(Loop, InboxBurstEndsWhenATaskQueuesWork) {
  // Message tasks run straight from the inbox one after another only while
  // the inbox is all the work: once m1 has queued g, m2 is applied as the
  // drain applies it (queued after g) instead of running next.
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec gen{&log, "g"}, r2{&log, "m2"};
  Then m1{{&log, "m1"}, g, &gen, false};
  pts_task_req q1, q2;
  ASSERT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &q1, then_fn, &m1), 0);
  ASSERT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &q2, rec_fn, &r2), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "m1 g m2");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, ADueTimerEndsAnInboxPass) {
  // A pass applies up to 1024 commands; while other work waits (here a due
  // timer, then its queued task) it ends at the next look (every 64): the
  // timer's task runs before the rest of a flood is applied, not after it
  // (issue 32, the flood scenario).
  pts_loop *loop = new_loop(true); /* virtual clock: the timer is due now */
  pts_global *g = pts_loop_default_global(loop);
  struct Order {
    int applied = 0, timer_at = -1;
  } o;
  ASSERT_EQ(pts_timer_start(g, 0, [](void *d, int status) {
    auto *x = static_cast<Order *>(d);
    if (status == 0) x->timer_at = x->applied;
  }, &o, nullptr), 0);
  for (int i = 0; i < 300; i++)
    ASSERT_EQ(pts_loop_call_from_any_thread(loop, [](void *d, int status) {
      if (status == 0) static_cast<Order *>(d)->applied++;
    }, &o), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(300, o.applied);
  EXPECT_GE(o.timer_at, 0);
  EXPECT_LT(o.timer_at, 64) << "the timer waited for the whole flood";
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, InboxBurstEndsAtAStop) {
  // A stop requested by a task of the burst is seen at the next task
  // boundary: m2 stays in the inbox for the next run.
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec r2{&log, "m2"};
  Then m1{{&log, "m1"}, g, nullptr, true};
  pts_task_req q1, q2;
  ASSERT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &q1, then_fn, &m1), 0);
  ASSERT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &q2, rec_fn, &r2), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_FOREVER), 1);
  EXPECT_EQ(log.str(), "m1");
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "m1 m2");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Loop, ManyProducersWithRequestsExactlyOnceAndPerProducerFifo) {
  const int P = 3;
  const long N = 50000;
  std::vector<std::vector<pts_task_req>> reqs(P, std::vector<pts_task_req>(N));
  ManyProducers(P, N, [&](pts_global *g, pts_task_source src, Item *it, int p, long i) {
    return pts_queue_task_req_from_any_thread(g, src, &reqs[p][i], stress_fn, it);
  });
}
