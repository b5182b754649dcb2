// The V8 and Node C++ the addon uses where Node-API falls short; everything
// else is Node-API (binding.c). Five things:
//
// 1. V8's continuation-preserved embedder data (CPED), which V8 stores on each
//    promise reaction when it is registered (then/await) and restores while
//    the reaction runs: HostMakeJobCallback / HostCallJobCallback for the
//    scheduling state, at no cost per promise (async_hooks would call into
//    JS for every promise).
// 2. Promises without a handle of their own. napi_create_promise pairs each
//    promise with a napi_deferred, a V8 global handle plus a malloc'd holder,
//    which the scavenger visits while it lives. Here a task's promise is a
//    plain V8 promise kept in the JS task table (the slot's third entry) and
//    settled through v8::Promise::Resolver, which is the promise itself.
// 3. The per-task run path (pts_node_engine_run): the callback scope and
//    the call, then (after the scope's checkpoint, unless an abort rejected
//    the task meanwhile) the settlement in a second scope, inside one handle
//    scope per check-phase run, instead of a dozen Node-API calls each
//    checking and recording status.
// 4. The calls JS makes once per task (post and yield without options,
//    reading the current state, and run()'s hand-over of the task's promise
//    and state): plain V8 functions, without Node-API's per-call wrapper,
//    status bookkeeping and argument copies.
// 5. Yield continuations: their promises kept here and fulfilled in a
//    callback scope, with no JS call (pts_node_engine_settle_yield).
//
// napi_value is a v8::Local<v8::Value> in Node-API's own implementation
// (v8impl::V8LocalValueFromJsValue copies it bit for bit); to_v8/from_v8 rely
// on that, and on node exporting the V8 and node:: C++ API, which it does.
#include <string.h>

#include <vector>

#include <node.h>
#include <v8.h>

#include "engine.h"

namespace {
v8::Local<v8::Value> to_v8(napi_value v) {
  v8::Local<v8::Value> local;
  memcpy(static_cast<void *>(&local), &v, sizeof v);
  return local;
}
napi_value from_v8(v8::Local<v8::Value> local) {
  napi_value v;
  memcpy(static_cast<void *>(&v), &local, sizeof local);
  return v;
}

// Settles promise; false if V8 could not (the isolate is terminating). A
// promise already settled stays as it is.
bool settle(v8::Local<v8::Context> ctx, v8::Local<v8::Promise::Resolver> promise,
            bool ok, v8::Local<v8::Value> value) {
  v8::Maybe<bool> r = ok ? promise->Resolve(ctx, value) : promise->Reject(ctx, value);
  return r.IsJust();
}
}  // namespace

struct pts_node_engine {
  v8::Isolate *isolate;
  node::Environment *env; // the environment this engine was made in
  v8::Global<v8::Function> run;
  v8::Global<v8::Array> table;
  v8::Global<v8::Object> resource;
  node::async_context actx;
  int chunk_bits; // a slot's entries: table[slot >> chunk_bits], from (slot & mask) * 3
  void *host;     // binding.c's per-environment state, for the fast entry points
  // Pending yield continuations' promises, by index (free ones are empty and
  // listed in yield_free). A yield needs nothing else, so running one calls
  // no JS: its fulfilment in a callback scope resumes the awaiting code in
  // the checkpoint. Few are pending at once, so their handles cost the
  // scavenger little.
  std::vector<v8::Global<v8::Promise>> yields;
  std::vector<int32_t> yield_free;
  // The running task's promise, handed over by JS run() through enter()
  // (internal field 0 of `io`, an object of the engine's own): reading it
  // and the state from the table cost two generic element reads
  // (v8::Object::Get, about 470 instructions each) per task, the call of
  // enter() from optimised JS and an internal field about a third of that.
  // `running`: a task is between its enter() and its settlement; then
  // whether an abort already rejected its promise.
  v8::Global<v8::Object> io;
  bool running = false;
  bool running_settled = false;
};

namespace {
// Entry `field` of `slot` (0 callback, 1 state, 2 promise).
bool slot_get(pts_node_engine *e, v8::Local<v8::Context> ctx, int32_t slot, int field,
              v8::Local<v8::Value> *out) {
  v8::Local<v8::Value> chunk;
  if (!e->table.Get(e->isolate)->Get(ctx, (uint32_t)slot >> e->chunk_bits).ToLocal(&chunk) ||
      !chunk->IsArray())
    return false;
  uint32_t at = ((uint32_t)slot & ((1u << e->chunk_bits) - 1)) * 3 + (uint32_t)field;
  return chunk.As<v8::Array>()->Get(ctx, at).ToLocal(out);
}
}  // namespace

extern "C" napi_value pts_node_cped_get(void) {
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  return from_v8(isolate->GetCurrentContext()->GetContinuationPreservedEmbedderData());
}

extern "C" void pts_node_cped_set(napi_value value) {
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  isolate->GetCurrentContext()->SetContinuationPreservedEmbedderData(to_v8(value));
}

extern "C" pts_node_engine *pts_node_engine_new(napi_value run, napi_value table,
                                                napi_value resource, int chunk_bits,
                                                void *host) {
  v8::Local<v8::Value> fn = to_v8(run), tab = to_v8(table), res = to_v8(resource);
  if (!fn->IsFunction() || !tab->IsArray() || !res->IsObject() || chunk_bits < 1 ||
      chunk_bits > 24)
    return nullptr;
  pts_node_engine *e = new (std::nothrow) pts_node_engine;
  if (!e) return nullptr;
  e->isolate = v8::Isolate::GetCurrent();
  e->env = node::GetCurrentEnvironment(e->isolate->GetCurrentContext());
  e->run.Reset(e->isolate, fn.As<v8::Function>());
  e->table.Reset(e->isolate, tab.As<v8::Array>());
  e->resource.Reset(e->isolate, res.As<v8::Object>());
  e->chunk_bits = chunk_bits;
  e->host = host;
  e->actx = node::EmitAsyncInit(e->isolate, res.As<v8::Object>(), "ptsched.task");
  v8::Local<v8::ObjectTemplate> t = v8::ObjectTemplate::New(e->isolate);
  t->SetInternalFieldCount(1);
  v8::Local<v8::Object> io;
  if (!t->NewInstance(e->isolate->GetCurrentContext()).ToLocal(&io)) {
    delete e;
    return nullptr;
  }
  io->SetInternalField(0, v8::Undefined(e->isolate));
  e->io.Reset(e->isolate, io);
  return e;
}

namespace {
// Keeps p in e->yields; returns its index.
int32_t keep_yield(pts_node_engine *e, v8::Local<v8::Promise> p) {
  int32_t index;
  if (!e->yield_free.empty()) {
    index = e->yield_free.back();
    e->yield_free.pop_back();
    e->yields[index].Reset(e->isolate, p);
  } else {
    index = (int32_t)e->yields.size();
    e->yields.emplace_back(e->isolate, p);
  }
  return index;
}

pts_node_engine *engine_of(const v8::FunctionCallbackInfo<v8::Value> &info) {
  return static_cast<pts_node_engine *>(info.Data().As<v8::External>()->Value());
}

// post(slot) -> true: queues the postTask task in slot (no options; JS made
// its promise). Returns undefined when nothing was queued (JS then takes the
// Node-API path, which throws).
void fast_post(const v8::FunctionCallbackInfo<v8::Value> &info) {
  pts_node_engine *e = engine_of(info);
  if (!info[0]->IsInt32() || pts_node_post_plain(e->host, info[0].As<v8::Int32>()->Value()) < 0)
    return;
  info.GetReturnValue().Set(true);
}

// yield(promise) -> true: when there is no current scheduling state, queues
// a continuation (user-visible, no signal) that fulfils promise (a pending
// promise JS made). Returns undefined, with nothing queued, when there is a
// state (JS computes the continuation's from it) or queueing failed.
void fast_yield(const v8::FunctionCallbackInfo<v8::Value> &info) {
  pts_node_engine *e = engine_of(info);
  if (!e->isolate->GetCurrentContext()->GetContinuationPreservedEmbedderData()->IsUndefined() ||
      !info[0]->IsPromise())
    return;
  int32_t index = keep_yield(e, info[0].As<v8::Promise>());
  if (pts_node_yield_plain(e->host, index) < 0) {
    pts_node_engine_drop_yield(e, index);
    return;
  }
  info.GetReturnValue().Set(true);
}

// enter(promise, state): called by JS run() for the task it is about to
// call, inside the task's callback scope: keeps the task's promise for the
// engine (pts_node_engine_run settles it after the checkpoint) and makes
// the task's scheduling state, if it has one, the embedder data the
// callback's promise reactions will carry.
void fast_enter(const v8::FunctionCallbackInfo<v8::Value> &info) {
  pts_node_engine *e = engine_of(info);
  e->io.Get(e->isolate)->SetInternalField(0, info[0]);
  if (!info[1]->IsUndefined())
    e->isolate->GetCurrentContext()->SetContinuationPreservedEmbedderData(info[1]);
}

// state() -> the current scheduling state, or undefined.
void fast_state(const v8::FunctionCallbackInfo<v8::Value> &info) {
  info.GetReturnValue().Set(
      engine_of(info)->isolate->GetCurrentContext()->GetContinuationPreservedEmbedderData());
}
}  // namespace

extern "C" napi_value pts_node_engine_functions(pts_node_engine *e) {
  v8::Isolate *isolate = e->isolate;
  v8::EscapableHandleScope hs(isolate);
  v8::Local<v8::Context> ctx = isolate->GetCurrentContext();
  v8::Local<v8::External> data = v8::External::New(isolate, e);
  v8::Local<v8::Object> fns = v8::Object::New(isolate);
  static const struct {
    const char *name;
    v8::FunctionCallback fn;
  } list[] = {{"post", fast_post},
              {"yield", fast_yield},
              {"state", fast_state},
              {"enter", fast_enter}};
  for (const auto &f : list) {
    v8::Local<v8::Function> fn;
    v8::Local<v8::String> name;
    if (!v8::String::NewFromUtf8(isolate, f.name).ToLocal(&name) ||
        !v8::Function::New(ctx, f.fn, data, 1, v8::ConstructorBehavior::kThrow).ToLocal(&fn) ||
        fns->Set(ctx, name, fn).IsNothing())
      return nullptr;
  }
  return from_v8(hs.Escape(fns));
}

extern "C" void pts_node_engine_free(pts_node_engine *e) {
  delete e;  // the Globals release their handles
}

extern "C" void pts_node_engine_scoped(pts_node_engine *e, void (*fn)(void *), void *arg) {
  v8::HandleScope hs(e->isolate);
  fn(arg);
  // The last task's promise, kept by fast_enter: not kept past the run.
  e->io.Get(e->isolate)->SetInternalField(0, v8::Undefined(e->isolate));
}

extern "C" int pts_node_engine_run(pts_node_engine *e, int32_t slot, bool has_state) {
  // Handles go to the check phase's scope (pts_node_engine_scoped): a scope
  // per task allocated and freed a handle block per task when the stack
  // sat at a block's end.
  v8::Isolate *isolate = e->isolate;
  v8::Local<v8::Context> ctx = isolate->GetCurrentContext();
  v8::Local<v8::Value> arg = v8::Integer::New(isolate, slot);
  v8::Local<v8::Value> ret;
  bool threw = false;
  e->running = true;
  e->running_settled = false;
  {
    // spec: invoke the callback, then "clean up after running script": the
    // scope's close runs nextTicks and the microtask checkpoint, where an
    // abort still reaches the task (its abort steps stay attached until it
    // completes; binding.c rejects it through pts_node_engine_reject_running).
    // run(slot) hands the task's promise and state over (fast_enter) before
    // it calls the callback.
    node::CallbackScope scope(e->env, e->resource.Get(isolate), e->actx);
    v8::TryCatch tc(isolate);
    if (!e->run.Get(isolate)->Call(ctx, v8::Undefined(isolate), 1, &arg).ToLocal(&ret)) {
      if (tc.HasTerminated() || isolate->IsExecutionTerminating()) {
        if (has_state) ctx->SetContinuationPreservedEmbedderData(v8::Undefined(isolate));
        e->running = false;
        e->io.Get(isolate)->SetInternalField(0, v8::Undefined(isolate));
        tc.ReThrow();
        return -1;
      }
      threw = true;
      ret = tc.Exception();
    }
    if (has_state) ctx->SetContinuationPreservedEmbedderData(v8::Undefined(isolate));
  }
  bool settled = e->running_settled;
  e->running = false;
  // The field keeps the promise until the next task's enter() or the end of
  // the check phase's run (pts_node_engine_scoped clears it).
  v8::Local<v8::Value> promise = e->io.Get(isolate)->GetInternalField(0).As<v8::Value>();
  if (isolate->IsExecutionTerminating()) return -1;
  // spec: resolve (or reject) result, unless an abort rejected it first.
  // Its reactions need a checkpoint before the next task: a second scope,
  // skipped when nothing can be queued (no handler, a plain value, no
  // rejection to report). No promise: run() did not reach enter() (the
  // slot was not a task's), so there is nothing to settle.
  if (settled || !promise->IsPromise()) return 0;
  v8::Local<v8::Promise> p = promise.As<v8::Promise>();
  if (!threw && !ret->IsObject() && !p->HasHandler()) {
    settle(ctx, p.As<v8::Promise::Resolver>(), true, ret);
    return 0;
  }
  node::CallbackScope scope(e->env, e->resource.Get(isolate), e->actx);
  bool ok = settle(ctx, p.As<v8::Promise::Resolver>(), !threw, ret);
  return !ok && isolate->IsExecutionTerminating() ? -1 : 0;
}

extern "C" void pts_node_engine_reject_running(pts_node_engine *e, napi_value reason) {
  if (!e->running || e->running_settled) return;
  v8::Isolate *isolate = e->isolate;
  v8::HandleScope hs(isolate);
  v8::Local<v8::Value> p = e->io.Get(isolate)->GetInternalField(0).As<v8::Value>();
  if (!p->IsPromise()) return;
  e->running_settled = true;
  settle(isolate->GetCurrentContext(), p.As<v8::Promise::Resolver>(), false,
         reason ? to_v8(reason) : v8::Undefined(isolate).As<v8::Value>());
}

extern "C" void pts_node_engine_reject(pts_node_engine *e, int32_t slot, napi_value reason) {
  v8::Isolate *isolate = e->isolate;
  v8::HandleScope hs(isolate);
  v8::Local<v8::Context> ctx = isolate->GetCurrentContext();
  v8::Local<v8::Value> p;
  v8::Local<v8::Value> why = reason ? to_v8(reason) : v8::Undefined(isolate).As<v8::Value>();
  if (slot_get(e, ctx, slot, 2, &p) && p->IsPromise())
    settle(ctx, p.As<v8::Promise::Resolver>(), false, why);
}

extern "C" int32_t pts_node_engine_keep_yield(pts_node_engine *e, napi_value promise) {
  v8::Local<v8::Value> p = to_v8(promise);
  return p->IsPromise() ? keep_yield(e, p.As<v8::Promise>()) : -1;
}

extern "C" void pts_node_engine_drop_yield(pts_node_engine *e, int32_t index) {
  e->yields[index].Reset();
  e->yield_free.push_back(index);
}

extern "C" int pts_node_engine_settle_yield(pts_node_engine *e, int32_t index, bool ok,
                                            napi_value reason) {
  v8::Isolate *isolate = e->isolate;
  if (!ok) {
    v8::HandleScope hs(isolate);
    v8::Local<v8::Promise> p = e->yields[index].Get(isolate);
    pts_node_engine_drop_yield(e, index);
    settle(isolate->GetCurrentContext(), p.As<v8::Promise::Resolver>(), false,
           reason ? to_v8(reason) : v8::Undefined(isolate).As<v8::Value>());
    return 0;
  }
  // As pts_node_engine_run: the handles go to the check phase's scope.
  v8::Local<v8::Context> ctx = isolate->GetCurrentContext();
  v8::Local<v8::Promise::Resolver> r = e->yields[index].Get(isolate).As<v8::Promise::Resolver>();
  pts_node_engine_drop_yield(e, index);
  // A macrotask with no JS of its own: closing the scope runs the checkpoint,
  // where the code awaiting the promise resumes.
  node::CallbackScope scope(e->env, e->resource.Get(isolate), e->actx);
  bool done = settle(ctx, r, true, v8::Undefined(isolate));
  return !done && isolate->IsExecutionTerminating() ? -1 : 0;
}
