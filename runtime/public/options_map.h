// The one place where the public dlrun::Options become the runtime's
// dlr::SessionOptions (and the public enums the internal ones).
#pragma once

#include "dlrun/options.h"
#include "runtime/options.h"

namespace dlrun::detail {

// Every field mapped; the weight budget text parsed (error names "weight_budget").
// Range checks are validate_options()'s, at open.
dlr::Expected<dlr::SessionOptions> to_session_options(const Options& o);

}  // namespace dlrun::detail
