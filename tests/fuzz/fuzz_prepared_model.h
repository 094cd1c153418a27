// The fixed model of the prepared-file harness (fuzz_prepared.cpp) and of its seed
// generator (make_prepared_seeds.cpp): a 16x16 cfg of two convs (with and without
// batch norm: 4 KiB header + two 4 KiB-aligned blobs = 12 KiB files), its CPU fp32 (NCHW) and CUDA fp16 (NHWC, planned without a GPU)
// plans, and a fixed identity the seeds are written with.
#pragma once

#include <cstdint>
#include <string>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/options.h"
#include "runtime/storage/prepared_file.h"
#include "tests/fuzz/fuzz_check.h"

namespace dlr::fuzz {

inline const char* prepared_cfg() {
  return "[net]\nwidth=16\nheight=16\nchannels=3\n\n"
         "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n"
         "[convolutional]\nfilters=6\nsize=1\nstride=1\npad=0\nactivation=linear\n";
}

inline SessionOptions prepared_options(bool fp16_cuda) {
  SessionOptions o;
  if (fp16_cuda) {
    o.device = DeviceKind::kCUDA;
    o.precision = Precision::kFP16;
  }
  return o;
}

inline NetworkDesc prepared_net() {
  Expected<NetworkDesc> net = parse_network_cfg_text(prepared_cfg(), "fuzz_prepared.cfg");
  require(net.ok(), "fixed cfg", net.ok() ? "" : net.status().message());
  return std::move(*net);
}

inline ExecutionPlan prepared_plan(const NetworkDesc& net, bool fp16_cuda) {
  Expected<ExecutionPlan> p = plan_for_prepare(net, prepared_options(fp16_cuda));
  require(p.ok(), "fixed plan", p.ok() ? "" : p.status().message());
  return std::move(*p);
}

// The identity the seeds carry (no real cfg or .weights file behind it).
inline PreparedIdentity prepared_identity_for(const ExecutionPlan& plan) {
  PreparedIdentity id;
  id.cfg_hash = 0x0123456789abcdefull;
  id.weights_hash = 0xfedcba9876543210ull;
  id.weights_size = 1000;
  id.weights_mtime_ns = 1700000000000000000ll;
  id.dtype = plan.weights.at(0).dtype;
  id.layout = plan.options.layout;
  for (const WeightBlob& w : plan.weights) id.blob_bytes.push_back(w.bytes);
  return id;
}

}  // namespace dlr::fuzz
