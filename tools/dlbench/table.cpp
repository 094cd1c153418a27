#include "tools/dlbench/table.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tools/dlbench/stats.h"

namespace dlr::tools {
namespace {

void print_stream(const nlohmann::json& st) {
  std::printf("  streamed %.1f MiB, resident %.1f MiB, copy floor %.3f ms", mib(st["streamed_bytes"]),
              mib(st["resident_bytes"]), st["copy_floor_ms"].get<double>());
  if (st["predicted_ms"].get<double>() > 0) std::printf(", predicted %.3f ms", st["predicted_ms"].get<double>());
  if (st["lower_bound_ms"].get<double>() > 0) {
    std::printf(", bound %.3f ms", st["lower_bound_ms"].get<double>());
    // The kernel times count int8 expansions on the compute stream (lower_bound.h).
    if (st.value("lower_bound_expanded_steps", 0) > 0) std::printf(" (int8 expansions counted inline: high)");
  }
  if (st.value("lower_bound_calibrated_ms", 0.0) > 0)
    std::printf(" (calibrated %.3f ms)", st["lower_bound_calibrated_ms"].get<double>());
  if (st.contains("profile_kind"))
    std::printf(", %s profile %.1f GB/s at 4 MiB", st["profile_kind"].get<std::string>().c_str(),
                st["profile_gbps_at_4mib"].get<double>());
  if (st.contains("auto_budget_note"))
    std::printf(", auto budget %.1f MiB (%.1f %%)", mib(st["budget_bytes"]),
                100.0 * st["budget_bytes"].get<double>() / st["total_weight_bytes"].get<double>());
  if (st.contains("measured_slowdown"))
    std::printf(", slowdown predicted %+.1f %% measured %+.1f %% (max %.1f %%)",
                100.0 * st["predicted_slowdown"].get<double>(), 100.0 * st["measured_slowdown"].get<double>(),
                100.0 * st["max_slowdown"].get<double>());
  if (st.contains("simulated_ms")) std::printf(", simulated %.3f ms", st["simulated_ms"].get<double>());
}

void print_storage(const nlohmann::json& sg, const nlohmann::json& memory) {
  std::printf("  read %.1f MiB/inference (%.2f GB/s; disk floor %.3f ms at %.2f GB/s), staging %.1f MiB, page cache "
              "+%.1f MiB, RSS peak %.0f MiB",
              mib(sg["read_bytes_per_inference"]), sg.value("read_gbps_at_median", 0.0),
              sg.value("read_floor_ms", 0.0), sg.value("disk_gbps", 0.0), mib(sg["staging_bytes"]),
              mib(sg["page_cache_growth"]), mib(memory["host_rss_peak"]));
  if (sg.value("prefetch_reads", false) && sg.contains("read_ahead_mib"))
    std::printf(", read ahead %.1f MiB/inference (median)", sg["read_ahead_mib"].value("median", 0.0));
  if (sg.contains("reads_end_ms"))
    std::printf(", last read landed at %.2f ms (median)", sg["reads_end_ms"].value("median", 0.0));
  if (sg.value("cache_hits", false) && sg.contains("cached_mib"))
    std::printf(", from the page cache %.1f MiB/inference (median)", sg["cached_mib"].value("median", 0.0));
}

const char* warmup_kind(const nlohmann::json& su) {
  if (!su["warmup_run"].get<bool>()) return " (none)";
  return su.value("warmup_eager", false) ? " (eager)" : " (graph replay)";
}

// The engine's CUDA parts: device, cuDNN handle, convolutions and the algorithm cache.
void print_engine_cuda(const nlohmann::json& en) {
  std::printf("device %.1f, cuDNN handle %.1f, ", en["device_ms"].get<double>(), en["cudnn_handle_ms"].get<double>());
  std::printf("weights %.1f (preparing %.1f on %d threads), buffers %.1f, convolutions %.1f: %d convs, first %.1f, "
              "descriptors %.1f, query %.1f (%d queried), cached workspace %.1f (%d cached, %d with their size), "
              "algorithm cache %s",
              en["weights_ms"].get<double>(), en.value("weights_prepare_ms", 0.0), en.value("weights_threads", 0),
              en["buffers_ms"].get<double>(), en["conv_setup_ms"].get<double>(),
              en["convs"].get<int>(), en["conv_first_ms"].get<double>(), en["conv_descriptors_ms"].get<double>(),
              en["conv_query_ms"].get<double>(), en["convs_queried"].get<int>(),
              en["conv_workspace_ms"].get<double>(), en["convs_cached"].get<int>(),
              en["convs_workspace_cached"].get<int>(),
              en["algo_cache"].get<std::string>().empty() ? "-" : en["algo_cache"].get<std::string>().c_str());
  if (en.value("convs_fused", 0) + en.value("fused_refused", 0) + en.value("fused_slower", 0) > 0)
    std::printf(", cuDNN graphs %.1f (%d convs, %d refused, %d loaded; choice %.1f: %d timed, %d convs faster unfused)",
                en.value("fused_ms", 0.0), en.value("convs_fused", 0), en.value("fused_refused", 0),
                en.value("fused_loaded", 0), en.value("fused_choice_ms", 0.0), en.value("fused_timed", 0),
                en.value("fused_slower", 0));
  if (en.value("convs_x3", 0) > 0)
    std::printf(", 3xTF32 convs %.1f (%d convs)", en.value("x3_setup_ms", 0.0), en.value("convs_x3", 0));
  if (en.value("cublas_handle_ms", 0.0) > 0) std::printf(", cuBLAS handle %.1f", en.value("cublas_handle_ms", 0.0));
}

// The startup line; the CUDA phases only where the JSON has them (startup_json: not on the CPU).
void print_startup(const nlohmann::json& su) {
  const auto& en = su["engine"];
  const bool cuda = su.contains("context_ms");
  std::printf("\n  startup: open %.1f ms + first inference %.1f ms = %.1f ms (process age at the first result "
              "%.0f ms); parse %.1f, target %.1f, compile %.1f, prepared file %.1f, engine %.1f [",
              su["open_ms"].get<double>(), su["first_inference_ms"].get<double>(),
              su["open_to_first_result_ms"].get<double>(), su["process_age_at_first_result_ms"].get<double>(),
              su["parse_ms"].get<double>(), su["target_ms"].get<double>(), su["compile_ms"].get<double>(),
              su["prepared_ms"].get<double>(), su["engine_ms"].get<double>());
  if (cuda)
    print_engine_cuda(en);
  else
    std::printf("weights %.1f on %d threads, buffers %.1f", en["weights_ms"].get<double>(), en.value("weights_threads", 0),
                en["buffers_ms"].get<double>());
  std::printf("], kernel times %.1f, warm-up %.1f%s", su["kernel_times_ms"].get<double>(),
              su["warmup_ms"].get<double>(), warmup_kind(su));
  if (cuda)
    std::printf(", kernels warmed %.1f (%d configurations on %d threads), graph %.1f; CUDA context %.1f + cuDNN "
                "handle %.1f + priming %.1f on the helper thread, waited %.1f",
                su.value("kernels_warm_ms", 0.0), su.value("kernels_warm_convs", 0), su.value("kernels_warm_threads", 0),
                su["graph_ms"].get<double>(), su["context_ms"].get<double>(), su["context_cudnn_ms"].get<double>(),
                su["context_prime_ms"].get<double>(), su["context_wait_ms"].get<double>());
}

}  // namespace

void print_table_header() {
  std::printf("%-28s %10s %10s %10s %10s %9s %9s %9s %9s\n", "config", "median_ms", "min_ms", "p90_ms", "e2e_ms",
              "img/s", "w_MiB", "act_MiB", "ws_MiB");
}

void print_row(const nlohmann::json& j) {
  const double med = j["network"]["median_ms"];
  const int batch = j["batch"];
  std::printf("%-28s %10.3f %10.3f %10.3f %10.3f %9.1f", j["config"].get<std::string>().c_str(), med,
              j["network"]["min_ms"].get<double>(), j["network"]["p90_ms"].get<double>(),
              j["end_to_end"]["median_ms"].get<double>(), med > 0 ? 1000.0 * batch / med : 0.0);
  if (j.contains("memory"))
    std::printf(" %9.1f %9.1f %9.1f", mib(j["memory"]["weights"]), mib(j["memory"]["activations"]),
                mib(j["memory"]["workspace"]));
  if (j.contains("stream")) print_stream(j["stream"]);
  if (j.contains("storage")) print_storage(j["storage"], j["memory"]);
  if (j.contains("startup")) print_startup(j["startup"]);
  if (j.contains("detect")) {
    const auto& d = j["detect"];
    std::printf("\n  detect: %.3f ms a call (preprocess %.3f, network %.3f, postprocess %.3f; %.1f images/s)",
                d["end_to_end"]["median_ms"].get<double>(), d["preprocess_median_ms"].get<double>(),
                d["network_median_ms"].get<double>(), d["postprocess_median_ms"].get<double>(),
                d["images_per_s"].get<double>());
  }
  if (j.contains("stream") && j["stream"].contains("search_predicted_ms")) {
    const auto& st = j["stream"];
    std::printf(", units %s: searched %.3f ms predicted, equal chunks %.3f",
                st["units"].get<std::string>() == "search" ? "searched" : "kept equal",
                st["search_predicted_ms"].get<double>(), st["chunks_predicted_ms"].get<double>());
  }
  std::printf("\n");
  std::fflush(stdout);
}

void print_top_layers(const nlohmann::json& rows, const NetworkDesc& net) {
  for (const auto& r : rows) {
    if (!r.contains("profile")) continue;
    std::vector<std::pair<double, int>> order;
    for (const auto& l : r["profile"]["layers"]) order.emplace_back(l["kernel_ms"].get<double>(), l["layer"].get<int>());
    std::sort(order.rbegin(), order.rend());
    double total = 0;
    for (const auto& o : order) total += o.first;
    std::printf("\n%s: top layers by kernel time (profiled run, %.3f ms of kernels)\n",
                r["config"].get<std::string>().c_str(), total);
    for (size_t i = 0; i < std::min<size_t>(order.size(), 10); ++i) {
      const LayerDesc& l = net.layers[size_t(order[i].second)];
      std::printf("  layer %4d %-9s %-16s %8.3f ms %5.1f%%\n", order[i].second, layer_kind_name(l.kind),
                  l.out.to_string().c_str(), order[i].first, 100.0 * order[i].first / total);
    }
    const auto& t = r["profile"]["totals"];
    if (t["copied_bytes"].get<int64_t>() > 0)
      std::printf("  stream: stall %.3f ms, copy %.1f GB/s while busy, overlap %.0f%%\n", t["stall_ms"].get<double>(),
                  t["copy_gbps"].get<double>(), 100.0 * t["overlap_fraction"].get<double>());
  }
}

}  // namespace dlr::tools
