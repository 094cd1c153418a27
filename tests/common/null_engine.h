// An Engine that does nothing: every inference call succeeds, no outputs, no timings.
// Tests derive from it and override what they hand over (reports, outputs).
#pragma once

#include <vector>

#include "runtime/engine.h"

namespace dlr::test {

class NullEngine : public Engine {
 public:
  DeviceKind device() const override { return DeviceKind::kCUDA; }
  const ExecutionPlan& plan() const override { return m_plan; }
  Status set_images(const ImageU8*, int, bool) override { return Status(); }
  Status set_input(const float*, int) override { return Status(); }
  Status reserve_images(int, int) override { return Status(); }
  Status run() override { return Status(); }
  const float* output(int, int) const override { return nullptr; }
  Status read_layer(int, int, std::vector<float>*) const override { return unsupported("no layers"); }
  MemoryReport memory() const override { return {}; }
  std::vector<LayerTiming> layer_timings() const override { return {}; }
  double last_run_ms() const override { return 0; }

 private:
  ExecutionPlan m_plan;
};

}  // namespace dlr::test
