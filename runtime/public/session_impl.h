// dlrun::Session's state (shared by session.cpp and runtime.cpp): the runtime's
// session, alone or hosted on a dlr::Runtime.
#pragma once

#include <memory>

#include "dlrun/session.h"
#include "runtime/multi/runtime.h"
#include "runtime/session.h"

namespace dlrun {

struct Session::Impl {
  // Hosted: keeps the runtime alive until this session has closed. Declared before
  // `hosted` so that it is destroyed after it (members go in reverse order).
  std::shared_ptr<void> runtime;
  std::unique_ptr<dlr::RuntimeModel> hosted;  // opened on a Runtime
  std::unique_ptr<dlr::Session> own;          // opened alone
  dlr::Session* s = nullptr;                  // the one of the two above
  Options options;
};

}  // namespace dlrun
