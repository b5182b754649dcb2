/* ptsched: the whole public API. Include this, or the headers it lists. */
#ifndef PTSCHED_H
#define PTSCHED_H

#include "ptsched/common.h"
#include "ptsched/version.h"
#include "ptsched/value.h"
#include "ptsched/loop.h"
#include "ptsched/promise.h"
#include "ptsched/signal.h"
#include "ptsched/scheduler.h"
#include "ptsched/agents.h"

#endif /* PTSCHED_H */
