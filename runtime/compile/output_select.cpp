// The [yolo] outputs whose candidates the device picks (plan.h, OutputSelect): one block
// per head, 256-byte aligned parts, so the engine downloads a head's counts, keys and rows
// in one copy.
#include <algorithm>

#include "loaders/network_desc.h"
#include "runtime/compile/plan.h"
#include "runtime/core/types.h"

namespace dlr {

namespace {

constexpr int64_t kAlign = 256;

// Rows kept per image: a sixteenth of the head's cells x anchors, at least 64, at most all.
int select_capacity(int64_t candidates) {
  return int(std::min<int64_t>(candidates, std::max<int64_t>(64, candidates / 16)));
}

}  // namespace

std::vector<OutputSelect> plan_output_selects(const NetworkDesc& net, const PlannerOptions& options) {
  std::vector<OutputSelect> selects;
  if (options.select_thresh < 0) return selects;
  int64_t at = 0;
  for (int y : net.output_layers()) {
    const LayerDesc& l = net.layers[size_t(y)];
    if (l.kind != LayerKind::kYolo) continue;
    OutputSelect s;
    s.layer = y;
    s.anchors = int(l.yolo().mask.size());
    s.entries = l.yolo().classes + 5;
    s.cells = l.out.w * l.out.h;
    s.capacity = select_capacity(int64_t(s.cells) * s.anchors);
    const int64_t b = options.batch;
    s.offset = at;
    s.keys_offset = align_up(b * 4, kAlign);
    s.rows_offset = s.keys_offset + align_up(b * s.capacity * 4, kAlign);
    s.bytes = align_up(s.rows_offset + b * s.capacity * s.entries * 4, kAlign);
    at += s.bytes;
    selects.push_back(s);
  }
  return selects;
}

const OutputSelect* ExecutionPlan::select_of(int layer) const {
  for (const OutputSelect& s : selects)
    if (s.layer == layer) return &s;
  return nullptr;
}

int64_t ExecutionPlan::select_bytes() const { return selects.empty() ? 0 : selects.back().offset + selects.back().bytes; }

}  // namespace dlr
