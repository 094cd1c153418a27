// Scratch: a CUPTI injection library (CUDA_INJECTION64_PATH=libcupti_trace.so) that writes
// every kernel and memcpy of the process, with the GPU's own timestamps (ns), to
// $CUPTI_OUT/trace_<pid>.tsv:
//   K start end stream correlation graph_node name
//   M start end stream correlation graph_node bytes copy_kind
// The records of a CUDA graph's launch share the launch's correlation id.
#include <cupti.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unistd.h>

namespace {
FILE* g_out = nullptr;
std::mutex g_mu;

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 16 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (!g_out) continue;
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
      std::fprintf(g_out, "K %llu %llu %u %u %llu %s\n", (unsigned long long)k->start, (unsigned long long)k->end,
                   k->streamId, k->correlationId, (unsigned long long)k->graphNodeId, k->name ? k->name : "?");
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(rec);
      std::fprintf(g_out, "M %llu %llu %u %u %llu %llu %u\n", (unsigned long long)m->start, (unsigned long long)m->end,
                   m->streamId, m->correlationId, (unsigned long long)m->graphNodeId, (unsigned long long)m->bytes,
                   unsigned(m->copyKind));
    }
  }
  free(buffer);
}

void flush_at_exit() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_out) std::fclose(g_out);
  g_out = nullptr;
}
}  // namespace

extern "C" int InitializeInjection() {
  const char* dir = std::getenv("CUPTI_OUT");
  std::string path = std::string(dir ? dir : "/tmp") + "/trace_" + std::to_string(getpid()) + ".tsv";
  g_out = std::fopen(path.c_str(), "w");
  if (!g_out) return 0;
  if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS) return 0;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  std::atexit(flush_at_exit);
  return 1;
}
