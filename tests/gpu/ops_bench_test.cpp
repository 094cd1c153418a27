// Throughput of the custom kernels on yolov4-sized tensors (not a correctness
// test). Skipped unless DLR_GPU_BENCH=1. Prints time per call (mean of 50 after
// 5 warm-ups, CUDA events on one stream) and effective bandwidth counting the
// bytes each op must read and write once.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "kernels/cuda/cuda_ops.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

class GpuBench : public GpuTest {
 protected:
  void SetUp() override {
    const char* env = std::getenv("DLR_GPU_BENCH");
    if (env == nullptr || std::string(env) != "1") GTEST_SKIP() << "set DLR_GPU_BENCH=1 to run the benchmarks";
    GpuTest::SetUp();
  }

  void time(const std::string& name, double bytes, const std::function<Status()>& call) {
    cudaEvent_t a = nullptr, b = nullptr;
    ASSERT_EQ(cudaSuccess, cudaEventCreate(&a));
    ASSERT_EQ(cudaSuccess, cudaEventCreate(&b));
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(call().ok()) << name;
    ASSERT_EQ(cudaSuccess, cudaEventRecord(a, stream()));
    constexpr int kIters = 50;
    for (int i = 0; i < kIters; ++i) ASSERT_TRUE(call().ok()) << name;
    ASSERT_EQ(cudaSuccess, cudaEventRecord(b, stream()));
    ASSERT_EQ(cudaSuccess, cudaEventSynchronize(b));
    float ms = 0;
    ASSERT_EQ(cudaSuccess, cudaEventElapsedTime(&ms, a, b));
    const double us = 1000.0 * ms / kIters;
    std::printf("[bench] %-58s %9.1f us %8.1f GB/s\n", name.c_str(), us, bytes / (us * 1e3));
    ASSERT_EQ(cudaSuccess, cudaEventDestroy(a));
    ASSERT_EQ(cudaSuccess, cudaEventDestroy(b));
  }
};

TEST_F(GpuBench, Throughput) {
  const Shape3 big{64, 608, 608};  // yolov4 layer 1 output
  for (DType dt : {DType::kF32, DType::kF16}) {
    for (Layout lay : {Layout::kNCHW, Layout::kNHWC}) {
      const ViewSpec spec = packed_spec(dt, lay);
      const std::string tag = describe(spec) + " " + shape_str(1, big);
      const double esize = double(dtype_size(dt));
      DeviceTensor x, y;
      ASSERT_EQ(cudaSuccess, x.create(1, big, spec, stream()));
      ASSERT_EQ(cudaSuccess, y.create(1, big, spec, stream()));
      ASSERT_EQ(cudaSuccess, cudaMemsetAsync(x.view().data, 0, size_t(big.count()) * dtype_size(dt), stream()));
      float* bias = nullptr;
      ASSERT_EQ(cudaSuccess, cudaMalloc(reinterpret_cast<void**>(&bias), sizeof(float) * size_t(big.c)));
      ASSERT_EQ(cudaSuccess, cudaMemsetAsync(bias, 0, sizeof(float) * size_t(big.c), stream()));
      const double rw = 2.0 * double(big.count()) * esize;
      time("bias_activation leaky " + tag, rw,
           [&] { return cuda::bias_activation(x.view(), bias, Activation::kLeaky, stream()); });
      time("bias_activation mish " + tag, rw,
           [&] { return cuda::bias_activation(x.view(), bias, Activation::kMish, stream()); });
      time("copy_channels same " + tag, rw, [&] { return cuda::copy_channels(x.view(), y.view(), stream()); });
      time("shortcut 1 from " + tag, 1.5 * rw, [&] {
        const TensorView f = y.view();
        return cuda::shortcut(x.view(), &f, 1, Activation::kLinear, x.view(), stream());
      });
      time("maxpool 5/1 (SPP) " + tag, rw,
           [&] { return cuda::maxpool(MaxPoolParams{5, 1, 1, 4}, x.view(), y.view(), stream()); });
      ASSERT_EQ(cudaSuccess, cudaFree(bias));
    }
  }
  {  // layout / dtype conversion
    DeviceTensor x, y;
    ASSERT_EQ(cudaSuccess, x.create(1, big, packed_spec(DType::kF32, Layout::kNCHW), stream()));
    ASSERT_EQ(cudaSuccess, y.create(1, big, packed_spec(DType::kF16, Layout::kNHWC), stream()));
    time("copy_channels f32 NCHW -> f16 NHWC " + shape_str(1, big), 6.0 * double(big.count()),
         [&] { return cuda::copy_channels(x.view(), y.view(), stream()); });
  }
  {  // preprocess dog.jpg-sized image into yolov4's input
    uint8_t* img = nullptr;
    ASSERT_EQ(cudaSuccess, cudaMalloc(reinterpret_cast<void**>(&img), size_t(768) * 576 * 3));
    ASSERT_EQ(cudaSuccess, cudaMemsetAsync(img, 7, size_t(768) * 576 * 3, stream()));
    cuda::DeviceImage dev;
    dev.data = img;
    dev.width = 768;
    dev.height = 576;
    for (DType dt : {DType::kF32, DType::kF16}) {
      DeviceTensor out;
      const ViewSpec spec = packed_spec(dt, Layout::kNCHW);
      ASSERT_EQ(cudaSuccess, out.create(1, {3, 608, 608}, spec, stream()));
      const double bytes = 768.0 * 576 * 3 + 3.0 * 608 * 608 * double(dtype_size(dt));
      time("preprocess stretch 768x576 -> 608x608 " + describe(spec), bytes,
           [&] { return cuda::preprocess(dev, false, out.view(), 0, stream()); });
      time("preprocess letterbox 768x576 -> 608x608 " + describe(spec), bytes,
           [&] { return cuda::preprocess(dev, true, out.view(), 0, stream()); });
    }
    ASSERT_EQ(cudaSuccess, cudaFree(img));
  }
  {  // yolo head (yolov4 76x76, 3 anchors x 85)
    DeviceTensor x, y;
    const Shape3 s{255, 76, 76};
    ASSERT_EQ(cudaSuccess, x.create(1, s, packed_spec(DType::kF16, Layout::kNHWC), stream()));
    ASSERT_EQ(cudaSuccess, y.create(1, s, packed_spec(DType::kF32, Layout::kNCHW), stream()));
    YoloParams p;
    p.classes = 80;
    p.mask = {0, 1, 2};
    p.scale_x_y = 1.2f;
    time("yolo f16 NHWC -> f32 NCHW " + shape_str(1, s), 6.0 * double(s.count()),
         [&] { return cuda::yolo(p, x.view(), y.view(), stream()); });
  }
}

}  // namespace
}  // namespace dlr::test
