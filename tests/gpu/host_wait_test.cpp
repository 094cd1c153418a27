// launch_host_wait (kernels/cuda/host_wait.h) inside a captured graph, as the storage
// graph uses it: the replay holds at the wait until the host advances the word; an
// event recorded after the wait as an external node is pending until then (the reader
// of weights from storage waits on such events), and complete after; a second replay
// waits for a higher target; a wait that gives up reports its code and lets the replay end.
#include "kernels/cuda/host_wait.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "kernels/cuda/cuda_handles.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr {
namespace {

struct Words {
  cuda::PinnedBuffer buf;
  int32_t* host = nullptr;  // [0] word, [1] target, [2] timed out
  int32_t* dev = nullptr;
};

Words make_words() {
  Words w;
  Expected<cuda::PinnedBuffer> b = cuda::PinnedBuffer::alloc(3 * sizeof(int32_t), cudaHostAllocMapped);
  EXPECT_TRUE(b.ok());
  if (!b.ok()) return w;
  w.buf = std::move(*b);
  w.host = static_cast<int32_t*>(w.buf.data());
  std::memset(w.host, 0, 3 * sizeof(int32_t));
  void* d = nullptr;
  EXPECT_EQ(cudaHostGetDevicePointer(&d, w.buf.data(), 0), cudaSuccess);
  w.dev = static_cast<int32_t*>(d);
  return w;
}

// A graph: wait on the word, copy 4 bytes device -> device, record `ev` (external).
cuda::GraphExec capture(cudaStream_t s, const Words& w, uint64_t timeout_ns, cudaEvent_t ev, int* dst, const int* src) {
  cuda::HostWait hw;
  hw.word = w.dev;
  hw.target = w.dev + 1;
  hw.timed_out = w.dev + 2;
  hw.code = 7;
  hw.timeout_ns = timeout_ns;
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cuda::launch_host_wait(hw, s), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(dst, src, sizeof(int), cudaMemcpyDeviceToDevice, s), cudaSuccess);
  EXPECT_EQ(cudaEventRecordWithFlags(ev, s, cudaEventRecordExternal), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  EXPECT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  cudaGraphDestroy(g);
  return cuda::GraphExec(exec);
}

void store(int32_t* p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

// The words, the event, two device ints (d[0] copied to d[1] by the replay) and the graph.
struct Rig {
  Words w;
  cuda::Event ev;
  cuda::DeviceBuffer mem;
  int* d = nullptr;
  cuda::GraphExec exec;
};

void make_rig(cudaStream_t s, uint64_t timeout_ns, Rig* r) {
  r->w = make_words();
  ASSERT_NE(r->w.dev, nullptr);
  Expected<cuda::Event> ev = cuda::make_event(false);
  ASSERT_TRUE(ev.ok());
  r->ev = std::move(*ev);
  Expected<cuda::DeviceBuffer> mem = cuda::DeviceBuffer::alloc(2 * sizeof(int));
  ASSERT_TRUE(mem.ok());
  r->mem = std::move(*mem);
  r->d = static_cast<int*>(r->mem.data());
  ASSERT_EQ(cudaMemset(r->d, 0, 2 * sizeof(int)), cudaSuccess);
  r->exec = capture(s, r->w, timeout_ns, r->ev.get(), r->d + 1, r->d);
  ASSERT_TRUE(r->exec);
}

class HostWait : public test::GpuTest {};

TEST_F(HostWait, ReplayHoldsUntilTheWordReachesTheTargetAndItsEventFollows) {
  DLR_REQUIRE_GPU();
  Rig r;
  ASSERT_NO_FATAL_FAILURE(make_rig(stream(), 0, &r));
  Words& w = r.w;
  int* d = r.d;
  for (int gen = 1; gen <= 3; ++gen) {
    const int value = 100 + gen;
    ASSERT_EQ(test::to_device(d, &value, sizeof(int)), cudaSuccess);
    store(w.host + 1, gen);  // the target of this replay; the word is still gen - 1
    ASSERT_EQ(cudaGraphLaunch(r.exec.get(), stream()), cudaSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(cudaEventQuery(r.ev.get()), cudaErrorNotReady) << "replay " << gen << " did not wait";
    EXPECT_EQ(cudaStreamQuery(stream()), cudaErrorNotReady) << "replay " << gen;
    store(w.host, gen);
    ASSERT_EQ(cudaEventSynchronize(r.ev.get()), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
    int got = 0;
    ASSERT_EQ(cudaMemcpy(&got, d + 1, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, value) << "replay " << gen;
    EXPECT_EQ(w.host[2], 0);
  }
  // A word already past the target: no wait at all.
  store(w.host + 1, 2);
  ASSERT_EQ(cudaGraphLaunch(r.exec.get(), stream()), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
}

TEST_F(HostWait, AWaitThatGivesUpReportsItsCodeAndTheReplayEnds) {
  DLR_REQUIRE_GPU();
  Rig r;
  ASSERT_NO_FATAL_FAILURE(make_rig(stream(), 20 * 1000 * 1000, &r));  // gives up after 20 ms
  Words& w = r.w;
  store(w.host + 1, 5);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaGraphLaunch(r.exec.get(), stream()), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(ms, 15.0);
  EXPECT_EQ(__atomic_load_n(w.host + 2, __ATOMIC_ACQUIRE), 7);
}

}  // namespace
}  // namespace dlr
