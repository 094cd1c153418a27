// dlrun's models: the positional CFG WEIGHTS as one Session, or every --model on one
// Runtime (runtime/multi/runtime.h: one device-memory budget, shared activations and
// workspace). Either way the caller runs sessions[i], named names[i].
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/multi/runtime.h"
#include "runtime/session.h"
#include "tools/dlrun/options.h"

namespace dlr::tools {

struct DlrunModels {
  std::unique_ptr<Runtime> runtime;                       // --model only
  std::vector<std::unique_ptr<RuntimeModel>> on_runtime;  // --model only; closed before the runtime
  std::unique_ptr<Session> single;                        // CFG WEIGHTS
  std::vector<Session*> sessions;                         // CFG WEIGHTS, or the --model ones in order
  std::vector<std::string> names;                         // "" for CFG WEIGHTS; unique --model names
  ~DlrunModels() { on_runtime.clear(); }
};

// Opens the models of `a` with the options `opt` (every --model's @SIZE replaces its
// width and height). Errors: Session::open's or the runtime's, one line.
Expected<std::unique_ptr<DlrunModels>> open_models(const Args& a, const SessionOptions& opt);

}  // namespace dlr::tools
