// FusedConv: conv + bias + activation (+ a folded shortcut) as one cuDNN graph
// (contracts in conv_graph.h). Tensor unique ids: kX, kW, kB, kR, kY for the real
// tensors (f16 or f32, as the views); virtual (intermediate, f32) tensors from
// kFirstVirtual on.
#include "kernels/cuda/conv_graph.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <mutex>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "runtime/core/log.h"

namespace dlr::cuda {
namespace {

constexpr int64_t kX = 1, kW = 2, kB = 3, kR = 4, kY = 5, kFirstVirtual = 100;
constexpr int64_t kAlignment = 16;  // bytes: every pointer run() passes is at least this aligned

// An owned cuDNN backend descriptor (destroy failures are logged).
class BackendDesc {
 public:
  BackendDesc() = default;
  BackendDesc(BackendDesc&& o) noexcept : m_d(o.m_d) { o.m_d = nullptr; }
  BackendDesc& operator=(BackendDesc&& o) noexcept {
    std::swap(m_d, o.m_d);  // o destroys what this held
    return *this;
  }
  BackendDesc(const BackendDesc&) = delete;
  ~BackendDesc() {
    if (m_d == nullptr) return;
    const cudnnStatus_t s = cudnnBackendDestroyDescriptor(m_d);
    if (s != CUDNN_STATUS_SUCCESS) DLR_LOG_ERROR("cudnnBackendDestroyDescriptor failed: {}", cudnnGetErrorString(s));
  }
  Status create(cudnnBackendDescriptorType_t type) {
    DLR_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &m_d));
    return Status();
  }
  cudnnBackendDescriptor_t get() const { return m_d; }
  cudnnBackendDescriptor_t* addr() { return &m_d; }

 private:
  cudnnBackendDescriptor_t m_d = nullptr;
};

Status set(const BackendDesc& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
           const void* value) {
  DLR_CUDNN_CHECK(cudnnBackendSetAttribute(d.get(), name, type, count, value));
  return Status();
}

Status set_desc(const BackendDesc& d, cudnnBackendAttributeName_t name, const BackendDesc& value) {
  const cudnnBackendDescriptor_t v = value.get();
  return set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
}

Status finalize(const BackendDesc& d) {
  DLR_CUDNN_CHECK(cudnnBackendFinalize(d.get()));
  return Status();
}

struct Dims {
  int64_t d[4];  // cuDNN's order: N, C, H, W (filters: K, C/groups, R, S)
  int64_t s[4];  // strides in elements
};

// A packed NHWC tensor of n x c x h x w.
Dims nhwc(int64_t n, int64_t c, int64_t h, int64_t w) { return Dims{{n, c, h, w}, {h * w * c, 1, w * c, c}}; }

}  // namespace

struct FusedConv::Impl {
  FusedConvConfig config;
  TensorView in, out;  // geometry only
  std::deque<BackendDesc> keep;  // every descriptor the plans refer to (a deque: references stay valid)
  // Finalised plans (create: up to config.max_plans of cuDNN's heuristics, in its order;
  // load: one); run() executes plans[chosen].
  struct Plan {
    BackendDesc plan;
    size_t workspace = 0;
    int64_t engine = -1;
    bool runtime_compiled = false;
  };
  std::vector<Plan> plans;
  int chosen = 0;
  FusedConvInfo info;
  const Plan& current() const { return plans[size_t(chosen)]; }
  void select(int i) {
    chosen = i;
    info.engine = current().engine;
    info.runtime_compiled = current().runtime_compiled;
  }
  Status add_plan(cudnnHandle_t handle, cudnnBackendDescriptor_t engine_config, std::string* why_not);
  int64_t next_virtual = kFirstVirtual;
  // Variant packs by their pointers (in, weights, bias, out, residual, workspace): each
  // step that runs this plan keeps its own, made on its first run (the graph capture or
  // the first inference), so later inferences create no descriptor.
  using PackKey = std::array<void*, 6>;
  mutable std::mutex packs_mutex;
  mutable std::map<PackKey, BackendDesc> packs;
  Expected<cudnnBackendDescriptor_t> pack_for(const PackKey& key) const;

  Status tensor(int64_t uid, cudnnDataType_t type, const Dims& dims, bool is_virtual, const BackendDesc** out_desc);
  Status pointwise(cudnnPointwiseMode_t mode, const BackendDesc& x, const BackendDesc* b, const BackendDesc& y,
                   double param = 0);
  Status activation(Activation act, const BackendDesc& x, const BackendDesc& y, const Dims& dims);
  Status build(cudnnHandle_t handle);
  Status choose_engine(cudnnHandle_t handle, const BackendDesc& graph);
  std::vector<const BackendDesc*> ops;  // in graph order
  BackendDesc& add() { return keep.emplace_back(); }
  // An Impl for `config` on views of this geometry (their data pointers are not kept).
  static std::unique_ptr<Impl> make(const FusedConvConfig& config, const TensorView& in, const TensorView& out) {
    auto impl = std::make_unique<Impl>();
    impl->config = config;
    impl->in = in;
    impl->in.data = nullptr;
    impl->out = out;
    impl->out.data = nullptr;
    return impl;
  }
};

Status FusedConv::Impl::tensor(int64_t uid, cudnnDataType_t type, const Dims& dims, bool is_virtual,
                               const BackendDesc** out_desc) {
  BackendDesc& d = add();
  DLR_RETURN_IF_ERROR(d.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  DLR_RETURN_IF_ERROR(set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  DLR_RETURN_IF_ERROR(set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.d));
  DLR_RETURN_IF_ERROR(set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, dims.s));
  DLR_RETURN_IF_ERROR(set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  DLR_RETURN_IF_ERROR(set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kAlignment));
  DLR_RETURN_IF_ERROR(set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual));
  DLR_RETURN_IF_ERROR(finalize(d));
  *out_desc = &d;
  return Status();
}

// y = mode(x[, b]); `param`: leaky's slope (RELU_FWD), 1 for softplus and swish.
Status FusedConv::Impl::pointwise(cudnnPointwiseMode_t mode, const BackendDesc& x, const BackendDesc* b,
                                  const BackendDesc& y, double param) {
  BackendDesc& pw = add();
  DLR_RETURN_IF_ERROR(pw.create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
  DLR_RETURN_IF_ERROR(set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
  const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  DLR_RETURN_IF_ERROR(set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec));
  if (mode == CUDNN_POINTWISE_RELU_FWD && param != 0)
    DLR_RETURN_IF_ERROR(set(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_DOUBLE, 1, &param));
  if (mode == CUDNN_POINTWISE_SOFTPLUS_FWD)
    DLR_RETURN_IF_ERROR(set(pw, CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA, CUDNN_TYPE_DOUBLE, 1, &param));
  if (mode == CUDNN_POINTWISE_SWISH_FWD)
    DLR_RETURN_IF_ERROR(set(pw, CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1, &param));
  DLR_RETURN_IF_ERROR(finalize(pw));
  BackendDesc& op = add();
  DLR_RETURN_IF_ERROR(op.create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR));
  DLR_RETURN_IF_ERROR(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw));
  DLR_RETURN_IF_ERROR(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x));
  if (b != nullptr) DLR_RETURN_IF_ERROR(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b));
  DLR_RETURN_IF_ERROR(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y));
  DLR_RETURN_IF_ERROR(finalize(op));
  ops.push_back(&op);
  return Status();
}

// y = act(x) as pointwise operations (mish: x * tanh(softplus(x))); linear: identity.
Status FusedConv::Impl::activation(Activation act, const BackendDesc& x, const BackendDesc& y, const Dims& dims) {
  switch (act) {
    case Activation::kLinear:
      return pointwise(CUDNN_POINTWISE_IDENTITY, x, nullptr, y);
    case Activation::kRelu:
      return pointwise(CUDNN_POINTWISE_RELU_FWD, x, nullptr, y);
    case Activation::kLeaky:
      return pointwise(CUDNN_POINTWISE_RELU_FWD, x, nullptr, y, 0.1);
    case Activation::kLogistic:
      return pointwise(CUDNN_POINTWISE_SIGMOID_FWD, x, nullptr, y);
    case Activation::kSwish:
      return pointwise(CUDNN_POINTWISE_SWISH_FWD, x, nullptr, y, 1.0);
    case Activation::kMish: {
      const BackendDesc *sp = nullptr, *th = nullptr;
      DLR_RETURN_IF_ERROR(tensor(next_virtual++, CUDNN_DATA_FLOAT, dims, true, &sp));
      DLR_RETURN_IF_ERROR(tensor(next_virtual++, CUDNN_DATA_FLOAT, dims, true, &th));
      DLR_RETURN_IF_ERROR(pointwise(CUDNN_POINTWISE_SOFTPLUS_FWD, x, nullptr, *sp, 1.0));
      DLR_RETURN_IF_ERROR(pointwise(CUDNN_POINTWISE_TANH_FWD, *sp, nullptr, *th));
      return pointwise(CUDNN_POINTWISE_MUL, x, th, y);
    }
    default:
      return unsupported(std::string("cuDNN graph: activation ") + activation_name(act));
  }
}

Status FusedConv::Impl::build(cudnnHandle_t handle) {
  const ConvParams& p = config.params;
  const int64_t n = in.n, c = in.c, k = p.filters, cg = in.c / p.groups;
  const Dims x_dims = nhwc(n, c, in.h, in.w);
  const Dims y_dims = nhwc(n, k, out.h, out.w);
  const Dims w_dims{{k, cg, p.size, p.size}, {int64_t(p.size) * p.size * cg, 1, p.size * cg, cg}};
  const Dims b_dims{{1, k, 1, 1}, {k, 1, k, k}};
  const cudnnDataType_t data = in.dtype == DType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const BackendDesc *x, *w, *b, *y, *conv_out, *biased;
  DLR_RETURN_IF_ERROR(tensor(kX, data, x_dims, false, &x));
  DLR_RETURN_IF_ERROR(tensor(kW, data, w_dims, false, &w));
  DLR_RETURN_IF_ERROR(tensor(kB, CUDNN_DATA_FLOAT, b_dims, false, &b));
  DLR_RETURN_IF_ERROR(tensor(kY, data, y_dims, false, &y));
  DLR_RETURN_IF_ERROR(tensor(next_virtual++, CUDNN_DATA_FLOAT, y_dims, true, &conv_out));
  DLR_RETURN_IF_ERROR(tensor(next_virtual++, CUDNN_DATA_FLOAT, y_dims, true, &biased));

  BackendDesc& conv = add();
  DLR_RETURN_IF_ERROR(conv.create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t dims = 2, dil = p.size == 1 ? 1 : p.dilation, pad = int64_t(p.padding) * dil;
  const int64_t dilations[2] = {dil, dil}, strides[2] = {p.stride_y, p.stride_x}, pads[2] = {pad, pad};
  DLR_RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
  DLR_RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  DLR_RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims));
  DLR_RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations));
  DLR_RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides));
  DLR_RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads));
  DLR_RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads));
  DLR_RETURN_IF_ERROR(finalize(conv));

  BackendDesc& fprop = add();
  DLR_RETURN_IF_ERROR(fprop.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
  const float alpha = 1.0f, beta = 0.0f;
  DLR_RETURN_IF_ERROR(set_desc(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, *x));
  DLR_RETURN_IF_ERROR(set_desc(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, *w));
  DLR_RETURN_IF_ERROR(set_desc(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *conv_out));
  DLR_RETURN_IF_ERROR(set_desc(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv));
  DLR_RETURN_IF_ERROR(set(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
  DLR_RETURN_IF_ERROR(set(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  DLR_RETURN_IF_ERROR(finalize(fprop));
  ops.push_back(&fprop);

  DLR_RETURN_IF_ERROR(pointwise(CUDNN_POINTWISE_ADD, *conv_out, b, *biased));
  if (!config.residual) {
    DLR_RETURN_IF_ERROR(activation(p.activation, *biased, *y, y_dims));
  } else {
    const BackendDesc *act_out, *r, *sum;
    DLR_RETURN_IF_ERROR(tensor(kR, data, y_dims, false, &r));
    DLR_RETURN_IF_ERROR(tensor(next_virtual++, CUDNN_DATA_FLOAT, y_dims, true, &act_out));
    DLR_RETURN_IF_ERROR(activation(p.activation, *biased, *act_out, y_dims));
    if (config.post == Activation::kLinear) {
      DLR_RETURN_IF_ERROR(pointwise(CUDNN_POINTWISE_ADD, *act_out, r, *y));
    } else {
      DLR_RETURN_IF_ERROR(tensor(next_virtual++, CUDNN_DATA_FLOAT, y_dims, true, &sum));
      DLR_RETURN_IF_ERROR(pointwise(CUDNN_POINTWISE_ADD, *act_out, r, *sum));
      DLR_RETURN_IF_ERROR(activation(config.post, *sum, *y, y_dims));
    }
  }

  BackendDesc& graph = add();
  DLR_RETURN_IF_ERROR(graph.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  std::vector<cudnnBackendDescriptor_t> op_list;
  for (const BackendDesc* op : ops) op_list.push_back(op->get());
  DLR_RETURN_IF_ERROR(
      set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(op_list.size()), op_list.data()));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  DLR_RETURN_IF_ERROR(set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
#pragma GCC diagnostic pop
  DLR_RETURN_IF_ERROR(finalize(graph));
  return choose_engine(handle, graph);
}

// Finalises `engine_config` as a plan; kept when its workspace fits the limit, else
// *why_not says why not (a refusal is not an error).
Status FusedConv::Impl::add_plan(cudnnHandle_t handle, cudnnBackendDescriptor_t engine_config, std::string* why_not) {
  Plan p;
  DLR_RETURN_IF_ERROR(p.plan.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  DLR_RETURN_IF_ERROR(set(p.plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
#pragma GCC diagnostic pop
  DLR_RETURN_IF_ERROR(set(p.plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                          &engine_config));
  const cudnnStatus_t s = cudnnBackendFinalize(p.plan.get());
  if (s != CUDNN_STATUS_SUCCESS) {
    *why_not = cudnnGetErrorString(s);
    return Status();
  }
  int64_t ws = 0, n_ws = 0;
  DLR_CUDNN_CHECK(cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                           &n_ws, &ws));
  if (ws < 0 || size_t(ws) > config.workspace_limit) {
    *why_not = "workspace of " + std::to_string(ws) + " bytes over the limit";
    return Status();
  }
  p.workspace = size_t(ws);
  // Which engine (for reports): its global index and whether it was compiled at run time.
  BackendDesc engine;
  DLR_RETURN_IF_ERROR(engine.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
  int64_t n_engine = 0;
  cudnnBackendDescriptor_t engine_raw = engine.get();
  if (cudnnBackendGetAttribute(engine_config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n_engine,
                               &engine_raw) == CUDNN_STATUS_SUCCESS) {
    int64_t n_idx = 0;
    cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n_idx, &p.engine);
    cudnnBackendBehaviorNote_t notes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t n_notes = 0;
    if (cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                 CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n_notes, notes) == CUDNN_STATUS_SUCCESS)
      for (int64_t k = 0; k < n_notes; ++k)
        p.runtime_compiled = p.runtime_compiled || notes[k] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  }
  plans.push_back(std::move(p));
  return Status();
}

// The first config.max_plans configurations of cuDNN's heuristics (mode A, then the
// fallback list) that finalise as plans within the workspace limit.
Status FusedConv::Impl::choose_engine(cudnnHandle_t handle, const BackendDesc& graph) {
  std::string last = "no engine configuration offered";
  const int wanted = std::max(1, config.max_plans);
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    BackendDesc heur;
    DLR_RETURN_IF_ERROR(heur.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
    DLR_RETURN_IF_ERROR(set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph));
    DLR_RETURN_IF_ERROR(set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    if (cudnnBackendFinalize(heur.get()) != CUDNN_STATUS_SUCCESS) continue;
    int64_t count = 0;
    if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                 nullptr) != CUDNN_STATUS_SUCCESS || count <= 0)
      continue;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      BackendDesc& c = add();  // kept: a plan refers to its configuration
      DLR_RETURN_IF_ERROR(c.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      raw.push_back(c.get());
    }
    DLR_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count, raw.data()));
    info.candidates += int(count);
    for (int64_t i = 0; i < count && int(plans.size()) < wanted; ++i)
      DLR_RETURN_IF_ERROR(add_plan(handle, raw[size_t(i)], &last));
    if (!plans.empty()) break;  // the fallback list only where mode A gave nothing that runs
  }
  if (plans.empty())
    return unsupported("cuDNN graph: no engine runs conv + bias + " + std::string(activation_name(config.params.activation)) +
                       (config.residual ? " + residual" : "") + " (" + last + ")");
  info.plans = int(plans.size());
  select(0);
  return Status();
}

// Checks what create() and load() need of the views.
static Status check_views(const FusedConvConfig& config, const TensorView& in, const TensorView& out) {
  const ConvParams& p = config.params;
  if (in.layout != Layout::kNHWC || out.layout != Layout::kNHWC || out.dtype != in.dtype ||
      in.pixel_stride != in.c || out.pixel_stride != out.c)
    return unsupported("cuDNN graph: packed NHWC views of one data type only");
  if (out.c != p.filters || in.n != out.n || p.groups < 1 || in.c % p.groups != 0 || p.size < 1)
    return invalid_argument("cuDNN graph: views do not fit the conv's parameters");
  return Status();
}

std::string FusedConv::key(const FusedConvConfig& c, const TensorView& in, const TensorView& out) {
  const ConvParams& p = c.params;
  auto dims = [](const TensorView& v) {
    return std::to_string(v.n) + "x" + std::to_string(v.c) + "x" + std::to_string(v.h) + "x" + std::to_string(v.w);
  };
  return std::string("fused ") + dtype_name(in.dtype) + " in " + dims(in) + " out " + dims(out) + " k" +
         std::to_string(p.size) + " s" +
         std::to_string(p.stride_y) + "x" + std::to_string(p.stride_x) + " d" +
         std::to_string(p.size == 1 ? 1 : p.dilation) + " p" + std::to_string(p.padding) + " g" +
         std::to_string(p.groups) + " " + activation_name(p.activation) +
         (c.residual ? std::string(" + residual ") + activation_name(c.post) : std::string()) + " ws" +
         std::to_string(c.workspace_limit);
}

Expected<std::unique_ptr<FusedConv>> FusedConv::load(cudnnHandle_t handle, const FusedConvConfig& config,
                                                     const TensorView& in, const TensorView& out,
                                                     const std::string& plan_json) {
  const auto t0 = std::chrono::steady_clock::now();
  if (handle == nullptr) return invalid_argument("FusedConv::load: null cuDNN handle");
  DLR_RETURN_IF_ERROR(check_views(config, in, out));
  auto impl = Impl::make(config, in, out);
  Impl::Plan p;
  DLR_RETURN_IF_ERROR(p.plan.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  DLR_RETURN_IF_ERROR(set(p.plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
#pragma GCC diagnostic pop
  DLR_RETURN_IF_ERROR(set(p.plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                          int64_t(plan_json.size()), plan_json.data()));
  DLR_RETURN_IF_ERROR(finalize(p.plan));
  int64_t ws = 0, n_ws = 0;
  DLR_CUDNN_CHECK(cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                           CUDNN_TYPE_INT64, 1, &n_ws, &ws));
  if (ws < 0 || size_t(ws) > config.workspace_limit)
    return invalid_argument("cuDNN graph: a stored plan needs " + std::to_string(ws) + " bytes of workspace");
  p.workspace = size_t(ws);
  impl->plans.push_back(std::move(p));
  impl->info.plans = 1;
  impl->select(0);
  impl->info.loaded = true;
  impl->info.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::unique_ptr<FusedConv>(new FusedConv(std::move(impl)));
}

Expected<std::string> FusedConv::serialize() const {
  int64_t n = 0;
  DLR_CUDNN_CHECK(cudnnBackendGetAttribute(m_impl->current().plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                           CUDNN_TYPE_CHAR, 0, &n, nullptr));
  if (n <= 0) return unsupported("cuDNN graph: the plan has no JSON representation");
  std::string text(size_t(n), '\0');
  DLR_CUDNN_CHECK(cudnnBackendGetAttribute(m_impl->current().plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                           CUDNN_TYPE_CHAR, n, &n, text.data()));
  text.resize(std::min(text.size(), size_t(n)));
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

Expected<std::unique_ptr<FusedConv>> FusedConv::create(cudnnHandle_t handle, const FusedConvConfig& config,
                                                       const TensorView& in, const TensorView& out) {
  const auto t0 = std::chrono::steady_clock::now();
  if (handle == nullptr) return invalid_argument("FusedConv::create: null cuDNN handle");
  DLR_RETURN_IF_ERROR(check_views(config, in, out));
  auto impl = Impl::make(config, in, out);
  DLR_RETURN_IF_ERROR(impl->build(handle));
  impl->info.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::unique_ptr<FusedConv>(new FusedConv(std::move(impl)));
}

FusedConv::FusedConv(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
FusedConv::~FusedConv() = default;

size_t FusedConv::workspace_bytes() const { return m_impl->current().workspace; }
size_t FusedConv::max_workspace_bytes() const {
  size_t ws = 0;
  for (const Impl::Plan& p : m_impl->plans) ws = std::max(ws, p.workspace);
  return ws;
}
int FusedConv::plan_count() const { return int(m_impl->plans.size()); }
Status FusedConv::select(int i) {
  if (i < 0 || i >= plan_count())
    return invalid_argument("cuDNN graph: plan " + std::to_string(i) + " of " + std::to_string(plan_count()));
  m_impl->select(i);
  return Status();
}
const FusedConvInfo& FusedConv::info() const { return m_impl->info; }
std::string FusedConv::describe() const {
  if (m_impl->info.loaded) return "cudnn graph, stored plan";
  return "cudnn graph, engine " + std::to_string(m_impl->info.engine) +
         (m_impl->info.runtime_compiled ? " (runtime compiled)" : "") +
         (plan_count() > 1 ? ", plan " + std::to_string(m_impl->chosen + 1) + " of " + std::to_string(plan_count())
                           : std::string());
}

Status FusedConv::run(cudnnHandle_t handle, const TensorView& in, const void* weights, const float* bias,
                      const TensorView* residual, const TensorView& out, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream) const {
  const Impl& m = *m_impl;
  if (handle == nullptr || in.data == nullptr || out.data == nullptr || weights == nullptr || bias == nullptr ||
      (m.config.residual && (residual == nullptr || residual->data == nullptr)))
    return invalid_argument("cuDNN graph conv: run with a null handle, tensor, weights or bias");
  const size_t need = m.current().workspace;
  if (workspace_bytes < need || (need > 0 && workspace == nullptr))
    return invalid_argument("cuDNN graph conv: workspace of " + std::to_string(workspace_bytes) + " bytes given, " +
                            std::to_string(need) + " needed");
  DLR_CUDNN_CHECK(cudnnSetStream(handle, stream));
  const Impl::PackKey key = {in.data, const_cast<void*>(weights), const_cast<float*>(bias), out.data,
                             m.config.residual ? residual->data : nullptr, workspace};
  std::lock_guard<std::mutex> lock(m.packs_mutex);
  DLR_ASSIGN_OR_RETURN(const cudnnBackendDescriptor_t pack, m.pack_for(key));
  DLR_CUDNN_CHECK(cudnnBackendExecute(handle, m.current().plan.get(), pack));
  return Status();
}

// The variant pack of `key`, made the first time (packs_mutex held by the caller).
Expected<cudnnBackendDescriptor_t> FusedConv::Impl::pack_for(const PackKey& key) const {
  if (const auto it = packs.find(key); it != packs.end()) return it->second.get();
  int64_t uids[5] = {kX, kW, kB, kY, kR};
  void* ptrs[5] = {key[0], key[1], key[2], key[3], key[4]};
  void* workspace = key[5];
  const int64_t n = config.residual ? 5 : 4;
  BackendDesc pack;
  DLR_RETURN_IF_ERROR(pack.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  DLR_RETURN_IF_ERROR(set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids));
  DLR_RETURN_IF_ERROR(set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs));
  DLR_RETURN_IF_ERROR(set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
  DLR_RETURN_IF_ERROR(finalize(pack));
  return packs.emplace(key, std::move(pack)).first->second.get();
}

}  // namespace dlr::cuda
