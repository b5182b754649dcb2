// The one engine hook Node-API lacks: V8's continuation-preserved embedder
// data (CPED), which V8 stores on each promise reaction when it is registered
// (then/await) and restores while the reaction runs. That is exactly
// HostMakeJobCallback / HostCallJobCallback for the scheduling state, at no
// cost per promise (async_hooks would call into JS for every promise).
//
// napi_value is a v8::Local<v8::Value> in Node-API's own implementation
// (v8impl::V8LocalValueFromJsValue copies it bit for bit); these helpers rely
// on that, and on node exporting the V8 API, which it does.
#include <string.h>

#include <v8.h>

#include "cped.h"

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
}  // namespace

extern "C" napi_value pts_node_cped_get(void) {
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  return from_v8(isolate->GetCurrentContext()->GetContinuationPreservedEmbedderData());
}

extern "C" void pts_node_cped_set(napi_value value) {
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  isolate->GetCurrentContext()->SetContinuationPreservedEmbedderData(to_v8(value));
}
