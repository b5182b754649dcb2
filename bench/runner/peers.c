/* bench/runner/peers.c: the floors and peer libraries ptsched is compared
 * with in the same process run (see peers.h).
 *
 * Rules every scenario here keeps, so the ratios are fair:
 *  1. The work per task is the same as ptsched's: one indirect call that
 *     bumps a counter (the compiler cannot inline it: the pointer is read
 *     from a volatile).
 *  2. Set-up (creating bases, events, threads, nodes) is outside the timed
 *     region; the clock (CLOCK_MONOTONIC) brackets the whole batch.
 *  3. Cross-thread scenarios start timing only after the consumer is parked
 *     in its loop (ready flag, then 1 ms), as for ptsched.
 *  4. Single-thread libevent bases are created with EVENT_BASE_FLAG_NOLOCK so
 *     they do not pay for the locks the cross-thread bases need.
 */
#define _GNU_SOURCE
#include "bench/runner/peers.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "bench/runner/harness.h"

int rb_mixed_priority(size_t i) {
  /* A fixed integer hash: the same pattern in every mixed scenario. */
  uint32_t x = (uint32_t)i * 2654435761u;
  x ^= x >> 15;
  return (int)(x % 3u);
}

typedef void (*task_fn)(void *data, int status);
static void count_task(void *data, int status) {
  *(volatile size_t *)data += 1 + (size_t)(status != 0);
}
/* Read through a volatile so every call stays an indirect call. */
static task_fn volatile g_count_task = count_task;

/* ---- intrusive FIFO and three-level priority FIFO ---- */

typedef struct fnode {
  struct fnode *next;
  task_fn fn;
  void *data;
} fnode;

typedef struct fifo {
  fnode *head, *tail;
} fifo;

static inline void fifo_push(fifo *q, fnode *n) {
  n->next = NULL;
  if (q->tail) q->tail->next = n;
  else q->head = n;
  q->tail = n;
}
static inline fnode *fifo_pop(fifo *q) {
  fnode *n = q->head;
  if (n) {
    q->head = n->next;
    if (q->head == NULL) q->tail = NULL;
  }
  return n;
}

double rb_floor_fifo(size_t n, size_t batch) {
  fnode *nodes = calloc(batch, sizeof *nodes);
  if (nodes == NULL) return -1;
  fifo q = {NULL, NULL};
  size_t counter = 0, done = 0;
  uint64_t t0 = rb_now_ns();
  while (done < n) {
    for (size_t i = 0; i < batch; i++) {
      nodes[i].fn = g_count_task;
      nodes[i].data = &counter;
      fifo_push(&q, &nodes[i]);
    }
    fnode *x;
    while ((x = fifo_pop(&q)) != NULL) x->fn(x->data, 0);
    done += batch;
  }
  uint64_t t1 = rb_now_ns();
  free(nodes);
  return counter == done ? (double)(t1 - t0) / (double)done : -1;
}

double rb_floor_prio_fifo(size_t n, size_t batch) {
  fnode *nodes = calloc(batch, sizeof *nodes);
  int *prio = malloc(batch * sizeof *prio);
  if (nodes == NULL || prio == NULL) {
    free(nodes);
    free(prio);
    return -1;
  }
  for (size_t i = 0; i < batch; i++) prio[i] = rb_mixed_priority(i);
  fifo q[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
  unsigned bits = 0;
  size_t counter = 0, done = 0;
  uint64_t t0 = rb_now_ns();
  while (done < n) {
    for (size_t i = 0; i < batch; i++) {
      nodes[i].fn = g_count_task;
      nodes[i].data = &counter;
      fifo_push(&q[prio[i]], &nodes[i]);
      bits |= 1u << prio[i];
    }
    while (bits) {
      int p = 31 - __builtin_clz(bits); /* most urgent non-empty level */
      fnode *x = fifo_pop(&q[p]);
      if (q[p].head == NULL) bits &= ~(1u << p);
      x->fn(x->data, 0);
    }
    done += batch;
  }
  uint64_t t1 = rb_now_ns();
  free(nodes);
  free(prio);
  return counter == done ? (double)(t1 - t0) / (double)done : -1;
}

/* ---- atomic-exchange intrusive MPSC (D. Vyukov's non-intrusive/intrusive
 * MPSC node-based queue, 1024cores.net) ---- */

/* Packed: with one node per cache line the floor measured 28-30 ns per task
 * against 13-19 packed (two runs each, 2026-11-25); a floor takes the
 * cheaper layout. */
typedef struct mnode {
  _Atomic(struct mnode *) next;
  task_fn fn;
  void *data;
} mnode;

typedef struct mpsc {
  _Alignas(64) _Atomic(mnode *) head; /* producers */
  _Alignas(64) mnode *tail;           /* consumer */
  mnode stub;
} mpsc;

static void mpsc_init(mpsc *q) {
  atomic_init(&q->stub.next, NULL);
  atomic_init(&q->head, &q->stub);
  q->tail = &q->stub;
}

static inline void mpsc_push(mpsc *q, mnode *n) {
  atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
  /* acq_rel: publishes n's fields, orders with the previous producer. */
  mnode *prev = atomic_exchange_explicit(&q->head, n, memory_order_acq_rel);
  atomic_store_explicit(&prev->next, n, memory_order_release);
}

static inline mnode *mpsc_pop(mpsc *q) {
  mnode *tail = q->tail;
  mnode *next = atomic_load_explicit(&tail->next, memory_order_acquire);
  if (tail == &q->stub) {
    if (next == NULL) return NULL;
    q->tail = next;
    tail = next;
    next = atomic_load_explicit(&next->next, memory_order_acquire);
  }
  if (next != NULL) {
    q->tail = next;
    return tail;
  }
  if (tail != atomic_load_explicit(&q->head, memory_order_acquire))
    return NULL; /* a producer is between its exchange and its link */
  mpsc_push(q, &q->stub);
  next = atomic_load_explicit(&tail->next, memory_order_acquire);
  if (next != NULL) {
    q->tail = next;
    return tail;
  }
  return NULL;
}

typedef struct mpsc_run {
  mpsc q;
  mnode *nodes;
  size_t n;
  atomic_int go;
} mpsc_run;

static void *mpsc_producer(void *arg) {
  mpsc_run *r = arg;
  rb_pin_consumer(); /* here the spawned side produces: the other CPU all the same */
  /* Read once, as every stream's poster does (RB_CONSUMER_SIDE, harness.h). */
  mnode *nodes = r->nodes;
  size_t n = r->n;
  while (atomic_load_explicit(&r->go, memory_order_acquire) == 0) {
  }
  for (size_t i = 0; i < n; i++) mpsc_push(&r->q, &nodes[i]);
  return NULL;
}

double rb_floor_mpsc(size_t n) {
  mpsc_run *r = aligned_alloc(64, (sizeof *r + 63) / 64 * 64);
  if (r == NULL) return -1;
  memset(r, 0, sizeof *r);
  mpsc_init(&r->q);
  r->n = n;
  r->nodes = calloc(n, sizeof *r->nodes);
  size_t counter = 0;
  if (r->nodes == NULL) {
    free(r);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    r->nodes[i].fn = g_count_task;
    r->nodes[i].data = &counter;
  }
  pthread_t th;
  if (pthread_create(&th, NULL, mpsc_producer, r) != 0) {
    free(r->nodes);
    free(r);
    return -1;
  }
  uint64_t t0 = rb_now_ns();
  atomic_store_explicit(&r->go, 1, memory_order_release);
  size_t got = 0;
  while (got < n) {
    mnode *x = mpsc_pop(&r->q);
    if (x == NULL) continue;
    x->fn(x->data, 0);
    got++;
  }
  uint64_t t1 = rb_now_ns();
  pthread_join(th, NULL);
  free(r->nodes);
  free(r);
  return counter == n ? (double)(t1 - t0) / (double)n : -1;
}

/* ---- futex ping-pong: the cost of waking a sleeping thread, both ways ---- */

static void futex_wait(atomic_int *addr, int val) {
  syscall(SYS_futex, (int *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}
static void futex_wake(atomic_int *addr) {
  syscall(SYS_futex, (int *)addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

typedef struct futex_pp {
  _Alignas(64) atomic_int a;
  _Alignas(64) atomic_int b;
  atomic_int stop;
} futex_pp;

static void *futex_partner(void *arg) {
  futex_pp *p = arg;
  for (;;) {
    while (atomic_load(&p->b) == 0) futex_wait(&p->b, 0);
    atomic_store(&p->b, 0);
    if (atomic_load(&p->stop)) return NULL;
    atomic_store(&p->a, 1);
    futex_wake(&p->a);
  }
}

double rb_floor_futex_rtt(size_t rounds) {
  futex_pp *p = aligned_alloc(64, (sizeof *p + 63) / 64 * 64);
  if (p == NULL) return -1;
  memset(p, 0, sizeof *p);
  pthread_t th;
  if (pthread_create(&th, NULL, futex_partner, p) != 0) {
    free(p);
    return -1;
  }
  rb_sleep_ns(1000000);
  uint64_t t0 = rb_now_ns();
  for (size_t i = 0; i < rounds; i++) {
    atomic_store(&p->b, 1);
    futex_wake(&p->b);
    while (atomic_load(&p->a) == 0) futex_wait(&p->a, 0);
    atomic_store(&p->a, 0);
  }
  uint64_t t1 = rb_now_ns();
  atomic_store(&p->stop, 1);
  atomic_store(&p->b, 1);
  futex_wake(&p->b);
  pthread_join(th, NULL);
  free(p);
  return (double)(t1 - t0) / (double)rounds;
}

/* ---- abort and requeue floors ---- */

typedef struct dnode {
  struct dnode *prev, *next;
  task_fn fn;
  void *data;
} dnode;

double rb_floor_abort(size_t n) {
  dnode *nodes = calloc(n, sizeof *nodes);
  if (nodes == NULL) return -1;
  size_t counter = 0;
  dnode head = {&head, &head, NULL, NULL};
  for (size_t i = 0; i < n; i++) {
    dnode *x = &nodes[i];
    x->fn = g_count_task;
    x->data = &counter;
    x->prev = head.prev;
    x->next = &head;
    head.prev->next = x;
    head.prev = x;
  }
  uint64_t t0 = rb_now_ns();
  while (head.next != &head) {
    dnode *x = head.next;
    x->prev->next = x->next;
    x->next->prev = x->prev;
    x->fn(x->data, -1);
  }
  uint64_t t1 = rb_now_ns();
  free(nodes);
  return counter == 2 * n ? (double)(t1 - t0) / (double)n : -1;
}

double rb_floor_requeue(size_t moves) {
  /* Two levels, each a doubly-linked list of queues plus a bitmap bit; a
   * priority change moves one queue (its tasks untouched). */
  dnode level[2];
  dnode queue;
  unsigned bits = 0;
  for (int i = 0; i < 2; i++) level[i].prev = level[i].next = &level[i];
  queue.prev = queue.next = &level[0];
  level[0].next = level[0].prev = &queue;
  bits = 1;
  volatile unsigned sink = 0;
  uint64_t t0 = rb_now_ns();
  for (size_t i = 0; i < moves; i++) {
    int from = (int)(i & 1), to = 1 - from;
    queue.prev->next = queue.next;
    queue.next->prev = queue.prev;
    if (level[from].next == &level[from]) bits &= ~(1u << from);
    queue.prev = level[to].prev;
    queue.next = &level[to];
    level[to].prev->next = &queue;
    level[to].prev = &queue;
    bits |= 1u << to;
    sink += bits;
  }
  uint64_t t1 = rb_now_ns();
  (void)sink;
  return (double)(t1 - t0) / (double)moves;
}

double rb_floor_node_bytes(size_t n) {
  fnode **v = malloc(n * sizeof *v);
  if (v == NULL) return -1;
  int64_t a0 = rb_allocated_bytes();
  for (size_t i = 0; i < n; i++) v[i] = malloc(sizeof(fnode));
  int64_t a1 = rb_allocated_bytes();
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
  if (a0 < 0 || a1 < 0) return -1;
  return (double)(a1 - a0) / (double)n;
}

/* ---- libevent ---- */

static pthread_once_t ev_once = PTHREAD_ONCE_INIT;
static void ev_threads(void) { evthread_use_pthreads(); }

/* A base with 3 priorities; locked (for cross-thread use) or not. */
static struct event_base *ev_base(bool locked) {
  pthread_once(&ev_once, ev_threads);
  struct event_config *cfg = event_config_new();
  if (cfg == NULL) return NULL;
  if (!locked) event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
  struct event_base *b = event_base_new_with_config(cfg);
  event_config_free(cfg);
  if (b != NULL && event_base_priority_init(b, 3) != 0) {
    event_base_free(b);
    return NULL;
  }
  return b;
}

static void ev_count_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  g_count_task(arg, 0);
}

double rb_libevent_active(size_t n, size_t batch, int mixed) {
  struct event_base *b = ev_base(false);
  if (b == NULL) return -1;
  struct event **ev = calloc(batch, sizeof *ev);
  size_t counter = 0;
  bool ok = ev != NULL;
  for (size_t i = 0; ok && i < batch; i++) {
    ev[i] = event_new(b, -1, 0, ev_count_cb, &counter);
    /* libevent: 0 is the most urgent; ours: 2 is. */
    ok = ev[i] != NULL &&
         event_priority_set(ev[i], mixed ? 2 - rb_mixed_priority(i) : 1) == 0;
  }
  double r = -1;
  if (ok) {
    size_t done = 0;
    uint64_t t0 = rb_now_ns();
    while (done < n) {
      for (size_t i = 0; i < batch; i++) event_active(ev[i], EV_TIMEOUT, 0);
      event_base_loop(b, EVLOOP_NONBLOCK);
      done += batch;
    }
    uint64_t t1 = rb_now_ns();
    if (counter == done) r = (double)(t1 - t0) / (double)done;
  }
  for (size_t i = 0; ev != NULL && i < batch; i++)
    if (ev[i]) event_free(ev[i]);
  free(ev);
  event_base_free(b);
  return r;
}

double rb_libevent_once(size_t n, size_t batch) {
  struct event_base *b = ev_base(false);
  if (b == NULL) return -1;
  size_t counter = 0, done = 0;
  uint64_t t0 = rb_now_ns();
  while (done < n) {
    for (size_t i = 0; i < batch; i++)
      if (event_base_once(b, -1, EV_TIMEOUT, ev_count_cb, &counter, NULL) != 0)
        break;
    event_base_loop(b, EVLOOP_NONBLOCK);
    done += batch;
  }
  uint64_t t1 = rb_now_ns();
  event_base_free(b);
  return counter == done ? (double)(t1 - t0) / (double)done : -1;
}

typedef struct ev_chain {
  struct event *ev;
  size_t count, rounds;
} ev_chain;

static void ev_chain_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  ev_chain *c = arg;
  if (++c->count < c->rounds) event_active(c->ev, EV_TIMEOUT, 0);
}

double rb_libevent_reactivate(size_t rounds) {
  struct event_base *b = ev_base(false);
  if (b == NULL) return -1;
  ev_chain c = {NULL, 0, rounds};
  c.ev = event_new(b, -1, 0, ev_chain_cb, &c);
  double r = -1;
  if (c.ev != NULL) {
    uint64_t t0 = rb_now_ns();
    event_active(c.ev, EV_TIMEOUT, 0);
    while (c.count < rounds) event_base_loop(b, EVLOOP_NONBLOCK);
    uint64_t t1 = rb_now_ns();
    r = (double)(t1 - t0) / (double)rounds;
    event_free(c.ev);
  }
  event_base_free(b);
  return r;
}

typedef struct ev_xt {
  struct event_base *base;
  size_t n;
  atomic_int ready;
  RB_CONSUMER_SIDE size_t count; /* the consumer's own line (harness.h) */
  uint64_t end;
} ev_xt;

static void ev_xt_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  ev_xt *x = arg;
  if (++x->count == x->n) {
    x->end = rb_now_ns();
    event_base_loopbreak(x->base);
  }
}

static void *ev_loop_thread(void *arg) {
  ev_xt *x = arg;
  rb_pin_consumer();
  atomic_store_explicit(&x->ready, 1, memory_order_release);
  event_base_loop(x->base, EVLOOP_NO_EXIT_ON_EMPTY);
  return NULL;
}

double rb_libevent_xthread(size_t n) {
  ev_xt x;
  memset(&x, 0, sizeof x);
  x.n = n;
  x.base = ev_base(true);
  if (x.base == NULL) return -1;
  struct event **ev = calloc(n, sizeof *ev);
  bool ok = ev != NULL;
  for (size_t i = 0; ok && i < n; i++)
    ok = (ev[i] = event_new(x.base, -1, 0, ev_xt_cb, &x)) != NULL;
  pthread_t th;
  double r = -1;
  if (ok && pthread_create(&th, NULL, ev_loop_thread, &x) == 0) {
    rb_wait_ready(&x.ready);
    uint64_t t0 = rb_now_ns();
    for (size_t i = 0; i < n; i++) event_active(ev[i], EV_TIMEOUT, 0);
    pthread_join(th, NULL);
    if (x.count == n) r = (double)(x.end - t0) / (double)n;
  }
  for (size_t i = 0; ev != NULL && i < n; i++)
    if (ev[i]) event_free(ev[i]);
  free(ev);
  event_base_free(x.base);
  return r;
}

typedef struct ev_pp {
  struct event_base *b1, *b2;
  struct event *e1, *e2;
  size_t count, rounds;
  uint64_t start, end;
  atomic_int done;
  atomic_int ready;
} ev_pp;

static void ev_pp_cb1(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  ev_pp *p = arg;
  p->count++;
  if (p->count == 1) p->start = rb_now_ns();
  if (p->count == p->rounds + 1) {
    p->end = rb_now_ns();
    atomic_store(&p->done, 1);
    event_active(p->e2, EV_TIMEOUT, 0);
    event_base_loopbreak(p->b1);
    return;
  }
  event_active(p->e2, EV_TIMEOUT, 0);
}

static void ev_pp_cb2(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  ev_pp *p = arg;
  if (atomic_load(&p->done)) {
    event_base_loopbreak(p->b2);
    return;
  }
  event_active(p->e1, EV_TIMEOUT, 0);
}

static void *ev_pp_thread(void *arg) {
  struct event_base **b = arg;
  event_base_loop(*b, EVLOOP_NO_EXIT_ON_EMPTY);
  return NULL;
}

double rb_libevent_wake_rtt(size_t rounds) {
  ev_pp p;
  memset(&p, 0, sizeof p);
  p.rounds = rounds;
  p.b1 = ev_base(true);
  p.b2 = ev_base(true);
  double r = -1;
  if (p.b1 && p.b2) {
    p.e1 = event_new(p.b1, -1, 0, ev_pp_cb1, &p);
    p.e2 = event_new(p.b2, -1, 0, ev_pp_cb2, &p);
  }
  pthread_t t1, t2;
  if (p.e1 && p.e2 && pthread_create(&t1, NULL, ev_pp_thread, &p.b1) == 0) {
    if (pthread_create(&t2, NULL, ev_pp_thread, &p.b2) == 0) {
      rb_sleep_ns(2000000);
      event_active(p.e1, EV_TIMEOUT, 0);
      pthread_join(t2, NULL);
      pthread_join(t1, NULL);
      r = (double)(p.end - p.start) / (double)rounds;
    } else {
      event_base_loopbreak(p.b1);
      pthread_join(t1, NULL);
    }
  }
  if (p.e1) event_free(p.e1);
  if (p.e2) event_free(p.e2);
  if (p.b1) event_base_free(p.b1);
  if (p.b2) event_base_free(p.b2);
  return r;
}

double rb_libevent_bytes_active(size_t n) {
  struct event_base *b = ev_base(false);
  if (b == NULL) return -1;
  struct event **ev = calloc(n, sizeof *ev);
  size_t counter = 0;
  double r = -1;
  if (ev != NULL) {
    int64_t a0 = rb_allocated_bytes();
    for (size_t i = 0; i < n; i++) {
      ev[i] = event_new(b, -1, 0, ev_count_cb, &counter);
      if (ev[i]) event_active(ev[i], EV_TIMEOUT, 0);
    }
    int64_t a1 = rb_allocated_bytes();
    if (a0 >= 0 && a1 >= 0) r = (double)(a1 - a0) / (double)n;
    event_base_loop(b, EVLOOP_NONBLOCK);
    for (size_t i = 0; i < n; i++)
      if (ev[i]) event_free(ev[i]);
    free(ev);
  }
  event_base_free(b);
  return r;
}

double rb_libevent_bytes_once(size_t n) {
  struct event_base *b = ev_base(false);
  if (b == NULL) return -1;
  size_t counter = 0;
  int64_t a0 = rb_allocated_bytes();
  for (size_t i = 0; i < n; i++)
    event_base_once(b, -1, EV_TIMEOUT, ev_count_cb, &counter, NULL);
  int64_t a1 = rb_allocated_bytes();
  event_base_loop(b, EVLOOP_NONBLOCK);
  event_base_free(b);
  if (a0 < 0 || a1 < 0 || counter != n) return -1;
  return (double)(a1 - a0) / (double)n;
}

/* Latency under a flood: bg events at the lowest priority re-activate
 * themselves; a user-blocking event (priority 0) is activated from here. */
typedef struct ev_lat {
  struct event_base *base;
  struct event *bg[RB_FLOOD];
  struct event *ub;
  uint64_t bg_ns;
  _Atomic uint64_t t_inject;
  atomic_int done, stop, ready;
  double delay;
} ev_lat;

static void ev_lat_bg(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  struct event *self = event_base_get_running_event(((ev_lat *)arg)->base);
  ev_lat *l = arg;
  rb_spin_ns(l->bg_ns);
  if (atomic_load_explicit(&l->stop, memory_order_relaxed)) {
    event_base_loopbreak(l->base);
    return;
  }
  event_active(self, EV_TIMEOUT, 0);
}

static void ev_lat_ub(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  ev_lat *l = arg;
  l->delay = (double)(rb_now_ns() - atomic_load(&l->t_inject));
  atomic_store_explicit(&l->done, 1, memory_order_release);
}

static void *ev_lat_thread(void *arg) {
  ev_lat *l = arg;
  for (int i = 0; i < RB_FLOOD; i++) event_active(l->bg[i], EV_TIMEOUT, 0);
  atomic_store_explicit(&l->ready, 1, memory_order_release);
  event_base_loop(l->base, EVLOOP_NO_EXIT_ON_EMPTY);
  return NULL;
}

uint64_t rb_lat_budget_ns = 2000000000u;

size_t rb_lat_post(uint64_t gap_ns, double *delays, size_t k, rb_lat_send_fn send,
                   void *arg, atomic_int *done, const double *delay) {
  unsigned seed = 12345;
  uint64_t deadline = rb_now_ns() + rb_lat_budget_ns;
  size_t i = 0;
  for (; i < k && rb_now_ns() < deadline; i++) {
    rb_sleep_ns(gap_ns / 2 + (uint64_t)(rand_r(&seed) % (unsigned)(gap_ns + 1)));
    atomic_store(done, 0);
    if (send(arg) != 0) break;
    /* Sleep-poll: a spinning poster would take the second core from the
     * consumer under test. */
    while (atomic_load_explicit(done, memory_order_acquire) == 0) rb_sleep_ns(5000);
    delays[i] = *delay;
  }
  return i;
}

static int ev_lat_send(void *arg) {
  ev_lat *l = arg;
  atomic_store(&l->t_inject, rb_now_ns());
  event_active(l->ub, EV_TIMEOUT, 0);
  return 0;
}

int rb_libevent_latency(uint64_t bg_ns, uint64_t gap_ns, double *delays,
                        size_t nsamples) {
  ev_lat *l = calloc(1, sizeof *l);
  if (l == NULL) return -1;
  l->bg_ns = bg_ns;
  l->base = ev_base(true);
  int rc = -1;
  bool ok = l->base != NULL;
  for (int i = 0; ok && i < RB_FLOOD; i++)
    ok = (l->bg[i] = event_new(l->base, -1, 0, ev_lat_bg, l)) != NULL &&
         event_priority_set(l->bg[i], 2) == 0;
  ok = ok && (l->ub = event_new(l->base, -1, 0, ev_lat_ub, l)) != NULL &&
       event_priority_set(l->ub, 0) == 0;
  pthread_t th;
  if (ok && pthread_create(&th, NULL, ev_lat_thread, l) == 0) {
    rb_wait_ready(&l->ready);
    size_t i = rb_lat_post(gap_ns, delays, nsamples, ev_lat_send, l, &l->done, &l->delay);
    atomic_store(&l->stop, 1);
    pthread_join(th, NULL);
    rc = (int)i;
  }
  for (int i = 0; i < RB_FLOOD; i++)
    if (l->bg[i]) event_free(l->bg[i]);
  if (l->ub) event_free(l->ub);
  if (l->base) event_base_free(l->base);
  free(l);
  return rc;
}

/* The latency floor: the flood as bare spins on one thread, the poster's
 * command as an atomic flag checked between two of them. */
typedef struct fl_lat {
  uint64_t bg_ns;
  _Atomic uint64_t sent; /* the poster's send time; 0: nothing pending */
  atomic_int done, stop, ready;
  double delay;
} fl_lat;

static void *fl_lat_thread(void *arg) {
  fl_lat *l = arg;
  atomic_store_explicit(&l->ready, 1, memory_order_release);
  while (!atomic_load_explicit(&l->stop, memory_order_relaxed)) {
    rb_spin_ns(l->bg_ns); /* one background task */
    /* Between two tasks: has the poster sent something? (acquire: pairs
     * with the poster's store, as a loop's inbox check would.) */
    uint64_t t = atomic_exchange_explicit(&l->sent, 0, memory_order_acquire);
    if (t != 0) {
      l->delay = (double)(rb_now_ns() - t);
      atomic_store_explicit(&l->done, 1, memory_order_release);
    }
  }
  return NULL;
}

static int fl_lat_send(void *arg) {
  fl_lat *l = arg;
  atomic_store_explicit(&l->sent, rb_now_ns(), memory_order_release);
  return 0;
}

int rb_floor_latency(uint64_t bg_ns, uint64_t gap_ns, double *delays,
                     size_t nsamples) {
  fl_lat *l = calloc(1, sizeof *l);
  if (l == NULL) return -1;
  l->bg_ns = bg_ns;
  int rc = -1;
  pthread_t th;
  if (pthread_create(&th, NULL, fl_lat_thread, l) == 0) {
    rb_wait_ready(&l->ready);
    size_t i = rb_lat_post(gap_ns, delays, nsamples, fl_lat_send, l, &l->done, &l->delay);
    atomic_store(&l->stop, 1);
    pthread_join(th, NULL);
    rc = (int)i;
  }
  free(l);
  return rc;
}

/* ---- libuv: uv_async_send with a mutex-protected queue ---- */

typedef struct uv_q {
  uv_loop_t loop;
  uv_async_t async;
  pthread_mutex_t mu;
  fnode *head, *tail;
  size_t n;
  atomic_int ready;
  /* The consumer's own line (harness.h): its counts, on every task. */
  RB_CONSUMER_SIDE size_t count;
  size_t counter; /* the tasks' own counter (count_task) */
  uint64_t first, end; /* the first task's and the last task's times */
} uv_q;

static void uv_q_cb(uv_async_t *h) {
  uv_q *q = h->data;
  pthread_mutex_lock(&q->mu);
  fnode *list = q->head;
  q->head = q->tail = NULL;
  pthread_mutex_unlock(&q->mu);
  if (q->count == 0 && list != NULL) q->first = rb_now_ns();
  while (list != NULL) {
    fnode *x = list;
    list = list->next;
    x->fn(x->data, 0);
    if (++q->count == q->n) {
      q->end = rb_now_ns();
      uv_close((uv_handle_t *)&q->async, NULL);
    }
  }
}

static void *uv_q_thread(void *arg) {
  uv_q *q = arg;
  rb_pin_consumer();
  atomic_store_explicit(&q->ready, 1, memory_order_release);
  uv_run(&q->loop, UV_RUN_DEFAULT);
  return NULL;
}

double rb_libuv_async(size_t n, struct rb_sides *sides) {
  uv_q *q = aligned_alloc(64, sizeof *q);
  fnode *nodes = calloc(n, sizeof *nodes);
  double r = -1;
  if (q != NULL) memset(q, 0, sizeof *q);
  if (q == NULL || nodes == NULL || uv_loop_init(&q->loop) != 0) {
    free(q);
    free(nodes);
    return -1;
  }
  pthread_mutex_init(&q->mu, NULL);
  q->n = n;
  uv_async_init(&q->loop, &q->async, uv_q_cb);
  q->async.data = q;
  for (size_t i = 0; i < n; i++) {
    nodes[i].fn = g_count_task;
    nodes[i].data = &q->counter;
  }
  pthread_t th;
  if (pthread_create(&th, NULL, uv_q_thread, q) == 0) {
    rb_wait_ready(&q->ready);
    uint64_t t0 = rb_now_ns();
    for (size_t i = 0; i < n; i++) {
      fnode *x = &nodes[i];
      x->next = NULL;
      pthread_mutex_lock(&q->mu);
      if (q->tail) q->tail->next = x;
      else q->head = x;
      q->tail = x;
      pthread_mutex_unlock(&q->mu);
      uv_async_send(&q->async);
    }
    uint64_t posted = rb_now_ns();
    pthread_join(th, NULL);
    if (q->counter == n) {
      r = (double)(q->end - t0) / (double)n;
      if (sides != NULL) (void)rb_sides_add(sides, t0, posted, q->first, q->end, n);
    }
  } else {
    uv_close((uv_handle_t *)&q->async, NULL);
    uv_run(&q->loop, UV_RUN_DEFAULT);
  }
  uv_loop_close(&q->loop);
  pthread_mutex_destroy(&q->mu);
  free(nodes);
  free(q);
  return r;
}

typedef struct uv_pp {
  uv_loop_t la, lb;
  uv_async_t aa, ab;
  size_t count, rounds;
  uint64_t start, end;
  atomic_int done;
} uv_pp;

static void uv_pp_a(uv_async_t *h) {
  uv_pp *p = h->data;
  p->count++;
  if (p->count == 1) p->start = rb_now_ns();
  if (p->count == p->rounds + 1) {
    p->end = rb_now_ns();
    atomic_store(&p->done, 1);
    uv_async_send(&p->ab);
    uv_close((uv_handle_t *)&p->aa, NULL);
    return;
  }
  uv_async_send(&p->ab);
}

static void uv_pp_b(uv_async_t *h) {
  uv_pp *p = h->data;
  if (atomic_load(&p->done)) {
    uv_close((uv_handle_t *)&p->ab, NULL);
    return;
  }
  uv_async_send(&p->aa);
}

static void *uv_run_thread(void *arg) {
  uv_run(arg, UV_RUN_DEFAULT);
  return NULL;
}

double rb_libuv_wake_rtt(size_t rounds) {
  uv_pp *p = calloc(1, sizeof *p);
  if (p == NULL) return -1;
  p->rounds = rounds;
  if (uv_loop_init(&p->la) != 0 || uv_loop_init(&p->lb) != 0) {
    free(p);
    return -1;
  }
  uv_async_init(&p->la, &p->aa, uv_pp_a);
  uv_async_init(&p->lb, &p->ab, uv_pp_b);
  p->aa.data = p->ab.data = p;
  pthread_t ta, tb;
  double r = -1;
  if (pthread_create(&ta, NULL, uv_run_thread, &p->la) == 0) {
    if (pthread_create(&tb, NULL, uv_run_thread, &p->lb) == 0) {
      rb_sleep_ns(2000000);
      uv_async_send(&p->aa);
      pthread_join(ta, NULL);
      pthread_join(tb, NULL);
      r = (double)(p->end - p->start) / (double)rounds;
    } else {
      atomic_store(&p->done, 1);
      p->count = rounds;
      uv_async_send(&p->aa);
      pthread_join(ta, NULL);
      uv_close((uv_handle_t *)&p->ab, NULL);
      uv_run(&p->lb, UV_RUN_DEFAULT);
    }
  }
  uv_loop_close(&p->la);
  uv_loop_close(&p->lb);
  free(p);
  return r;
}
