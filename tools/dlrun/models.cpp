#include "tools/dlrun/models.h"

#include "tools/common/model_specs.h"

namespace dlr::tools {

Expected<std::unique_ptr<DlrunModels>> open_models(const Args& a, const SessionOptions& opt) {
  auto m = std::make_unique<DlrunModels>();
  if (a.models.empty()) {
    DLR_ASSIGN_OR_RETURN(m->single, Session::open(a.cfg, a.weights, opt));
    m->sessions.push_back(m->single.get());
    m->names.push_back("");
    return m;
  }
  std::vector<ModelSpec> specs;
  for (const std::string& text : a.models) {
    DLR_ASSIGN_OR_RETURN(ModelSpec s, parse_model_spec(text, "--model"));
    specs.push_back(s);
  }
  make_names_unique(&specs);
  RuntimeOptions ro;
  ro.device = opt.device;
  ro.cuda_device = opt.cuda_device;
  ro.budget = a.runtime_budget;
  ro.copy_profile = opt.copy_profile;  // the runtime plans every model with one profile
  DLR_ASSIGN_OR_RETURN(m->runtime, Runtime::create(ro));
  for (const ModelSpec& s : specs) {
    SessionOptions o = opt;
    if (s.size) o.width = o.height = s.size;
    DLR_ASSIGN_OR_RETURN(std::unique_ptr<RuntimeModel> model, m->runtime->open(s.cfg, s.weights, o));
    m->sessions.push_back(&model->session());
    m->names.push_back(s.name);
    m->on_runtime.push_back(std::move(model));
  }
  return m;
}

}  // namespace dlr::tools
