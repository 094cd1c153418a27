#include "runtime/prepare.h"

#include <chrono>
#include <memory>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "runtime/compile/compile.h"
#include "runtime/cpu/cpu_threads.h"
#include "runtime/storage/prepared_file.h"
#include "runtime/weight_source.h"

namespace dlr {

Expected<PrepareReport> prepare_weights(const std::string& cfg_path, const std::string& weights_path,
                                        const SessionOptions& options, const std::string& out) {
  const auto t0 = std::chrono::steady_clock::now();
  DLR_RETURN_IF_ERROR(validate_options(options));
  CfgOptions cfg_opt;
  cfg_opt.width = options.width;
  cfg_opt.height = options.height;
  DLR_ASSIGN_OR_RETURN(NetworkDesc net, parse_network_cfg(cfg_path, cfg_opt));
  DLR_ASSIGN_OR_RETURN(WeightsFile wf, WeightsFile::open(weights_path, net));
  DLR_ASSIGN_OR_RETURN(ExecutionPlan plan, plan_for_prepare(net, options));
  DLR_ASSIGN_OR_RETURN(PreparedIdentity id, prepared_identity(cfg_path, weights_path, plan));
  std::unique_ptr<WeightSource> source = weights_file_source(net, wf);
  const int threads = options.threads > 0 ? options.threads : available_cpus();
  DLR_RETURN_IF_ERROR(write_prepared_file(out, plan, *source, id, threads));
  DLR_ASSIGN_OR_RETURN(PreparedFile f, PreparedFile::open(out, plan, nullptr));
  PrepareReport r;
  r.path = out;
  r.file_bytes = f.file_bytes();
  r.blobs = int(f.blobs().size());
  r.dtype = f.identity().dtype;
  r.layout = f.identity().layout;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dlr
