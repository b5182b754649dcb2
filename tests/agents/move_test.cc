// tests/agents/move_test.cc: agents that move (issue 17). Explicit moves
// carry a loop's pending tasks, timers, controllers and same-origin
// neighbours to the new thread; moves racing cross-thread posts lose and
// reorder nothing (exactly once, per-producer FIFO, checked by plain
// variables that only the agent's thread of the moment touches, so
// ThreadSanitizer checks the hand-over too); moves racing aborts,
// setPriority and destroy keep every task and result exactly once; the
// balancer gives a hot loop to an idle thread, once, and leaves pinned
// agents and pools without balancing alone.
//
// Sizes: 20,000 racing posts under ThreadSanitizer, 100,000 otherwise; with
// PTS_STRESS_LONG=1, 1,000,000 racing posts (and 200,000 racing aborts).
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/agents/util.h"

namespace ptstest {
namespace {

class MoveTest : public AgentsTest {
 protected:
  void ExpectStayPut(bool balance, bool pin);
};

pts_agent_stats stats_of(pts_agent *a) {
  pts_agent_stats s;
  EXPECT_EQ(0, pts_agent_get_stats(a, &s));
  return s;
}

pts_thread_stats thread_stats(pts_pool *p, unsigned t) {
  pts_thread_stats s;
  EXPECT_EQ(0, pts_pool_get_thread_stats(p, t, &s));
  return s;
}

uint64_t moves_of(pts_agent *a) { return stats_of(a).moves; }

// Options of an agent of origin placed on thread.
pts_agent_options placed(const char *origin, int thread, bool pinned = false) {
  pts_agent_options ao = agent_opts(origin, thread);
  ao.pinned = pinned;
  return ao;
}

// Requests a move and waits until the agent has moved once more.
bool move_and_wait(pts_agent *a, int thread) {
  uint64_t before = moves_of(a);
  if (pts_agent_move(a, thread) != 0) return false;
  return wait_until([&] { return moves_of(a) > before; });
}

struct Where {
  std::atomic<int> thread{-1};
  std::atomic<int> status{1};
  pts_agent *a = nullptr;
};

pts_value where_cb(void *data, int status) {
  auto *w = static_cast<Where *>(data);
  w->thread.store(pts_agent_thread(w->a));
  w->status.store(status);
  return pts_int(7);
}

TEST_F(MoveTest, ExplicitMoveCarriesTimersTasksControllersAndItsOrigin) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_STRICT)));
  pts_agent_options ao = agent_opts("https://x.example", 0);
  ao.pinned = true;  // pinning stops the balancer, not an explicit move
  pts_agent *a, *b, *c;
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &a));
  ao.pinned = false;
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &b));  // same origin: moves with a
  pts_agent_options other = agent_opts("https://y.example", 0);
  ASSERT_NO_FATAL_FAILURE(AddAgent(&other, &c));  // another origin: stays
  // A delayed task (a timer on a's loop) and a remote controller made on
  // a's loop before the move.
  pts_remote_controller *rc;
  ASSERT_EQ(0, pts_remote_controller_new_async(a, PTS_PRIORITY_BACKGROUND, &rc));
  Where late, ctl;
  late.a = ctl.a = a;
  Result late_r, ctl_r;
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  po.delay_ms = 150;
  ASSERT_EQ(0, pts_agent_post_task(a, &po, where_cb, &late, result_fn, &late_r, nullptr));
  // A task behind a blocker, signalled by the controller.
  Blocker blk;
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, Blocker::fn, &blk));
  ASSERT_TRUE(wait_until([&] { return blk.started.load(); }));
  po = PTS_AGENT_POST_OPTIONS_INIT;
  po.controller = rc;
  ASSERT_EQ(0, pts_agent_post_task(a, &po, where_cb, &ctl, result_fn, &ctl_r, nullptr));
  // Requested while a task runs: applied after it, between two tasks.
  ASSERT_EQ(0, pts_agent_move(a, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(0u, moves_of(a)) << "moved in the middle of a task";
  blk.release.store(true);
  ASSERT_TRUE(wait_until([&] { return moves_of(a) == 1 && moves_of(b) == 1; }));
  EXPECT_EQ(1, pts_agent_thread(a));
  EXPECT_EQ(1, pts_agent_thread(b));
  EXPECT_EQ(0, pts_agent_thread(c));
  EXPECT_EQ(0u, moves_of(c));
  // The controller moved with its loop: setPriority still reaches it.
  Result sp;
  ASSERT_EQ(0, pts_remote_controller_set_priority(rc, PTS_PRIORITY_USER_BLOCKING,
                                                   [](void *d, int s) {
                                                     static_cast<Result *>(d)->status.store(s);
                                                     static_cast<Result *>(d)->calls.fetch_add(1);
                                                   },
                                                   &sp));
  ASSERT_TRUE(wait_until([&] { return ctl_r.calls.load() == 1 && sp.calls.load() == 1; }));
  EXPECT_EQ(0, sp.status.load());
  EXPECT_EQ(0, ctl_r.status.load());
  EXPECT_EQ(1, ctl.thread.load()) << "ran on the new thread";
  // The timer followed it and fires on thread 1.
  ASSERT_TRUE(wait_until([&] { return late_r.calls.load() == 1; }));
  EXPECT_EQ(0, late_r.status.load());
  EXPECT_EQ(7, late_r.ival.load());
  EXPECT_EQ(1, late.thread.load());
  pts_thread_stats t0 = thread_stats(pool(), 0), t1 = thread_stats(pool(), 1);
  EXPECT_EQ(2u, t0.moves_out);
  EXPECT_EQ(2u, t1.moves_in);
  EXPECT_EQ(0u, t0.moves_in);
  EXPECT_GT(t1.move_ns, 0u);
  EXPECT_EQ(1u, t0.agents);
  EXPECT_EQ(2u, t1.agents);
  // A new agent of the moved origin is placed where it went.
  pts_agent *d;
  pts_agent_options same = agent_opts("https://x.example");
  ASSERT_NO_FATAL_FAILURE(AddAgent(&same, &d));
  EXPECT_EQ(1, pts_agent_thread(d));
  // Already there: nothing to do. And back again.
  EXPECT_EQ(0, pts_agent_move(a, 1));
  ASSERT_TRUE(move_and_wait(c, 1));
  EXPECT_EQ(1, pts_agent_thread(c));
  pts_remote_controller_unref(rc);
}

// A promise made (with a reaction registered) on thread 0 is resolved after
// the move, on thread 1: the reaction runs there, as a microtask, once.
struct Pending {
  pts_agent *a = nullptr;
  pts_promise *p = nullptr;
  std::atomic<int> made{0}, reacted{0}, thread{-1};
  std::atomic<int64_t> value{0};
};

TEST_F(MoveTest, PromisesMoveWithTheirLoop) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_FAIR), {placed("promises", 0)}));
  Pending pd;
  pd.a = agent(0);
  ASSERT_EQ(0, pts_agent_queue_task(pd.a, PTS_SOURCE_GENERIC, [](void *d, int s) {
    auto *pd = static_cast<Pending *>(d);
    if (s != 0 || pts_promise_new(pts_agent_loop(pd->a), &pd->p) != 0) return;
    if (pts_promise_then(pd->p, [](void *d2, pts_value v) {
          auto *q = static_cast<Pending *>(d2);
          q->thread.store(pts_agent_thread(q->a));
          q->value.store(v.kind == PTS_VALUE_INT ? v.u.i : -1);
          q->reacted.fetch_add(1);
          return pts_undefined();
        }, nullptr, pd, nullptr, nullptr) == 0)
      pd->made.store(1);
  }, &pd));
  ASSERT_TRUE(wait_until([&] { return pd.made.load() == 1; }));
  ASSERT_TRUE(move_and_wait(pd.a, 1));
  ASSERT_EQ(0, pts_agent_queue_task(pd.a, PTS_SOURCE_GENERIC, [](void *d, int s) {
    auto *pd = static_cast<Pending *>(d);
    if (s == 0) {
      EXPECT_EQ(0, pts_promise_resolve(pd->p, pts_int(42)));
    }
    pts_promise_unref(pd->p);
  }, &pd));
  ASSERT_TRUE(wait_until([&] { return pd.reacted.load() == 1; }));
  EXPECT_EQ(1, pd.thread.load());
  EXPECT_EQ(42, pd.value.load());
  ShutdownPool();
  EXPECT_EQ(1, pd.reacted.load());
}

TEST_F(MoveTest, BadArgumentsAndClosedAgents) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_ROUND_ROBIN), 1));
  pts_agent *a = agent(0);
  EXPECT_EQ(PTS_EINVAL, pts_agent_move(nullptr, 0));
  EXPECT_EQ(PTS_EINVAL, pts_agent_move(a, -1));
  EXPECT_EQ(PTS_EINVAL, pts_agent_move(a, 2));
  EXPECT_EQ(0, pts_agent_destroy(a, true));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_move(a, 1));
  ShutdownPool();
  EXPECT_EQ(PTS_ECLOSED, pts_agent_move(a, 1));
}

// ---- moves racing posts ----

struct Item {
  struct Track *t;
  uint32_t producer, seq;
};

struct Track {
  // Touched only by the target's thread of the moment: a data race here is
  // a hand-over the migration protocol failed to order.
  std::vector<uint32_t> next;
  bool out_of_order = false;
  std::atomic<size_t> done{0}, ran{0};
  explicit Track(size_t producers) : next(producers, 0) {}
};

void item_run(Item *it, int status) {
  Track *t = it->t;
  if (status == 0) {
    if (t->next[it->producer] != it->seq) t->out_of_order = true;
    t->next[it->producer] = it->seq + 1;
    t->ran.fetch_add(1);
  }
}

// Moves the agent back and forth between the pool's threads until stop.
struct Mover {
  std::atomic<bool> stop{false};
  std::atomic<size_t> requests{0};
  std::thread th;
  Mover(pts_agent *a, unsigned threads) {
    th = std::thread([this, a, threads] {
      unsigned k = 0;
      while (!stop.load()) {
        int rc = pts_agent_move(a, static_cast<int>(++k % threads));
        if (rc == PTS_ECLOSED) return;
        EXPECT_EQ(0, rc);
        requests.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
  }
  void Join() {
    stop.store(true);
    th.join();
  }
};

size_t race_posts() {
  if (stress_long()) return 1000000;
  return under_tsan() ? 20000 : 100000;
}

// Two producers post (alternately an ordinary task and a postTask) while a
// third thread keeps moving the target between three threads; a neighbour
// agent keeps the threads company. The race runs in rounds until it has
// had its moves: how many a round of posts lasts for depends on how fast
// the loop drains them (a faster drain once left a round 5 moves).
TEST_F(MoveTest, MovesRacingPostsLoseAndReorderNothing) {
  const size_t n = race_posts(), producers = 2, per = n / producers;
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(3, PTS_POLICY_ROUND_ROBIN),
                                    {placed("target", 0), placed("neighbour", 1)}));
  pts_agent *a = agent(0);
  struct Ctx {
    Item *it;
    std::atomic<uint8_t> *call;
  };
  Mover mover(a, 3);
  size_t rounds = 0;
  for (; rounds < 20 && (rounds == 0 || moves_of(a) < 10); rounds++) {
    Track t(producers);
    std::vector<Item> items(n);
    std::vector<std::atomic<uint8_t>> calls(n);
    std::vector<Ctx> ctx(n);
    std::vector<std::thread> prod;
    for (size_t pi = 0; pi < producers; pi++) {
      prod.emplace_back([&, pi] {
        for (size_t s = 0; s < per; s++) {
          size_t i = pi * per + s;
          items[i] = Item{&t, static_cast<uint32_t>(pi), static_cast<uint32_t>(s)};
          ctx[i] = Ctx{&items[i], &calls[i]};
          int rc;
          if (s % 2 == 0) {
            rc = pts_agent_queue_task(a, PTS_SOURCE_MESSAGE, [](void *d, int status) {
              auto *c = static_cast<Ctx *>(d);
              c->call->fetch_add(1);
              item_run(c->it, status);
              c->it->t->done.fetch_add(1);
            }, &ctx[i]);
          } else {
            // postTask at user-visible priority: FIFO with messages.
            rc = pts_agent_post_task(a, nullptr, [](void *d, int status) {
              auto *c = static_cast<Ctx *>(d);
              c->call->fetch_add(1);
              item_run(c->it, status);
              return pts_undefined();
            }, &ctx[i], [](void *d, int, pts_value) {
              static_cast<Ctx *>(d)->it->t->done.fetch_add(1);
            }, &ctx[i], nullptr);
          }
          ASSERT_EQ(0, rc);
        }
      });
    }
    for (auto &th : prod) th.join();
    ASSERT_TRUE(wait_until([&] { return t.done.load() == producers * per; }, 120000));
    EXPECT_FALSE(t.out_of_order) << "per-producer FIFO broken across a move, round " << rounds;
    EXPECT_EQ(producers * per, t.ran.load());
    size_t bad = 0;
    for (size_t i = 0; i < producers * per; i++) bad += calls[i].load() != 1;
    EXPECT_EQ(0u, bad) << "tasks not run exactly once, round " << rounds;
  }
  mover.Join();
  uint64_t moves = moves_of(a);
  EXPECT_GE(moves, 10u) << "the race needs moves";
  std::fprintf(stderr, "racing posts: %zu in each of %zu rounds, moves: %llu (%zu requests)\n",
               producers * per, rounds, static_cast<unsigned long long>(moves),
               mover.requests.load());
}

// ---- moves racing aborts, setPriority and destroy ----

// One slot per task: outcome counts packed in one word (ran +1, aborted
// +0x10, anything else +0x100), so exactly once is outcome == 1 or 0x10.
struct Outcomes {
  std::vector<std::atomic<int>> outcome, done;
  std::atomic<size_t> total{0};
  explicit Outcomes(size_t n) : outcome(n), done(n) {}
};

struct Ticket {
  Outcomes *o;
  uint32_t id;
};

pts_value ticket_cb(void *data, int status) {
  auto *t = static_cast<Ticket *>(data);
  t->o->outcome[t->id].fetch_add(status == 0 ? 1 : status == PTS_EABORT ? 0x10 : 0x100);
  return pts_int(t->id);
}

void ticket_done(void *data, int, pts_value) {
  auto *t = static_cast<Ticket *>(data);
  t->o->done[t->id].fetch_add(1);
  t->o->total.fetch_add(1);
}

void ignore_status(void *, int) {}

TEST_F(MoveTest, MovesRacingAbortsAndSetPriority) {
  const size_t n = stress_long() ? 200000 : (under_tsan() ? 4000 : 20000);
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_STRICT), {placed("target", 0)}));
  pts_agent *a = agent(0);
  Outcomes l(n);
  std::vector<Ticket> tickets(n);
  // A fresh controller every 4 posts; the controller thread aborts or
  // re-prioritises each one a few microseconds later, while its tasks are
  // queued, running or done and the loop may be on either thread.
  std::mutex mu;
  std::deque<pts_remote_controller *> fresh;
  Mover mover(a, 2);
  std::atomic<bool> producing{true};
  std::thread controller([&] {
    uint64_t x = 88172645463325252ull;
    for (;;) {
      pts_remote_controller *rc = nullptr;
      {
        std::lock_guard<std::mutex> g(mu);
        if (!fresh.empty()) {
          rc = fresh.front();
          fresh.pop_front();
        }
      }
      if (rc == nullptr) {
        if (!producing.load()) return;
        std::this_thread::yield();
        continue;
      }
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::this_thread::sleep_for(std::chrono::microseconds(x % 8));
      if (x % 2 == 0)
        EXPECT_EQ(0, pts_remote_controller_abort(rc, nullptr, ignore_status, nullptr));
      else
        EXPECT_EQ(0, pts_remote_controller_set_priority(rc, static_cast<int>(x % 3),
                                                        ignore_status, nullptr));
      pts_remote_controller_unref(rc);
    }
  });
  pts_remote_controller *rc = nullptr;
  for (size_t i = 0; i < n; i++) {
    // At most 1,000 in flight: a move request queues behind the inbox's
    // backlog, so an unbounded flood would leave few moves to race with.
    while (i - l.total.load() > 1000) std::this_thread::yield();
    if (i % 4 == 0) {
      ASSERT_EQ(0, pts_remote_controller_new_async(a, static_cast<int>(i % 3), &rc));
      pts_remote_controller_ref(rc);
      std::lock_guard<std::mutex> g(mu);
      fresh.push_back(rc);
    }
    tickets[i] = Ticket{&l, static_cast<uint32_t>(i)};
    pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
    po.controller = rc;
    ASSERT_EQ(0, pts_agent_post_task(a, &po, ticket_cb, &tickets[i], ticket_done, &tickets[i],
                                     nullptr));
    if (i % 4 == 3) pts_remote_controller_unref(rc);
  }
  if (n % 4 != 0) pts_remote_controller_unref(rc);
  producing.store(false);
  controller.join();
  ASSERT_TRUE(wait_until([&] { return l.total.load() == n; }, 120000));
  mover.Join();
  size_t ran = 0, aborted = 0, bad = 0;
  for (size_t i = 0; i < n; i++) {
    int o = l.outcome[i].load();
    ran += o == 1;
    aborted += o == 0x10;
    bad += (o != 1 && o != 0x10) || l.done[i].load() != 1;
  }
  EXPECT_EQ(0u, bad) << "a task neither or both ran and aborted, or done not once";
  EXPECT_EQ(n, ran + aborted);
  EXPECT_GE(moves_of(a), 5u);
  std::fprintf(stderr, "racing controller posts: %zu (%zu ran, %zu aborted), moves: %llu\n", n,
               ran, aborted, static_cast<unsigned long long>(moves_of(a)));
}

// Destroy lands in the middle of moves and posts: every accepted post is
// called exactly once (run, or cancelled by the teardown), later posts fail.
TEST_F(MoveTest, DestroyRacingMovesAndPosts) {
  const int rounds = under_tsan() ? 20 : 100;
  const size_t n = 400;
  // Each round's agent is the test's own: made, destroyed and released in
  // the round.
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_FAIR)));
  for (int r = 0; r < rounds; r++) {
    pts_agent *a;
    ASSERT_EQ(0, pts_agent_new(pool(), nullptr, &a));
    std::vector<std::atomic<uint8_t>> calls(n);
    std::atomic<size_t> accepted{0};
    Mover mover(a, 2);
    std::thread producer([&] {
      for (size_t i = 0; i < n; i++) {
        int rc = pts_agent_queue_task(a, PTS_SOURCE_GENERIC, [](void *d, int) {
          static_cast<std::atomic<uint8_t> *>(d)->fetch_add(1);
        }, &calls[i]);
        if (rc == PTS_ECLOSED) return;
        ASSERT_EQ(0, rc);
        accepted.fetch_add(1);
      }
    });
    std::this_thread::sleep_for(std::chrono::microseconds(50 * (r % 7)));
    ASSERT_EQ(0, pts_agent_destroy(a, true));
    producer.join();
    mover.Join();
    EXPECT_EQ(PTS_ECLOSED, pts_agent_move(a, 0));
    size_t bad = 0, k = accepted.load();
    for (size_t i = 0; i < n; i++) bad += calls[i].load() != (i < k ? 1 : 0);
    EXPECT_EQ(0u, bad) << "round " << r;
    pts_agent_unref(a);
  }
}

// pts_agent_destroy(wait) from a pool thread: EBUSY if the agent is on (or
// moving to) that thread, whatever moves happened before.
TEST_F(MoveTest, DestroyWaitFollowsTheAgentsThread) {
  ASSERT_NO_FATAL_FAILURE(
      StartPool(pool_opts(2, PTS_POLICY_STRICT), {placed("a", 0), placed("b", 1)}));
  pts_agent *a = agent(0), *b = agent(1);
  ASSERT_TRUE(move_and_wait(b, 0));  // now b shares a's thread
  struct Ctx {
    pts_agent *b;
    std::atomic<int> rc{1};
  } c{b, {1}};
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, [](void *d, int s) {
    if (s == 0) static_cast<Ctx *>(d)->rc.store(pts_agent_destroy(static_cast<Ctx *>(d)->b, true));
  }, &c));
  ASSERT_TRUE(wait_until([&] { return c.rc.load() != 1; }));
  EXPECT_EQ(PTS_EBUSY, c.rc.load());
  EXPECT_EQ(0, pts_agent_destroy(b, true));
}

// ---- the balancer ----

// A chain of busy tasks on an agent, re-queued from its own thread.
struct Hot {
  pts_agent *a = nullptr;
  std::atomic<bool> run{true};
  std::atomic<int> live{0};
  std::atomic<uint64_t> tasks{0};
  static void fn(void *d, int status) {
    auto *h = static_cast<Hot *>(d);
    if (status == 0 && h->run.load()) {
      busy_ns(50000);
      h->tasks.fetch_add(1);
      if (pts_agent_queue_task(h->a, PTS_SOURCE_GENERIC, fn, h) == 0) return;
    }
    h->live.fetch_sub(1);
  }
  void Start(pts_agent *agent) {
    a = agent;
    live.fetch_add(1);
    ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, fn, this));
  }
  void Stop() {
    run.store(false);
    ASSERT_TRUE(wait_until([&] { return live.load() == 0; }));
  }
};

pts_pool_options balanced(unsigned threads, pts_policy policy, bool balance) {
  pts_pool_options o = pool_opts(threads, policy);
  o.balance = balance;
  return o;
}

TEST_F(MoveTest, IdleThreadTakesOneHotLoopOnce) {
  ASSERT_NO_FATAL_FAILURE(StartPool(balanced(2, PTS_POLICY_ROUND_ROBIN, true),
                                    {placed("hot-a", 0), placed("hot-b", 0)}));
  pts_agent *a = agent(0), *b = agent(1);
  Hot ha, hb;
  ha.Start(a);
  hb.Start(b);
  // pts_agent_thread changes when the move is decided, moves when it lands.
  ASSERT_TRUE(wait_until([&] {
    return pts_agent_thread(a) != pts_agent_thread(b) && moves_of(a) + moves_of(b) > 0;
  })) << "no hot loop was taken by the idle thread";
  // Steady: split, each alone on its thread; no further move (no ping-pong).
  uint64_t m = moves_of(a) + moves_of(b);
  EXPECT_EQ(1u, m);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(m, moves_of(a) + moves_of(b)) << "moved again in a steady load";
  ha.Stop();
  hb.Stop();
}

// Stealing: a hungry thread asks a busy one, which gives half of its ready
// loops at once. Thread 1 is busy with one long task while eight hot loops
// start on thread 0; when the task ends, thread 1 is hungry and takes three
// or four of them (half of those ready at that moment). The tick-based
// balancer alone moves none here: each loop is 1/8 of thread 0's window,
// under the 1/4 share a move needs. Then both threads are busy and nothing
// moves back (and no loop moves twice: the residence). The tick used to
// move one loop now and then (3 runs in 60 under AddressSanitizer beside
// another test process): a step during which the host preempted thread 0
// counted the preemption as that loop's CPU time, lifting it over 1/4 of one
// window; thread 1, busy with that one loop, was then never hungry again and
// stole nothing. A tick's pick now moves only if it qualifies again in the
// next window (migrate.c, BAL_SHARE), by which time the steal has been made.
TEST_F(MoveTest, IdleThreadStealsHalfOfABusyThreadsLoops) {
  std::vector<pts_agent_options> opts;
  const char *names[] = {"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"};
  for (const char *n : names) opts.push_back(placed(n, 0));
  opts.push_back(placed("blocker", 1));
  ASSERT_NO_FATAL_FAILURE(StartPool(balanced(2, PTS_POLICY_ROUND_ROBIN, true), opts));
  std::atomic<bool> release{false};
  ASSERT_EQ(0, pts_agent_queue_task(agent(8), PTS_SOURCE_GENERIC, [](void *d, int s) {
    if (s == 0) while (!static_cast<std::atomic<bool> *>(d)->load()) busy_ns(100000);
  }, &release));
  Hot hot[8];
  for (int i = 0; i < 8; i++) hot[i].Start(agent(i));
  bool started = wait_until([&] {
    for (auto &h : hot) if (h.tasks.load() < 4) return false;
    return true;
  });
  release.store(true);
  auto on1 = [&] {
    int n = 0;
    for (int i = 0; i < 8; i++) n += pts_agent_thread(agent(i)) == 1;
    return n;
  };
  bool took = started && wait_until([&] { return on1() >= 3; });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int n = on1();
  uint64_t moves[8];
  for (int i = 0; i < 8; i++) moves[i] = moves_of(agent(i));
  // Before the locals go, whatever happened; then idle threads steal again.
  for (auto &h : hot) h.Stop();
  ASSERT_TRUE(started) << "the hot loops did not start";
  EXPECT_TRUE(took) << n << " loops on thread 1";
  EXPECT_GE(n, 3);
  EXPECT_LE(n, 4);
  for (int i = 0; i < 8; i++) EXPECT_LE(moves[i], 1u) << i;
}

// On a pool of its own, shut down before it returns (a test may call it
// more than once).
void MoveTest::ExpectStayPut(bool balance, bool pin) {
  ASSERT_NO_FATAL_FAILURE(StartPool(balanced(2, PTS_POLICY_STRICT, balance)));
  pts_agent_options ao = placed("hot-a", 0, pin), bo = placed("hot-b", 0, pin);
  pts_agent *a, *b;
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &a));
  ASSERT_NO_FATAL_FAILURE(AddAgent(&bo, &b));
  Hot ha, hb;
  ha.Start(a);
  hb.Start(b);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(0u, moves_of(a) + moves_of(b));
  EXPECT_EQ(0, pts_agent_thread(a));
  EXPECT_EQ(0, pts_agent_thread(b));
  EXPECT_GT(ha.tasks.load() + hb.tasks.load(), 0u);
  ha.Stop();
  hb.Stop();
  ShutdownPool();
}

TEST_F(MoveTest, PinnedAgentsAndUnbalancedPoolsStayPut) {
  ASSERT_NO_FATAL_FAILURE(ExpectStayPut(true, true));
  ASSERT_NO_FATAL_FAILURE(ExpectStayPut(false, false));
}

}  // namespace
}  // namespace ptstest
