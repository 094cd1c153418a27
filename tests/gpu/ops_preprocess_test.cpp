// dlr::cuda::preprocess against the CPU reference (cpu::image_to_planar, then
// cpu::resize_darknet or cpu::letterbox_darknet): stretch and letterbox for
// 768x576 -> 608x608, 500x375 -> 416x416, same size 416x416, upscaling
// 100x80 -> 416x416, portrait 375x500 -> 416x416, tiny/degenerate sizes
// (1-pixel rows/columns in and out); BGR and RGB, 4-channel and gray pixels,
// padded rows. Output into image n_index of a batch-2 view in four geometries:
// f32 output (NCHW packed, NHWC slice) must be BIT-IDENTICAL to the CPU
// reference (memcmp, first differing element reported); f16 output (NCHW slice,
// NHWC packed) rel L2 err <= 2e-3. The other image of the batch and every byte
// outside the view must stay untouched (0xFF poison).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

struct PreCase {
  int iw, ih;       // source image
  int ow, oh;       // network input
  bool letterbox;
  bool bgr = true;
  int channels = 3;
  int row_pad = 0;  // extra bytes per row
};

std::string case_str(const PreCase& c) {
  return std::string(c.letterbox ? "letterbox " : "stretch ") + std::to_string(c.iw) + "x" + std::to_string(c.ih) +
         " -> " + std::to_string(c.ow) + "x" + std::to_string(c.oh) + (c.bgr ? " BGR" : " RGB") + " ch " +
         std::to_string(c.channels) + (c.row_pad ? " row_pad " + std::to_string(c.row_pad) : "");
}

class PreprocessTest : public GpuTest {
 protected:
  void run_case(const PreCase& pc, uint32_t seed) {
    const int64_t stride = int64_t(pc.iw) * pc.channels + pc.row_pad;
    std::vector<uint8_t> img(size_t(stride) * size_t(pc.ih));
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : img) b = uint8_t(byte(rng));

    // CPU reference: planar RGB/255, then resize or letterbox.
    cpu::ImageU8 im;
    im.data = img.data();
    im.width = pc.iw;
    im.height = pc.ih;
    im.channels = pc.channels;
    im.row_stride = stride;
    im.bgr = pc.bgr;
    std::vector<float> planar(size_t(3) * pc.iw * pc.ih);
    cpu::image_to_planar(im, planar.data());
    HostTensor want(1, {3, pc.oh, pc.ow});
    std::vector<float> tmp(size_t(3) * pc.ih * pc.ow + size_t(3) * pc.oh * pc.ow);
    if (pc.letterbox) {
      cpu::letterbox_darknet(planar.data(), 3, pc.ih, pc.iw, want.data.data(), pc.oh, pc.ow, tmp.data());
    } else {
      cpu::resize_darknet(planar.data(), 3, pc.ih, pc.iw, want.data.data(), pc.oh, pc.ow, tmp.data());
    }

    uint8_t* dimg = nullptr;
    ASSERT_EQ(cudaSuccess, cudaMalloc(reinterpret_cast<void**>(&dimg), img.size())) << case_str(pc);
    ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(dimg, img.data(), img.size(), cudaMemcpyHostToDevice, stream()));
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream()));
    cuda::DeviceImage dev;
    dev.data = dimg;
    dev.width = pc.iw;
    dev.height = pc.ih;
    dev.row_stride = stride;
    dev.bgr = pc.bgr;
    dev.channels = pc.channels;

    const ViewSpec out_specs[] = {
        {DType::kF32, Layout::kNCHW, 0, 0, 0},
        {DType::kF32, Layout::kNHWC, 1, 2, 5},
        {DType::kF16, Layout::kNCHW, 2, 1, 3},
        {DType::kF16, Layout::kNHWC, 0, 0, 0},
    };
    for (int si = 0; si < 4; ++si) {
      const ViewSpec& os = out_specs[si];
      const int n_index = si % 2;  // image 1 of 2, then image 0 of 2
      const std::string what = "preprocess " + case_str(pc) + ", out " + describe(os) + " image " +
                               std::to_string(n_index) + " of 2";
      DeviceTensor dout;
      ASSERT_EQ(cudaSuccess, dout.create(2, {3, pc.oh, pc.ow}, os, stream())) << what;
      const Status st = cuda::preprocess(dev, pc.letterbox, dout.view(), n_index, stream());
      EXPECT_TRUE(st.ok()) << what << ": " << st.to_string();
      ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream())) << what;
      HostTensor both;
      int64_t outside = 0, first_outside = -1;
      ASSERT_EQ(cudaSuccess, dout.download(&both, &outside, &first_outside, stream())) << what;
      const size_t per = size_t(want.shape.count());
      HostTensor got(1, want.shape);
      std::copy(both.data.begin() + int64_t(n_index) * int64_t(per),
                both.data.begin() + int64_t(n_index + 1) * int64_t(per), got.data.begin());
      if (os.dtype == DType::kF32) {
        EXPECT_TRUE(bit_equal(got, want, what));
      } else {
        EXPECT_TRUE(near_rel(got, want, 2e-3, what));
      }
      int64_t other_written = 0;
      const size_t other = size_t(1 - n_index) * per;
      for (size_t i = 0; i < per; ++i) other_written += std::isnan(both.data[other + i]) ? 0 : 1;
      EXPECT_EQ(0, other_written) << what << ": elements of the other image were written";
      EXPECT_TRUE(untouched_outside(outside, first_outside, what));
      if (HasFatalFailure()) break;
    }
    ASSERT_EQ(cudaSuccess, cudaFree(dimg));
  }
};

TEST_F(PreprocessTest, StretchAndLetterbox) {
  std::vector<PreCase> cases;
  for (bool lb : {false, true}) {
    cases.push_back({768, 576, 608, 608, lb});           // dog.jpg into yolov4
    cases.push_back({500, 375, 416, 416, lb});
    cases.push_back({416, 416, 416, 416, lb});           // same size: identity
    cases.push_back({100, 80, 416, 416, lb});            // upscaling
    cases.push_back({375, 500, 416, 416, lb});           // portrait: letterbox pads left/right
    cases.push_back({640, 480, 512, 320, lb});           // non-square network input
    cases.push_back({500, 375, 416, 416, lb, false});    // RGB order
    cases.push_back({77, 51, 32, 64, lb, true, 4, 3});   // BGRA, padded rows
    cases.push_back({60, 45, 96, 64, lb, true, 1, 5});   // gray, padded rows
  }
  // Degenerate sizes: single row/column in or out (Darknet's last row/column rules).
  cases.push_back({7, 5, 3, 4, false});
  cases.push_back({1, 1, 5, 4, false});
  cases.push_back({9, 1, 4, 3, false});
  cases.push_back({1, 6, 3, 5, false});
  cases.push_back({5, 7, 1, 1, false});
  cases.push_back({5, 7, 4, 1, false});
  cases.push_back({16, 9, 16, 16, true});  // letterbox to the image size: no resize, 0.5 bands
  uint32_t seed = 6000;
  for (const PreCase& pc : cases) {
    run_case(pc, seed++);
    if (HasFatalFailure()) return;
  }
}

TEST_F(PreprocessTest, RejectsBadArguments) {
  DeviceTensor dout;
  ASSERT_EQ(cudaSuccess, dout.create(1, {3, 8, 8}, packed_spec(DType::kF32, Layout::kNCHW), stream()));
  cuda::DeviceImage dev;
  dev.data = reinterpret_cast<const uint8_t*>(dout.view().data);  // never read: arguments are rejected first
  dev.width = 4;
  dev.height = 4;
  EXPECT_FALSE(cuda::preprocess(dev, false, dout.view(), 1, stream()).ok()) << "n_index outside the batch";
  dev.row_stride = 5;  // < 4*3
  EXPECT_FALSE(cuda::preprocess(dev, false, dout.view(), 0, stream()).ok()) << "row_stride too small";
  dev.row_stride = 0;
  dev.channels = 2;
  EXPECT_FALSE(cuda::preprocess(dev, false, dout.view(), 0, stream()).ok()) << "2 channels";
}

}  // namespace
}  // namespace dlr::test
