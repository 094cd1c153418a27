// sgemm: row-major single-precision GEMM on top of the configured BLAS.
//
// Contract (cpu_ops.h): C[m x n] = A[m x k] * B[k x n] (+ C when accumulate).
// All matrices are row-major with leading dimensions lda >= k, ldb >= n, ldc >= n.
// m, n or k == 0 is allowed: C is left alone (accumulate) or zeroed (k == 0).
//
// Threading: callers parallelise over independent GEMMs; conv2d calls sgemm from
// inside its OpenMP region, where it runs on the calling thread. A threaded BLAS
// next to OpenMP regions was measured to cost a lot on a 2-core machine: OpenBLAS's
// pool busy-waits after each call and starves the OpenMP threads of the next op.
// So with OpenBLAS the first call sets openblas_set_num_threads(1) (process-wide)
// and sgemm is always single-threaded; with Eigen a call made outside an OpenMP
// region uses Eigen::nbThreads() OpenMP threads, one made inside uses one thread,
// also in a team of one (which Eigen takes for "not in a parallel region": the call
// sets that thread's OpenMP thread count for nested regions to 1 there). So a GEMM's
// blocking, and each output's order of summation, never depend on the caller's team
// size (a conv's last filter slice runs as one task: tests/runtime/slicing_test.cpp).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/log.h"
#include "runtime/core/status.h"

#if defined(DLR_USE_OPENBLAS)
#include <cblas.h>
#elif defined(DLR_USE_EIGEN)
#include <omp.h>

#include <Eigen/Core>
#else
#error "kernels/cpu/gemm.cpp needs DLR_USE_OPENBLAS or DLR_USE_EIGEN"
#endif

namespace dlr::cpu {

namespace {

#if defined(DLR_USE_OPENBLAS) && defined(__x86_64__)
// OpenBLAS builds with DYNAMIC_ARCH pick their kernels from the CPU model at load
// time; a version older than the CPU falls back to generic SSE3 kernels (Debian's
// 0.3.21 runs "Prescott" on model 207 Xeons: ~3x slower GEMM than its AVX-512
// kernels, 2x slower than Eigen with AVX2). Say so once, with the remedy.
void check_openblas_core() {
  const char* name = openblas_get_corename();
  std::string core = name != nullptr ? name : "";
  std::transform(core.begin(), core.end(), core.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  static const char* const kAvx2Cores[] = {"haswell", "skylakex", "cooperlake", "sapphirerapids", "zen",
                                           "excavator"};
  const bool avx2_core = std::any_of(std::begin(kAvx2Cores), std::end(kAvx2Cores),
                                     [&](const char* c) { return core == c; });
  __builtin_cpu_init();
  if (!avx2_core && __builtin_cpu_supports("avx2")) {
    const bool avx512 = __builtin_cpu_supports("avx512f");
    DLR_LOG_WARN("OpenBLAS runs its '{}' kernels on a CPU with {}: convolutions are several times slower than they "
                 "could be. Set OPENBLAS_CORETYPE={} in the environment before starting, or build with "
                 "-DDLR_BLAS=EIGEN",
                 core, avx512 ? "AVX-512" : "AVX2", avx512 ? "SkylakeX" : "Haswell");
  }
}
#elif defined(DLR_USE_OPENBLAS)
// The check above is x86-64's (its core names, __builtin_cpu_supports, which GCC has
// on x86 only); elsewhere (aarch64) OpenBLAS's own choice of kernels stands.
void check_openblas_core() {}
#endif

void zero_rows(int m, int n, float* c, int ldc) {
  for (int i = 0; i < m; ++i) std::memset(c + int64_t(i) * ldc, 0, sizeof(float) * size_t(n));
}

}  // namespace

void sgemm(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc, bool accumulate) {
  DLR_ASSERT(m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0) return;
  DLR_ASSERT(ldc >= n && c != nullptr);
  if (k == 0) {
    if (!accumulate) zero_rows(m, n, c, ldc);
    return;
  }
  DLR_ASSERT(lda >= k && ldb >= n && a != nullptr && b != nullptr);
#if defined(DLR_USE_OPENBLAS)
  static const bool single_threaded = [] {
    openblas_set_num_threads(1);
    check_openblas_core();
    return true;
  }();
  (void)single_threaded;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c,
              ldc);
#else
  // In a parallel region of one thread Eigen would start its own threads (and block
  // the product for them): this task's nested regions get one thread instead.
  if (omp_get_level() > 0 && omp_get_max_threads() > 1) omp_set_num_threads(1);
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ConstMap = Eigen::Map<const RowMajor, Eigen::Unaligned, Eigen::OuterStride<>>;
  using Map = Eigen::Map<RowMajor, Eigen::Unaligned, Eigen::OuterStride<>>;
  ConstMap ma(a, m, k, Eigen::OuterStride<>(lda));
  ConstMap mb(b, k, n, Eigen::OuterStride<>(ldb));
  Map mc(c, m, n, Eigen::OuterStride<>(ldc));
  if (accumulate) {
    mc.noalias() += ma * mb;
  } else {
    mc.noalias() = ma * mb;
  }
#endif
}

}  // namespace dlr::cpu
