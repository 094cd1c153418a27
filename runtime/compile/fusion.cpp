#include "runtime/compile/fusion.h"

namespace dlr {
namespace {

bool whole(const ExecutionPlan& plan, const ViewRef& v) {
  return v.buffer >= 0 && v.c_offset == 0 && v.c == plan.buffer(v).c;
}

bool same_view(const ViewRef& a, const ViewRef& b) {
  return a.buffer == b.buffer && a.c_offset == b.c_offset && a.c == b.c;
}

// The conv step `conv` can run the shortcut step `sc` as its epilogue.
bool foldable(const ExecutionPlan& plan, const Step& conv, const Step& sc) {
  if (conv.kind != LayerKind::kConv || conv.no_op || conv.slice >= 0 || conv.accumulate || conv.inputs.size() != 1 ||
      conv.residual.buffer >= 0 || !conv.copies.empty() || !conv.packs.empty())
    return false;
  if (sc.kind != LayerKind::kShortcut || sc.no_op || sc.inputs.size() != 2 || !sc.copies.empty()) return false;
  if (!same_view(sc.inputs[0], conv.output) || !same_view(sc.output, conv.output) || !whole(plan, conv.output))
    return false;
  const ViewRef& r = sc.inputs[1];
  if (!whole(plan, r) || r.buffer == conv.output.buffer || r.buffer == conv.inputs[0].buffer) return false;
  const Buffer& out = plan.buffer(conv.output);
  const Buffer& res = plan.buffer(r);
  const bool same_shape = res.c == out.c && res.h == out.h && res.w == out.w && res.dtype == out.dtype &&
                          res.layout == out.layout;
  // Written before the conv and still live when it runs (it is read by the shortcut after it).
  return same_shape && res.first_step < conv.index && res.last_step >= sc.index;
}

}  // namespace

int fold_shortcuts(ExecutionPlan* plan) {
  if (!plan->options.fold_shortcuts) return 0;
  int folded = 0;
  for (size_t i = 1; i < plan->steps.size(); ++i) {
    Step& sc = plan->steps[i];
    Step& conv = plan->steps[i - 1];
    if (!foldable(*plan, conv, sc)) continue;
    conv.residual = sc.inputs[1];
    conv.residual_activation = std::get<ShortcutParams>(sc.params).activation;
    sc.no_op = true;
    sc.folded_into = conv.index;
    ++folded;
  }
  return folded;
}

}  // namespace dlr
