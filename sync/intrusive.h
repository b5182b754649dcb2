/* sync/intrusive.h: the intrusive toolkit's one container_of: from a
 * pointer to a member of a struct (a queue node, a list link, a heap's
 * entry) back to the struct that embeds it. Every file of the library that
 * keeps its objects in intrusive structures includes this. */
#ifndef PTSCHED_SYNC_INTRUSIVE_H
#define PTSCHED_SYNC_INTRUSIVE_H

#include <stddef.h>

/* The struct of type `type` whose member `member` is at ptr. */
#define container_of(ptr, type, member) \
  ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#endif /* PTSCHED_SYNC_INTRUSIVE_H */
