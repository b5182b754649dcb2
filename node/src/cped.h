/* V8's continuation-preserved embedder data, from C (see cped.cc). Both run
 * on the calling thread's isolate, inside a handle scope of a Node-API call. */
#ifndef PTS_NODE_CPED_H
#define PTS_NODE_CPED_H

#include <node/node_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The current data: the scheduling state object, or undefined. */
napi_value pts_node_cped_get(void);
/* Sets it; promise reactions registered from now on carry value. */
void pts_node_cped_set(napi_value value);

#ifdef __cplusplus
}
#endif
#endif /* PTS_NODE_CPED_H */
