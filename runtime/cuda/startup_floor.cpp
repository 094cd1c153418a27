// measure_startup_floor (cuda_engine.h): the smallest CUDA open this runtime can make.
#include <chrono>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_handles.h"
#include "runtime/core/clock.h"
#include "runtime/cuda/cuda_engine.h"

namespace dlr {

Expected<StartupFloor> measure_startup_floor(int device) {
  StartupFloor f;
  const auto t_all = Clock::now();
  auto t0 = Clock::now();
  DLR_CUDA_CHECK(cudaSetDevice(device));
  DLR_CUDA_CHECK(cudaFree(nullptr));
  f.context_ms = ms_since(t0);
  t0 = Clock::now();
  DLR_ASSIGN_OR_RETURN(cuda::CudnnHandle cudnn, cuda::make_cudnn());
  f.cudnn_handle_ms = ms_since(t0);
  DLR_ASSIGN_OR_RETURN(cuda::Stream stream, cuda::make_stream());

  // One 1x1 convolution, 8 -> 8 channels on 8x8, fp16 NHWC (the layout and precision
  // of the yolov4 fp16 runs), with its buffers.
  const int c = 8, hw = 8;
  const size_t elems = size_t(c) * hw * hw;
  t0 = Clock::now();
  DLR_ASSIGN_OR_RETURN(cuda::DeviceBuffer in, cuda::DeviceBuffer::alloc(elems * 2));
  DLR_ASSIGN_OR_RETURN(cuda::DeviceBuffer out, cuda::DeviceBuffer::alloc(elems * 2));
  DLR_ASSIGN_OR_RETURN(cuda::DeviceBuffer weights, cuda::DeviceBuffer::alloc(size_t(c) * c * 2));
  DLR_ASSIGN_OR_RETURN(cuda::DeviceBuffer bias, cuda::DeviceBuffer::alloc(size_t(c) * 4));
  DLR_CUDA_CHECK(cudaMemset(in.data(), 0, in.bytes()));
  DLR_CUDA_CHECK(cudaMemset(weights.data(), 0, weights.bytes()));
  DLR_CUDA_CHECK(cudaMemset(bias.data(), 0, bias.bytes()));
  f.buffers_ms = ms_since(t0);
  const Shape3 shape{c, hw, hw};
  const TensorView vin = TensorView::packed(in.data(), DType::kF16, Layout::kNHWC, 1, shape);
  const TensorView vout = TensorView::packed(out.data(), DType::kF16, Layout::kNHWC, 1, shape);
  cuda::ConvConfig cfg;
  cfg.params.filters = c;
  cfg.params.size = 1;
  cfg.params.stride_x = cfg.params.stride_y = 1;
  cfg.params.padding = 0;
  cfg.params.activation = Activation::kLeaky;
  cfg.precision = Precision::kFP16;
  t0 = Clock::now();
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudnnConv> conv, cuda::CudnnConv::create(cudnn.get(), cfg, vin, vout));
  f.conv_create_ms = ms_since(t0);
  f.conv_query_ms = conv->create_info().query_ms;
  f.conv_algo = conv->algo_name();
  DLR_ASSIGN_OR_RETURN(cuda::DeviceBuffer ws, cuda::DeviceBuffer::alloc(conv->workspace_bytes()));
  for (double* ms : {&f.first_run_ms, &f.second_run_ms}) {
    t0 = Clock::now();
    DLR_RETURN_IF_ERROR(conv->run(cudnn.get(), vin, weights.data(), static_cast<const float*>(bias.data()), vout,
                                  ws.data(), ws.bytes(), stream.get()));
    DLR_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    *ms = ms_since(t0);
  }
  f.total_ms = ms_since(t_all);
  return f;
}

}  // namespace dlr
