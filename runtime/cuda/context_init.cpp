#include "runtime/cuda/context_init.h"

#include <chrono>
#include <thread>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_handles.h"
#include "runtime/core/clock.h"
#include "runtime/cuda/context_init_impl.h"

namespace dlr {
namespace {

// The helper thread's body: context, then the cuDNN handle (both on `device`).
void init_context(CudaContextInit::Impl* m) {
  const auto t0 = std::chrono::steady_clock::now();
  m->status = [&]() -> Status {
    DLR_CUDA_CHECK(cudaSetDevice(m->device));
    DLR_CUDA_CHECK(cudaFree(nullptr));
    return Status();
  }();
  m->context_ms = ms_since(t0);
  if (!m->status.ok()) return;
  const auto t1 = std::chrono::steady_clock::now();
  Expected<cuda::CudnnHandle> h = cuda::make_cudnn();
  m->cudnn_ms = ms_since(t1);
  if (!h.ok()) {
    m->status = h.status();
    return;
  }
  m->cudnn = std::move(h).value();
  // Priming: one tiny convolution set up (descriptors, heuristic query, workspace size)
  // makes cuDNN load what its convolution calls need (cuDNN 9 loads its sub-libraries
  // lazily, on first use) here, overlapped, instead of in the engine's first conv.
  // No device memory and no kernel; a failure only costs the overlap.
  const auto t2 = std::chrono::steady_clock::now();
  cuda::ConvConfig cfg;
  cfg.params.filters = 8;
  cfg.params.size = 1;
  cfg.params.activation = Activation::kLeaky;
  cfg.precision = Precision::kFP16;
  const TensorView v = TensorView::packed(nullptr, DType::kF16, Layout::kNHWC, 1, Shape3{8, 8, 8});
  m->primed = cuda::CudnnConv::create(m->cudnn.get(), cfg, v, v).ok();
  m->prime_ms = ms_since(t2);
}

}  // namespace

CudaContextInit::CudaContextInit(int device) : m_impl(std::make_unique<Impl>()) {
  m_impl->device = device;
  m_impl->thread = std::thread(init_context, m_impl.get());
}

CudaContextInit::~CudaContextInit() {
  if (m_impl->thread.joinable()) m_impl->thread.join();
}

Status CudaContextInit::wait() {
  if (m_impl->thread.joinable()) {
    const auto t0 = std::chrono::steady_clock::now();
    m_impl->thread.join();
    m_impl->waited_ms = ms_since(t0);
  }
  return m_impl->status;
}

int CudaContextInit::device() const { return m_impl->device; }
double CudaContextInit::context_ms() const { return m_impl->context_ms; }
double CudaContextInit::cudnn_ms() const { return m_impl->cudnn_ms; }
double CudaContextInit::prime_ms() const { return m_impl->prime_ms; }
double CudaContextInit::waited_ms() const { return m_impl->waited_ms; }

namespace cuda {

CudnnHandle take_cudnn(CudaContextInit* init, int device) {
  if (init == nullptr || init->device() != device || !init->wait().ok()) return CudnnHandle();
  return std::move(init->impl().cudnn);
}

}  // namespace cuda
}  // namespace dlr
