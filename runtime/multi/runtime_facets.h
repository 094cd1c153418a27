// The facets of a Runtime's engines (runtime/engine_sharing.h) as the runtime's sources
// reach them (private to runtime/multi). attach() checked that each engine shares
// memory; an engine without a ring facet (the CPU's) answers as one that streams
// nothing: no ring, no prefetch.
#pragma once

#include "runtime/engine.h"
#include "runtime/engine_sharing.h"

namespace dlr {

SharedMemoryClient& memory_of(Engine& e);
SharedRingClient& ring_of(Engine& e);

}  // namespace dlr
