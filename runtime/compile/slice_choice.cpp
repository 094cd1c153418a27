#include "runtime/compile/slice_choice.h"

#include <algorithm>
#include <sstream>

namespace dlr {
namespace {

Status check_times(const TimedPlan& t, const char* what) {
  if (t.plan == nullptr || t.step_ms == nullptr || t.step_ms->size() != t.plan->steps.size())
    return invalid_argument(std::string("slice axes: the ") + what + " variant's kernel times do not match its steps");
  return Status();
}

// Per layer: the sum of its steps' times.
std::map<int, double> layer_sums(const TimedPlan& t) {
  std::map<int, double> sums;
  for (const Step& st : t.plan->steps) sums[st.layer] += (*t.step_ms)[size_t(st.index)];
  return sums;
}

// Per layer: the axis it is cut along (sliced layers only).
std::map<int, SliceAxis> sliced_axes(const ExecutionPlan& plan) {
  std::map<int, SliceAxis> axes;
  for (const Step& st : plan.steps)
    if (st.slices > 0) axes[st.layer] = st.axis;
  return axes;
}

const char* axis_word(SliceAxis a) { return a == SliceAxis::kChannels ? "channels" : "filters"; }

// The step of `plan` running slice `slice` of `layer` cut along `axis` (slice -1: the
// unsliced layer), or -1.
int find_step(const ExecutionPlan& plan, int layer, int slice, SliceAxis axis) {
  if (layer < 0 || size_t(layer) >= plan.layer_step.size()) return -1;
  for (size_t i = size_t(plan.layer_step[size_t(layer)]); i < plan.steps.size() && plan.steps[i].layer == layer; ++i)
    if (plan.steps[i].slice == slice && (slice < 0 || plan.steps[i].axis == axis)) return int(i);
  return -1;
}

}  // namespace

Expected<std::map<int, SliceAxis>> choose_slice_axes(const TimedPlan& channels, const TimedPlan& filters) {
  DLR_RETURN_IF_ERROR(check_times(channels, "channels"));
  DLR_RETURN_IF_ERROR(check_times(filters, "filters"));
  const std::map<int, SliceAxis> a = sliced_axes(*channels.plan), b = sliced_axes(*filters.plan);
  const std::map<int, double> ta = layer_sums(channels), tb = layer_sums(filters);
  std::map<int, SliceAxis> chosen;
  for (const auto& [layer, axis] : a) {
    const auto other = b.find(layer);
    if (axis != SliceAxis::kChannels || other == b.end() || other->second != SliceAxis::kFilters) continue;
    chosen[layer] = tb.at(layer) < ta.at(layer) ? SliceAxis::kFilters : SliceAxis::kChannels;
  }
  return chosen;
}

std::vector<std::map<int, SliceAxis>> slice_axis_candidates(const std::map<int, SliceAxis>& per_layer) {
  std::vector<std::map<int, SliceAxis>> out{per_layer};
  for (SliceAxis all : {SliceAxis::kChannels, SliceAxis::kFilters}) {
    std::map<int, SliceAxis> m;
    for (const auto& [layer, axis] : per_layer) m[layer] = all;
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(std::move(m));
  }
  return out;
}

Expected<std::vector<double>> mixed_step_ms(const ExecutionPlan& mixed, const TimedPlan& channels,
                                            const TimedPlan& filters) {
  DLR_RETURN_IF_ERROR(check_times(channels, "channels"));
  DLR_RETURN_IF_ERROR(check_times(filters, "filters"));
  std::vector<double> ms(mixed.steps.size(), 0.0);
  for (const Step& st : mixed.steps) {
    // The variant cut this step's way; a conv over a concatenation is cut by filters in both.
    const bool by_filters = st.slices > 0 && st.axis == SliceAxis::kFilters;
    const TimedPlan* from = by_filters ? &filters : &channels;
    int i = find_step(*from->plan, st.layer, st.slice, st.axis);
    if (i < 0) {
      from = by_filters ? &channels : &filters;
      i = find_step(*from->plan, st.layer, st.slice, st.axis);
    }
    if (i < 0)
      return invalid_argument("slice axes: step " + std::to_string(st.index) + " (layer " + std::to_string(st.layer) +
                              ", slice " + std::to_string(st.slice) + " of " + axis_word(st.axis) +
                              ") has no measured counterpart");
    ms[size_t(st.index)] = (*from->step_ms)[size_t(i)];
  }
  return ms;
}

std::string slice_axes_note(const ExecutionPlan& plan) {
  int by_channels = 0, by_filters = 0;
  for (const auto& [layer, axis] : sliced_axes(plan)) ++(axis == SliceAxis::kChannels ? by_channels : by_filters);
  return "slices: the axis of each layer from kernel times measured at open: " + std::to_string(by_channels) +
         " layers by input channels, " + std::to_string(by_filters) + " by filters";
}

std::string slice_axes_to_text(const std::map<int, SliceAxis>& axes) {
  std::string s;
  for (const auto& [layer, axis] : axes) s += (s.empty() ? "" : " ") + std::to_string(layer) + ":" + axis_word(axis);
  return s;
}

Expected<std::map<int, SliceAxis>> slice_axes_from_text(const std::string& text) {
  std::map<int, SliceAxis> axes;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    const size_t colon = tok.find(':');
    const std::string num = colon == std::string::npos ? "" : tok.substr(0, colon);
    const std::string word = colon == std::string::npos ? "" : tok.substr(colon + 1);
    const bool digits = !num.empty() && num.size() <= 6 && num.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || (word != "channels" && word != "filters"))
      return invalid_argument("slice axes: '" + tok + "': expected <layer>:channels or <layer>:filters");
    const int layer = std::stoi(num);
    if (!axes.emplace(layer, word == "channels" ? SliceAxis::kChannels : SliceAxis::kFilters).second)
      return invalid_argument("slice axes: layer " + num + " given twice");
  }
  return axes;
}

}  // namespace dlr
