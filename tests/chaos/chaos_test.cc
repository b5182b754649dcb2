// tests/chaos/chaos_test.cc: concurrent chaos on a worker pool. Producer
// threads do random cross-thread operations on random agents while the pool
// runs: postTask with every option (priority, remote controller of this or of
// another agent, delay, reply_to) and plain (a priority only: no done
// callback, run in place when the agent has nothing else; docs/agents.md
// "Hot paths"), ordinary task posts, aborts with reasons,
// setPriority (valid and invalid), remote controller creation, and agent
// destruction (with or without waiting) followed by a replacement agent.
// Tasks that run post again from the agent's thread to another agent. Agent
// slot 0 lives alone on a pool of its own thread (the polls that leave its
// inbox to the in-place run), the others share a 2-thread pool.
//
// Exactly-once accounting for every operation, checked after the pool shuts
// down: a call that failed never calls back; one that succeeded calls its
// callback once and its done once (a plain post: no done), with consistent
// statuses (a task that ran is never reported aborted; its result is its own
// id unless reply_to closed).
//
// Not covered: agent migration (the API has none yet, issue 13 part 4).
//
// Sizes: PTS_CHAOS_OPS operations in total (default 200,000; 60,000 under
// ThreadSanitizer); tools/fuzz.sh --chaos N runs a long campaign.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "ptsched.h"

namespace {

constexpr int kAgents = 6;
constexpr int kControllersPerAgent = 3;
constexpr int kProducers = 3;

bool UnderTsan() {
#if defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

uint64_t EnvOps() {
  const char *v = getenv("PTS_CHAOS_OPS");
  if (v && *v) return strtoull(v, nullptr, 10);
  return UnderTsan() ? 60000 : 200000;
}

struct Xor {
  uint64_t x;
  uint64_t next() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  }
  unsigned pick(unsigned n) { return (unsigned)(next() % n); }
};

struct Chaos;

// One posted task: its callback's and its done's calls.
struct Ticket {
  Chaos *c = nullptr;
  uint32_t id = 0;
  std::atomic<int> posted{0};  // 1: the post call succeeded
  std::atomic<int> cb_calls{0}, cb_status{1};
  std::atomic<int> done_calls{0}, done_status{1};
  std::atomic<int64_t> done_value{-1};
  std::atomic<int> reply{0};  // posted with reply_to
  std::atomic<int> plain{0};  // posted with no done callback, controller or delay
  pts_agent *target = nullptr;  // the agent it was posted to
};

// A promise-form postTask made by a task on its own agent's loop, with one
// then() reaction: the callback is called once (run or released), and the
// reaction's cleanup exactly once (after its handler, or unrun when the
// agent is destroyed first).
struct Local {
  std::atomic<int> made{0};
  std::atomic<int> cb_calls{0};
  std::atomic<int> handler_calls{0};
  std::atomic<int> cleanup_calls{0};
};

// One ordinary task or one remote abort / setPriority: its callback's calls.
struct Call {
  std::atomic<int> posted{0};
  std::atomic<int> calls{0};
};

struct Chaos {
  std::vector<Ticket> tickets;
  std::atomic<uint32_t> next_ticket{0};
  std::vector<Call> calls;
  std::atomic<uint32_t> next_call{0};
  std::vector<Local> locals;
  std::atomic<uint32_t> next_local{0};
  std::atomic<pts_agent *> agents[kAgents];
  std::atomic<pts_remote_controller *> ctrls[kAgents][kControllersPerAgent];
  std::mutex graveyard_mu;  // handles replaced by destroy, unref'd at the end
  std::vector<pts_agent *> dead_agents;
  std::vector<pts_remote_controller *> dead_ctrls;
  pts_pool *pool = nullptr;  // agent slots 1..kAgents-1
  pts_pool *solo = nullptr;  // agent slot 0, alone on its thread
  pts_pool *pool_of(int slot) { return slot == 0 ? solo : pool; }
  std::atomic<uint64_t> ops{0}, destroys{0}, refused{0};
  // Posted and not yet done: producers wait above a bound, so operations
  // meet tasks queued or running rather than a backlog far ahead.
  std::atomic<int64_t> outstanding{0};

  explicit Chaos(size_t n)
      : tickets(2 * n + 16), calls(n + 16), locals(n / 2 + 16) {}

  Ticket *new_ticket() {
    uint32_t i = next_ticket.fetch_add(1);
    if (i >= tickets.size()) return nullptr;
    tickets[i].c = this;
    tickets[i].id = i;
    return &tickets[i];
  }
  Call *new_call() {
    uint32_t i = next_call.fetch_add(1);
    return i < calls.size() ? &calls[i] : nullptr;
  }

  // Posts ticket t to agent slot `to` with random options.
  void post(Xor &r, Ticket *t, int to, pts_agent *reply_to);
};

void DoneFn(void *data, int status, pts_value v) {
  auto *t = static_cast<Ticket *>(data);
  t->done_status.store(status);
  if (status == 0 && v.kind == PTS_VALUE_INT) t->done_value.store(v.u.i);
  t->done_calls.fetch_add(1);
  t->c->outstanding.fetch_sub(1);
}

pts_value LocalCb(void *data, int status) {
  static_cast<Local *>(data)->cb_calls.fetch_add(1);
  return status == 0 ? pts_int(1) : pts_undefined();
}
pts_value LocalHandler(void *data, pts_value) {
  static_cast<Local *>(data)->handler_calls.fetch_add(1);
  return pts_undefined();
}
void LocalCleanup(void *data) {
  static_cast<Local *>(data)->cleanup_calls.fetch_add(1);
}

// On the task's own loop: postTask (promise form) and then(handler).
void PostLocal(Chaos *c, pts_agent *self, Xor &r) {
  uint32_t i = c->next_local.fetch_add(1);
  if (i >= c->locals.size()) return;
  Local *l = &c->locals[i];
  pts_scheduler *s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(self)));
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.priority = (int)r.pick(3);
  pts_promise *p;
  if (pts_scheduler_post_task(s, LocalCb, l, &o, &p) != 0) return;
  if (pts_promise_then(p, LocalHandler, LocalHandler, l, LocalCleanup,
                       nullptr) == 0)
    l->made.store(1);
  else
    l->made.store(2);  // the callback alone is accounted
  pts_promise_unref(p);
}

pts_value TaskCb(void *data, int status) {
  auto *t = static_cast<Ticket *>(data);
  t->cb_status.store(status);
  t->cb_calls.fetch_add(1);
  // A plain post is over with its callback (no done follows).
  if (t->plain.load()) t->c->outstanding.fetch_sub(1);
  if (status != 0) return pts_undefined();
  // One task in four posts again, from this agent's thread, to another agent.
  Xor r{0x9E3779B97F4A7C15ull ^ (uint64_t)t->id * 0x100000001B3ull};
  if (r.pick(4) == 0) {
    Ticket *n = t->c->new_ticket();
    if (n) t->c->post(r, n, (int)r.pick(kAgents), nullptr);
  }
  // One in four posts a promise-form task on its own loop.
  if (r.pick(4) == 0) PostLocal(t->c, t->target, r);
  return pts_int(t->id);
}

void CallFn(void *data, int status) {
  (void)status;
  static_cast<Call *>(data)->calls.fetch_add(1);
}

void Chaos::post(Xor &r, Ticket *t, int to, pts_agent *reply_to) {
  pts_agent *a = agents[to].load();
  pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
  unsigned pr = r.pick(5);
  o.priority = pr < 3 ? (int)pr : PTS_PRIORITY_UNSET;
  // Plain: one post in three, and every post to slot 0 (see Producer).
  bool plain = reply_to == nullptr && (to == 0 || r.pick(3) == 0);
  if (plain) {
    t->plain.store(1);
    t->target = a;
    outstanding.fetch_add(1);
    if (pts_agent_post_task(a, &o, TaskCb, t, nullptr, nullptr, nullptr) == 0) {
      t->posted.store(1);
    } else {
      outstanding.fetch_sub(1);
      refused.fetch_add(1);
    }
    return;
  }
  if (r.pick(16) == 0) o.delay_ms = 1;
  if (r.pick(2)) {
    // Mostly this agent's controllers; sometimes another's (PTS_EFOREIGN).
    int owner = r.pick(8) ? to : (int)r.pick(kAgents);
    o.controller = ctrls[owner][r.pick(kControllersPerAgent)].load();
  }
  if (reply_to) t->reply.store(1);
  t->target = a;
  outstanding.fetch_add(1);
  int rc = pts_agent_post_task(a, &o, TaskCb, t, DoneFn, t, reply_to);
  if (rc == 0) {
    t->posted.store(1);
  } else {
    outstanding.fetch_sub(1);
    refused.fetch_add(1);
  }
}

void Producer(Chaos *c, int me, uint64_t n) {
  Xor r{0x2545F4914F6CDD1Dull * (uint64_t)(me + 1)};
  for (uint64_t i = 0; i < n; i++) {
    c->ops.fetch_add(1);
    while (c->outstanding.load() > 256) std::this_thread::yield();
    int to = (int)r.pick(kAgents);
    unsigned op = r.pick(1000);
    // Slot 0 gets plain posts and destroys only, so that its inbox is
    // often plain posts alone: the in-place run, racing the destroys.
    if (to == 0 && op >= 550 && op < 996) op = 0;
    if (op < 550) {
      Ticket *t = c->new_ticket();
      if (!t) continue;
      pts_agent *reply = to != 0 && r.pick(4) == 0
                             ? c->agents[1 + r.pick(kAgents - 1)].load()
                             : nullptr;
      c->post(r, t, to, reply);
    } else if (op < 650) {
      Call *k = c->new_call();
      if (!k) continue;
      pts_task_source src = (pts_task_source)r.pick(PTS_SOURCE_COUNT);
      if (pts_agent_queue_task(c->agents[to].load(), src, CallFn, k) == 0)
        k->posted.store(1);
    } else if (op < 800) {
      Call *k = c->new_call();
      if (!k) continue;
      int slot = (int)r.pick(kControllersPerAgent);
      pts_remote_controller *rc = c->ctrls[to][slot].load();
      pts_value reason = pts_int((int64_t)i);
      if (pts_remote_controller_abort(rc, r.pick(2) ? &reason : nullptr,
                                      CallFn, k) == 0)
        k->posted.store(1);
      // Half the time a fresh controller of the same kind takes the slot,
      // so later posts are not all refused as already aborted.
      pts_remote_controller *fresh;
      if (r.pick(2) == 0 &&
          pts_remote_controller_new_async(c->agents[to].load(),
                                          slot == 0 ? -1 : slot, &fresh) == 0) {
        pts_remote_controller *prev = c->ctrls[to][slot].exchange(fresh);
        std::lock_guard<std::mutex> g(c->graveyard_mu);
        c->dead_ctrls.push_back(prev);
      }
    } else if (op < 996) {
      Call *k = c->new_call();
      if (!k) continue;
      pts_remote_controller *rc =
          c->ctrls[to][r.pick(kControllersPerAgent)].load();
      int p = r.pick(10) == 0 ? 7 : (int)r.pick(3);
      int res = pts_remote_controller_set_priority(rc, p, CallFn, k);
      if (p == 7) {
        EXPECT_EQ(PTS_ETYPE, res);  // fails at the call, nothing called
      }
      if (res == 0) k->posted.store(1);
    } else {
      // Destroy the agent and put a new one (with new controllers) in its
      // slot. The old handles stay valid (calls on them: PTS_ECLOSED).
      pts_agent *old = c->agents[to].load();
      int rc = pts_agent_destroy(old, r.pick(2) == 0);
      EXPECT_TRUE(rc == 0 || rc == PTS_ECLOSED) << rc;
      c->destroys.fetch_add(1);
      pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
      pts_agent *fresh;
      ASSERT_EQ(0, pts_agent_new(c->pool_of(to), &ao, &fresh));
      pts_remote_controller *nc[kControllersPerAgent];
      for (int k = 0; k < kControllersPerAgent; k++)
        ASSERT_EQ(0, pts_remote_controller_new_async(fresh, k == 0 ? -1 : k,
                                                     &nc[k]));
      // Another producer may replace the same slot at once: whoever swaps
      // last wins; every handle swapped out goes to the graveyard.
      pts_agent *prev = c->agents[to].exchange(fresh);
      std::lock_guard<std::mutex> g(c->graveyard_mu);
      c->dead_agents.push_back(prev);
      for (int k = 0; k < kControllersPerAgent; k++)
        c->dead_ctrls.push_back(c->ctrls[to][k].exchange(nc[k]));
    }
  }
}

TEST(Chaos, ExactlyOnceUnderRandomCrossThreadOperations) {
  uint64_t total = EnvOps();
  Chaos c(total);
  pts_pool_options po = {};
  po.threads = 2;
  po.policy = PTS_POLICY_ROUND_ROBIN;
  po.seed = 1;
  po.slot_ns = 0;
  ASSERT_EQ(0, pts_pool_new(&po, &c.pool));
  po.threads = 1;
  ASSERT_EQ(0, pts_pool_new(&po, &c.solo));
  for (int a = 0; a < kAgents; a++) {
    pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
    pts_agent *ag;
    ASSERT_EQ(0, pts_agent_new(c.pool_of(a), &ao, &ag));
    c.agents[a].store(ag);
    for (int k = 0; k < kControllersPerAgent; k++) {
      pts_remote_controller *rc;
      // One AbortController (-1) and TaskControllers per agent.
      ASSERT_EQ(0, pts_remote_controller_new_async(ag, k == 0 ? -1 : k, &rc));
      c.ctrls[a][k].store(rc);
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ps;
  for (int i = 0; i < kProducers; i++)
    ps.emplace_back(Producer, &c, i, total / kProducers);
  for (auto &t : ps) t.join();
  ASSERT_EQ(0, pts_pool_shutdown(c.pool));
  ASSERT_EQ(0, pts_pool_shutdown(c.solo));
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();

  uint64_t posted = 0, ran = 0, aborted = 0, released = 0, plain = 0, plain_ran = 0;
  uint32_t nt = std::min<uint32_t>(c.next_ticket.load(),
                                   (uint32_t)c.tickets.size());
  for (uint32_t i = 0; i < nt; i++) {
    Ticket &t = c.tickets[i];
    if (!t.posted.load()) {
      ASSERT_EQ(0, t.cb_calls.load()) << "refused post called back, ticket " << i;
      ASSERT_EQ(0, t.done_calls.load()) << "refused post got done, ticket " << i;
      continue;
    }
    posted++;
    ASSERT_EQ(1, t.cb_calls.load()) << "ticket " << i;
    if (t.plain.load()) {
      // Run, or released by a destroy; never aborted (no signal).
      plain++;
      ASSERT_EQ(0, t.done_calls.load()) << "ticket " << i;
      int cs = t.cb_status.load();
      ASSERT_TRUE(cs == 0 || cs == PTS_ECANCELED) << "ticket " << i << " status " << cs;
      if (cs == 0) ran++, plain_ran++; else released++;
      continue;
    }
    ASSERT_EQ(1, t.done_calls.load()) << "ticket " << i;
    int cs = t.cb_status.load(), ds = t.done_status.load();
    if (cs == 0) {
      ran++;
      if (ds == 0) {
        ASSERT_EQ((int64_t)i, t.done_value.load()) << "ticket " << i;
      } else {
        // Ran, but the result could not be delivered: reply_to closed.
        ASSERT_EQ(PTS_ECLOSED, ds) << "ticket " << i;
        ASSERT_EQ(1, t.reply.load()) << "ticket " << i;
      }
    } else {
      ASSERT_NE(0, ds) << "aborted or released task reported fulfilled, ticket " << i;
      if (cs == PTS_EABORT) {
        aborted++;
        // The abort reason, unless reply_to closed before delivery.
        ASSERT_TRUE(ds == PTS_EABORT || (ds == PTS_ECLOSED && t.reply.load()))
            << "ticket " << i << " done " << ds;
      } else {
        released++;
        ASSERT_TRUE(cs == PTS_ECANCELED || cs == PTS_ECLOSED) << cs;
      }
    }
  }
  uint64_t calls = 0;
  uint32_t nc = std::min<uint32_t>(c.next_call.load(), (uint32_t)c.calls.size());
  for (uint32_t i = 0; i < nc; i++) {
    Call &k = c.calls[i];
    ASSERT_EQ(k.posted.load(), k.calls.load()) << "call " << i;
    calls += k.posted.load();
  }
  uint64_t locals = 0, handled = 0;
  uint32_t nl = std::min<uint32_t>(c.next_local.load(), (uint32_t)c.locals.size());
  for (uint32_t i = 0; i < nl; i++) {
    Local &l = c.locals[i];
    if (l.made.load() == 0) {
      ASSERT_EQ(0, l.cb_calls.load()) << "local " << i;
      continue;
    }
    locals++;
    ASSERT_EQ(1, l.cb_calls.load()) << "local " << i;
    if (l.made.load() == 1) {
      ASSERT_EQ(1, l.cleanup_calls.load()) << "local " << i;
      ASSERT_LE(l.handler_calls.load(), 1) << "local " << i;
      handled += l.handler_calls.load();
    }
  }
  printf("chaos: %llu local promise-form posts, %llu reactions ran (the rest "
         "released with their agent)\n",
         (unsigned long long)locals, (unsigned long long)handled);
  printf("chaos: %llu operations by %d producers in %.2f s; %llu tasks posted "
         "(%llu plain, of which %llu ran; ran %llu, aborted %llu, released by "
         "destroy %llu), %llu refused, "
         "%llu task/abort/setPriority callbacks, %llu agents destroyed\n",
         (unsigned long long)c.ops.load(), kProducers, secs,
         (unsigned long long)posted, (unsigned long long)plain,
         (unsigned long long)plain_ran, (unsigned long long)ran,
         (unsigned long long)aborted, (unsigned long long)released,
         (unsigned long long)c.refused.load(), (unsigned long long)calls,
         (unsigned long long)c.destroys.load());
  EXPECT_GT(ran, 0u);
  EXPECT_GT(aborted, 0u);
  EXPECT_GT(plain_ran, 0u);

  for (int a = 0; a < kAgents; a++) {
    pts_agent_unref(c.agents[a].load());
    for (int k = 0; k < kControllersPerAgent; k++)
      pts_remote_controller_unref(c.ctrls[a][k].load());
  }
  for (pts_agent *a : c.dead_agents) pts_agent_unref(a);
  for (pts_remote_controller *rc : c.dead_ctrls) pts_remote_controller_unref(rc);
}

}  // namespace
