#include "runtime/weight_store.h"

#include <cstdlib>
#include <cstring>

#include "loaders/prepare.h"
#include "runtime/core/fault_injection.h"
#include "runtime/core/half.h"

namespace dlr {

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    m_ptr = o.m_ptr;
    m_bytes = o.m_bytes;
    m_free = std::move(o.m_free);
    o.m_ptr = nullptr;
    o.m_bytes = 0;
  }
  return *this;
}

void HostBuffer::reset() {
  if (m_ptr && m_free) m_free(m_ptr);
  m_ptr = nullptr;
  m_bytes = 0;
}

Expected<HostBuffer> HostBuffer::aligned(size_t bytes) {
  const size_t rounded = size_t(align_up(int64_t(bytes == 0 ? 1 : bytes), 4096));
  void* p = std::aligned_alloc(4096, rounded);
  if (p != nullptr && fault::hit("host_alloc")) {
    std::free(p);
    return out_of_memory("cannot allocate " + std::to_string(bytes) + " bytes of host memory" + fault::tag("host_alloc"));
  }
  if (!p) return out_of_memory("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  return HostBuffer(p, bytes, [](void* q) { std::free(q); });
}

Status prepare_blob(const LayerDesc& layer, const WeightsFile& file, const WeightBlob& blob, Layout layout, void* dst,
                    std::vector<float>* tmp) {
  const PreparedSizes sizes = prepared_sizes(layer);
  if (sizes.weights != blob.weight_elems || sizes.bias != blob.bias_elems)
    return internal_error("layer " + std::to_string(layer.index) + ": plan blob does not match the layer");
  tmp->resize(size_t(sizes.total()));
  float* w = tmp->data();
  float* b = w + sizes.weights;
  DLR_RETURN_IF_ERROR(prepare_conv(layer, file, w, b));
  if (blob.dtype == DType::kF16) DLR_RETURN_IF_ERROR(check_fp16_range(layer, file.path(), w));

  char* out = static_cast<char*>(dst);
  std::memset(out, 0, size_t(blob.bytes));
  const ConvParams& p = layer.conv();
  const int64_t cin = layer.in.c / p.groups;
  const int64_t kk = int64_t(p.size) * p.size;
  auto src_index = [&](int64_t o, int64_t i) -> int64_t {  // destination element i of filter o -> OIHW index
    if (layout == Layout::kNCHW) return o * cin * kk + i;
    const int64_t ci = i % cin, k = i / cin;  // OHWI: [o][ky][kx][ci]
    return o * cin * kk + ci * kk + k;
  };
  const int64_t per_filter = cin * kk;
  for (int64_t o = 0; o < p.filters; ++o) {
    for (int64_t i = 0; i < per_filter; ++i) {
      const float v = w[src_index(o, i)];
      const int64_t di = o * per_filter + i;
      if (blob.dtype == DType::kF16) {
        const uint16_t h = float_to_half(v);
        std::memcpy(out + di * 2, &h, 2);
      } else {
        std::memcpy(out + di * 4, &v, 4);
      }
    }
  }
  std::memcpy(out + blob.bias_offset, b, size_t(sizes.bias) * 4);
  return Status();
}

Expected<WeightStore> WeightStore::create(const NetworkDesc& net, const ExecutionPlan& plan, const WeightsFile& file,
                                          const HostAllocator& alloc) {
  WeightStore store;
  int64_t total = 0;
  for (const WeightBlob& w : plan.weights) {
    store.m_offsets.push_back(total);
    total += w.bytes;
  }
  auto buf = alloc ? alloc(size_t(total)) : HostBuffer::aligned(size_t(total));
  if (!buf.ok()) return buf.status();
  store.m_buffer = std::move(buf).value();
  std::vector<float> tmp;
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    const WeightBlob& w = plan.weights[i];
    DLR_RETURN_IF_ERROR(prepare_blob(net.layers[size_t(w.layer)], file, w, plan.options.layout,
                                     static_cast<char*>(store.m_buffer.data()) + store.m_offsets[i], &tmp));
  }
  return store;
}

}  // namespace dlr
