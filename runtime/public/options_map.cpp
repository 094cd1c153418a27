#include "runtime/public/options_map.h"

namespace dlrun::detail {
namespace {

dlr::DeviceKind map(Device d) { return d == Device::kCUDA ? dlr::DeviceKind::kCUDA : dlr::DeviceKind::kCPU; }
dlr::WeightMode map(Mode m) { return m == Mode::kStream ? dlr::WeightMode::kStream : dlr::WeightMode::kPreload; }
dlr::Precision map(Precision p) {
  switch (p) {
    case Precision::kFP32: return dlr::Precision::kFP32;
    case Precision::kTF32: return dlr::Precision::kTF32;
    case Precision::kFP16: return dlr::Precision::kFP16;
  }
  return dlr::Precision::kFP32;
}
dlr::PoolLayout map(PoolLayout l) {
  switch (l) {
    case PoolLayout::kAuto: return dlr::PoolLayout::kAuto;
    case PoolLayout::kSlots: return dlr::PoolLayout::kSlots;
    case PoolLayout::kRing: return dlr::PoolLayout::kRing;
  }
  return dlr::PoolLayout::kAuto;
}
dlr::Residency map(Residency r) {
  switch (r) {
    case Residency::kNone: return dlr::Residency::kNone;
    case Residency::kLargestLate: return dlr::Residency::kLargestLate;
    case Residency::kGreedy: return dlr::Residency::kGreedy;
  }
  return dlr::Residency::kGreedy;
}

}  // namespace

dlr::Expected<dlr::SessionOptions> to_session_options(const Options& o) {
  dlr::SessionOptions s;
  s.device = map(o.device);
  s.precision = map(o.precision);
  s.batch = o.batch;
  s.width = o.width;
  s.height = o.height;
  s.letterbox = o.letterbox;
  s.thresh = o.thresh;
  s.nms = o.nms;
  s.threads = o.threads;
  s.max_image_width = o.max_image_width;
  s.max_image_height = o.max_image_height;
  s.cuda_device = o.cuda_device;
  s.mode = map(o.mode);
  auto budget = dlr::WeightBudget::parse(o.weight_budget);
  if (!budget.ok()) return dlr::invalid_argument("weight_budget: " + budget.status().message());
  s.weight_budget = *budget;
  s.copy_profile = o.copy_profile;
  s.chunk_bytes = o.chunk_bytes;
  s.weight_pool = map(o.weight_pool);
  s.unit_search = o.unit_search;
  s.residency = map(o.residency);
  s.arena_staging = o.arena_staging;
  s.max_slowdown = o.max_slowdown;
  s.latency_target_ms = o.latency_target_ms;
  s.layout = o.layout;
  s.cuda_graph = o.cuda_graph;
  s.profile_layers = o.profile_layers;
  s.find_algorithms = o.find_algorithms;
  s.workspace_limit = o.workspace_limit;
  s.prefetch_lead_ms = o.prefetch_lead_ms;
  s.alone_ms = o.alone_ms;
  s.cache_kernel_times = o.cache_kernel_times;
  s.calibrate_copies = o.calibrate_copies;
  s.weights_from = o.weights_from_storage ? dlr::WeightsFrom::kStorage : dlr::WeightsFrom::kHost;
  s.host_budget = o.host_budget;
  s.zero_copy = o.zero_copy;
  s.read_depth = o.read_depth;
  s.read_block_bytes = o.read_block_bytes;
  if (!dlr::parse_reader_kind(o.reader, &s.reader))
    return dlr::invalid_argument("reader \"" + o.reader + "\": expected auto, uring or threads");
  s.prepared_path = o.prepared_path;
  return s;
}

}  // namespace dlrun::detail
