// tests/model/program.h: operation sequences for the differential fuzzer.
//
// A Program is a tree of actions made from a byte string (so the same
// generator serves libFuzzer and a seeded PRNG): top-level actions are what
// the embedder does between runs; posted tasks, yield continuations, timer and
// ordinary tasks, microtasks and event listeners carry bodies of further
// actions. Run() interprets a program against an Api (the model or the
// library) and returns the full trace: run order, settlements with values and
// reasons, events with their fields, and every return code. References to
// objects are indices taken modulo the number of live objects at execution
// time, so deleting actions (shrinking) keeps a program valid.
#ifndef PTSCHED_TESTS_MODEL_PROGRAM_H
#define PTSCHED_TESTS_MODEL_PROGRAM_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/model/api.h"

namespace ptsfuzz {

enum Op {
  kPost,        // postTask(g, priority?, signal?, delay?) -> body, return
  kYield,       // yield(signal option, priority option) -> continuation body
  kAbort,       // controller.abort(reason?)
  kSetPriority, // controller.setPriority(p) (p may be invalid)
  kNewTaskController,
  kNewAbortController,
  kAny,         // TaskSignal.any / AbortSignal.any over a random subset
  kTimeout,     // AbortSignal.timeout(ms)
  kAbortNew,    // AbortSignal.abort(reason?)
  kAddListener, // addEventListener(type, body, once)
  kRemoveListener,
  kSetHandler,  // onabort / onprioritychange (or null)
  kQueueTask,   // an ordinary task on a source
  kTimer,       // setTimeout-like
  kMicrotask,   // queueMicrotask(body)
  kChain,       // issue 18's shape: d resolved, d.then(a), a: d.then(b), ...
  kInfo,        // trace a signal's state
  kPostCb,      // pts_scheduler_post_task_cb: the direct-callback form of postTask
  kYieldCb,     // pts_scheduler_yield_cb: the direct-callback form of yield
  kSetActive,   // top level only
  kNewGlobal,   // top level only
  kStep,        // top level only: one loop iteration
  kRunIdle,     // top level only
  kAdvance,     // top level only: virtual clock
  kOpCount
};

struct Action {
  Op op = kInfo;
  int a = 0, b = 0, c = 0, d = 0;
  int64_t e = 0;
  std::vector<int> list;
  int id = 0;  // unique per node: listener identity, trace names
  std::vector<Action> body;
  int ret = 0;  // body's return: 0 undefined, 1 int, 2 error, 3 a promise
};

struct Program {
  std::vector<Action> top;
  size_t nodes() const;
  std::string str() const;  // a readable listing, for reproductions
};

// Makes a program from bytes (bytes past the end read as 0).
Program Generate(const uint8_t *data, size_t size, size_t max_top = 48);

struct RunResult {
  std::vector<std::string> trace;
  uint64_t ops = 0;  // actions executed
};

// Runs p on api; the caller creates and destroys api (one program per api).
RunResult Run(const Program &p, Api *api, uint64_t max_ops = 4000);

// First index where two traces differ, or -1 if equal.
long FirstDifference(const std::vector<std::string> &a,
                     const std::vector<std::string> &b);

}  // namespace ptsfuzz

#endif  // PTSCHED_TESTS_MODEL_PROGRAM_H
