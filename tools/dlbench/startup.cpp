#include "tools/dlbench/startup.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/backend.h"
#include "tools/common/process_exit.h"
#include "tools/common/tool_support.h"
#include "tools/dlbench/stats.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr::tools {
namespace {

// The engine's parts: on the CPU only those it has (weights, buffers, warm-up).
nlohmann::json engine_open_json(const EngineOpenTiming& e, bool cuda) {
  nlohmann::json j = {{"weights_ms", e.weights_ms},
                      {"weights_prepare_ms", e.weights_prepare_ms},
                      {"weights_threads", e.weights_threads},
                      {"buffers_ms", e.buffers_ms}};
  if (!cuda) return j;
  j.update({{"device_ms", e.device_ms},
            {"cudnn_handle_ms", e.cudnn_handle_ms},
            {"conv_setup_ms", e.conv_setup_ms},
            {"conv_descriptors_ms", e.conv_descriptors_ms},
            {"conv_query_ms", e.conv_query_ms},
            {"conv_workspace_ms", e.conv_workspace_ms},
            {"conv_first_ms", e.conv_first_ms},
            {"algo_cache_ms", e.algo_cache_ms},
            {"convs", e.convs},
            {"convs_cached", e.convs_cached},
            {"convs_workspace_cached", e.convs_workspace_cached},
            {"convs_queried", e.convs_queried},
            {"fused_ms", e.fused_ms},
            {"convs_fused", e.convs_fused},
            {"fused_refused", e.fused_refused},
            {"fused_loaded", e.fused_loaded},
            {"fused_choice_ms", e.fused_choice_ms},
            {"fused_timed", e.fused_timed},
            {"fused_slower", e.fused_slower},
            {"x3_setup_ms", e.x3_setup_ms},
            {"convs_x3", e.convs_x3},
            {"cublas_handle_ms", e.cublas_handle_ms},
            {"algo_cache", e.algo_cache},
            {"algo_cache_path", e.algo_cache_path}});
  return j;
}

#ifdef DLR_HAVE_CUDA
nlohmann::json startup_floor_json(const StartupFloor& f, double age_before, double age_after) {
  return {{"gpu", cuda_device_description(0)},
          {"startup_floor",
           {{"gpu", cuda_device_description(0)},
            {"total_ms", f.total_ms},
            {"context_ms", f.context_ms},
            {"cudnn_handle_ms", f.cudnn_handle_ms},
            {"buffers_ms", f.buffers_ms},
            {"conv_create_ms", f.conv_create_ms},
            {"conv_query_ms", f.conv_query_ms},
            {"conv_algo", f.conv_algo},
            {"first_run_ms", f.first_run_ms},
            {"second_run_ms", f.second_run_ms},
            {"process_age_before_ms", age_before},
            {"process_age_after_ms", age_after}}}};
}
#endif

}  // namespace

double process_age_ms() {
  std::ifstream f("/proc/self/stat");
  std::string stat;
  if (!std::getline(f, stat)) return -1;
  const size_t paren = stat.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) {  // field 22: starttime
    if (!(rest >> field)) return -1;
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  timespec now{};
  if (ticks <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1;
  const double start_ms = 1000.0 * std::strtod(field.c_str(), nullptr) / double(ticks);
  return 1000.0 * double(now.tv_sec) + double(now.tv_nsec) / 1e6 - start_ms;
}

nlohmann::json startup_json(const OpenTiming& t, double first_inference_ms, bool cuda) {
  nlohmann::json j = {{"open_ms", t.open_ms},
                      {"parse_ms", t.parse_ms},
                      {"target_ms", t.target_ms},
                      {"compile_ms", t.compile_ms},
                      {"prepared_ms", t.prepared_ms},
                      {"engine_ms", t.engine_ms},
                      {"engine", engine_open_json(t.engine, cuda)},
                      {"kernel_times_ms", t.kernel_times_ms},
                      {"compiled_beside_engine", t.compiled_beside_engine},
                      {"warmup_ms", t.engine.warmup_ms},
                      {"warmup_run", t.engine.warmup_run},
                      {"warmup_eager", t.engine.warmup_eager},
                      {"finalize_ms", t.finalize_ms},
                      {"first_inference_ms", first_inference_ms},
                      {"open_to_first_result_ms", t.open_ms + first_inference_ms}};
  if (cuda)
    j.update({{"context_ms", t.context_ms},
              {"context_cudnn_ms", t.context_cudnn_ms},
              {"context_prime_ms", t.context_prime_ms},
              {"context_wait_ms", t.context_wait_ms},
              {"kernels_warm_ms", t.engine.kernels_warm_ms},
              {"kernels_warm_convs", t.engine.kernels_warm_convs},
              {"kernels_warm_threads", t.engine.kernels_warm_threads},
              {"graph_ms", t.engine.graph_ms}});
  return j;
}

int startup_floor(const Args& a) {
#ifdef DLR_HAVE_CUDA
  const double age_before = process_age_ms();
  auto f = measure_startup_floor(0);
  if (!f.ok()) return fail("dlbench", f.status());
  const double age_after = process_age_ms();
  std::printf("startup floor (%s): %.1f ms = CUDA context %.1f + cuDNN handle %.1f + buffers %.1f + one 1x1 fp16 "
              "convolution: create %.1f (query %.1f, %s), first run %.1f, second run %.2f; process age %.0f ms "
              "before, %.0f ms after\n",
              cuda_device_description(0).c_str(), f->total_ms, f->context_ms, f->cudnn_handle_ms, f->buffers_ms,
              f->conv_create_ms, f->conv_query_ms, f->conv_algo.c_str(), f->first_run_ms, f->second_run_ms, age_before,
              age_after);
  if (!a.json.empty() && !write_json(a.json, startup_floor_json(*f, age_before, age_after)))
    return fail("dlbench", a.json + ": cannot write");
  if (exit_without_teardown()) end_without_teardown();  // ends as dlrun does (process_exit.h)
  return kExitOk;
#else
  (void)a;
  return fail("dlbench", "--startup-floor measures a CUDA open: this build has no CUDA backend");
#endif
}

int hold_gpu() {
  int64_t free_bytes = 0, total_bytes = 0;
  const Status st = device_memory_info(DeviceKind::kCUDA, 0, &free_bytes, &total_bytes);
  if (!st.ok()) return fail("dlbench", "--hold-gpu: " + st.message());
  std::printf("held\n");
  std::fflush(stdout);
  char buf[256];
  while (std::fread(buf, 1, sizeof buf, stdin) > 0) {
  }
  return kExitOk;
}

}  // namespace dlr::tools
