// cuBLAS loaded on first use (kernels/cuda/cublas_loader.h). Loading needs no GPU, so
// these run wherever the CUDA backend is built: the library opens with every function
// the kernels call, a missing library or function is one line naming it, and a status
// reads as cuBLAS names it.
#include "kernels/cuda/cublas_loader.h"

#include <gtest/gtest.h>

#include <cudnn.h>

#include <string>

namespace dlr::cuda {
namespace {

TEST(CublasLoader, OpensWithEveryFunction) {
  EXPECT_EQ(cublas_library_name(), "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
  const Expected<const CublasApi*> api = cublas();
  ASSERT_TRUE(api.ok()) << api.status().message();
  const CublasApi& a = **api;
  EXPECT_NE(a.create, nullptr);
  EXPECT_NE(a.destroy, nullptr);
  EXPECT_NE(a.set_stream, nullptr);
  EXPECT_NE(a.set_workspace, nullptr);
  EXPECT_NE(a.gemm_ex, nullptr);
  EXPECT_NE(a.gemm_strided_batched_ex, nullptr);
  EXPECT_EQ(std::string(a.status_name(CUBLAS_STATUS_NOT_SUPPORTED)), "CUBLAS_STATUS_NOT_SUPPORTED");
  const Expected<const CublasApi*> again = cublas();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *api);  // loaded once
}

TEST(CublasLoader, StatusTextNamesTheStatus) {
  ASSERT_TRUE(cublas().ok());
  const std::string text = cublas_status_text(CUBLAS_STATUS_ALLOC_FAILED);
  EXPECT_EQ(text.rfind("CUBLAS_STATUS_ALLOC_FAILED (", 0), 0u) << text;
  EXPECT_EQ(text.back(), ')') << text;
}

TEST(CublasLoader, MissingLibraryIsOneLineNamingIt) {
  const Expected<CublasApi> api = load_cublas("libdlrun-no-such-cublas.so.1");
  ASSERT_FALSE(api.ok());
  const std::string m = api.status().message();
  EXPECT_NE(m.find("cuBLAS (libdlrun-no-such-cublas.so.1) could not be loaded: "), std::string::npos) << m;
  EXPECT_NE(m.find("LD_LIBRARY_PATH"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(CublasLoader, LibraryWithoutTheFunctionsIsRefused) {
  // cuDNN's library loads but has none of cuBLAS's functions.
  const Expected<CublasApi> api = load_cublas("libcudnn.so." + std::to_string(CUDNN_MAJOR));
  ASSERT_FALSE(api.ok());
  const std::string m = api.status().message();
  EXPECT_NE(m.find("has no function cublasCreate_v2"), std::string::npos) << m;
}

}  // namespace
}  // namespace dlr::cuda
