// CompiledModel <-> JSON. Field names follow the C++ members; enums are written
// by name. Reading checks the format version and that the JSON has every field
// (nlohmann throws on a missing field or a wrong type: caught here, one line).
#include <cstdio>

#include <nlohmann/json.hpp>

#include <utility>

#include "runtime/compile/compile.h"
#include "runtime/streaming/copy_profile_json.h"

// Like NLOHMANN_JSON_SERIALIZE_ENUM, but a name that is not in the table is an
// error (nlohmann's macro silently maps it to the first entry).
#define DLR_JSON_ENUM(ENUM, ...)                                                              \
  inline void to_json(nlohmann::json& j, const ENUM& e) {                                     \
    static const std::pair<ENUM, const char*> m[] = __VA_ARGS__;                              \
    for (const auto& p : m)                                                                   \
      if (p.first == e) {                                                                     \
        j = p.second;                                                                         \
        return;                                                                               \
      }                                                                                       \
    j = nullptr;                                                                              \
  }                                                                                           \
  inline void from_json(const nlohmann::json& j, ENUM& e) {                                   \
    static const std::pair<ENUM, const char*> m[] = __VA_ARGS__;                              \
    if (j.is_string())                                                                        \
      for (const auto& p : m)                                                                 \
        if (j.get<std::string>() == p.second) {                                               \
          e = p.first;                                                                        \
          return;                                                                             \
        }                                                                                     \
    throw nlohmann::json::other_error::create(501, "unknown " #ENUM " " + j.dump(), &j);      \
  }

namespace dlr {

// LayerKind by layer_kind_name() (the names of DLR_OPS, kernels/op_params.h).
void to_json(nlohmann::json& j, const LayerKind& k) { j = layer_kind_name(k); }
void from_json(const nlohmann::json& j, LayerKind& k) {
  if (j.is_string())
    for (int i = 0; i < kLayerKindCount; ++i)
      if (j.get<std::string>() == layer_kind_name(static_cast<LayerKind>(i))) {
        k = static_cast<LayerKind>(i);
        return;
      }
  throw nlohmann::json::other_error::create(501, "unknown LayerKind " + j.dump(), &j);
}
DLR_JSON_ENUM(YoloPoint, {{YoloPoint::kCenter, "center"}, {YoloPoint::kLeftTop, "left_top"},
                          {YoloPoint::kRightBottom, "right_bottom"}})
DLR_JSON_ENUM(DType, {{DType::kF32, "f32"}, {DType::kF16, "f16"}})
DLR_JSON_ENUM(Layout, {{Layout::kNCHW, "nchw"}, {Layout::kNHWC, "nhwc"}})
DLR_JSON_ENUM(Precision, {{Precision::kFP32, "fp32"}, {Precision::kTF32, "tf32"},
                                         {Precision::kFP16, "fp16"}})
DLR_JSON_ENUM(DeviceKind, {{DeviceKind::kCPU, "cpu"}, {DeviceKind::kCUDA, "cuda"}})
DLR_JSON_ENUM(WeightMode, {{WeightMode::kPreload, "preload"}, {WeightMode::kStream, "stream"}})
DLR_JSON_ENUM(PoolLayout, {{PoolLayout::kAuto, "auto"}, {PoolLayout::kSlots, "slots"},
                                          {PoolLayout::kRing, "ring"}})
DLR_JSON_ENUM(Residency, {{Residency::kNone, "none"}, {Residency::kLargestLate, "largest-late"},
                          {Residency::kGreedy, "greedy"}})
DLR_JSON_ENUM(WeightFormat, {{WeightFormat::kFp, "fp"}, {WeightFormat::kInt8, "int8"}})
DLR_JSON_ENUM(Fusion, {{Fusion::kAuto, "auto"}, {Fusion::kOff, "off"}, {Fusion::kEpilogue, "epilogue"},
                       {Fusion::kCudnn, "cudnn"}})
DLR_JSON_ENUM(SliceBy, {{SliceBy::kAuto, "auto"}, {SliceBy::kFilters, "filters"}, {SliceBy::kChannels, "channels"}})
DLR_JSON_ENUM(SliceAxis, {{SliceAxis::kFilters, "filters"}, {SliceAxis::kChannels, "channels"}})
DLR_JSON_ENUM(WeightsFrom, {{WeightsFrom::kHost, "host"}, {WeightsFrom::kStorage, "storage"}})
DLR_JSON_ENUM(ReaderKind, {{ReaderKind::kAuto, "auto"}, {ReaderKind::kUring, "uring"}, {ReaderKind::kThreads, "threads"}})
DLR_JSON_ENUM(ThreadPriority, {{ThreadPriority::kNormal, "normal"}, {ThreadPriority::kHigh, "high"},
                               {ThreadPriority::kRealtime, "realtime"}})
// A CPU list by its text ("0,2-3").
void to_json(nlohmann::json& j, const CpuList& l) { j = l.to_string(); }
void from_json(const nlohmann::json& j, CpuList& l) {
  const Expected<CpuList> parsed = CpuList::parse(j.is_string() ? j.get<std::string>() : std::string("?"));
  if (!parsed.ok()) throw nlohmann::json::other_error::create(501, "bad CPU list " + j.dump(), &j);
  l = *parsed;
}
DLR_JSON_ENUM(NmsKind, {{NmsKind::kDefault, "default"}, {NmsKind::kGreedy, "greedynms"},
                                       {NmsKind::kDiou, "diounms"}})
DLR_JSON_ENUM(StreamAction::Kind, {{StreamAction::Kind::kCopy, "copy"},
                                                  {StreamAction::Kind::kLayer, "layer"}})
DLR_JSON_ENUM(WeightBudget::Kind, {{WeightBudget::Kind::kMin, "min"},
                                                  {WeightBudget::Kind::kAll, "all"},
                                                  {WeightBudget::Kind::kFraction, "fraction"},
                                                  {WeightBudget::Kind::kBytes, "bytes"},
                                                  {WeightBudget::Kind::kAuto, "auto"}})

// Activation by its cfg name (activation_name / parse_activation).
void to_json(nlohmann::json& j, const Activation& a) { j = activation_name(a); }
void from_json(const nlohmann::json& j, Activation& a) {
  if (!parse_activation(j.get<std::string>(), &a))
    throw nlohmann::json::other_error::create(501, "unknown activation " + j.dump(), &j);
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Shape3, c, h, w)
// Every op params struct through its fields() (kernels/op_params.h): one member per
// key, by its C++ name; reading needs every key (at() throws on a missing one).
struct AnyField {  // a visitor type for the SFINAE tests below
  template <class T>
  void operator()(const char*, T&) const {}
};
template <class P, class = decltype(P::fields(std::declval<const P&>(), AnyField{}))>
void to_json(nlohmann::json& j, const P& p) {
  j = nlohmann::json::object();
  P::fields(p, [&](const char* key, const auto& member) { j[key] = member; });
}
template <class P, class = decltype(P::fields(std::declval<P&>(), AnyField{}))>
void from_json(const nlohmann::json& j, P& p) {
  P::fields(p, [&](const char* key, auto& member) { j.at(key).get_to(member); });
}
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Buffer, id, offset, bytes, dtype, layout, c, h, w, first_step, last_step,
                                   owner_layer)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ViewRef, buffer, c_offset, c)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WeightBlob, layer, step, filter_begin, filters, channel_begin, channels,
                                                weight_elems, bias_elems, dtype, format, scale_elems, scale_offset,
                                                bias_offset, bytes, arena_offset, arena_wait)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PlannerOptions, batch, layout, activation_dtype, weight_dtype,
                                                weight_format, concat_in_place, alignment, weight_align,
                                                keep_all_outputs, conv_strided_io, in_place, conv_over_concat,
                                                fold_shortcuts, select_thresh)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OutputSelect, layer, anchors, entries, cells, capacity, offset, keys_offset,
                                   rows_offset, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TransferUnit, index, group, host_offset, bytes, pool_offset, first_blob,
                                   last_blob, first_layer, in_arena)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StreamAction, kind, index)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WeightGroup, first_blob, last_blob, host_offset, bytes, slot, last_layer)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StreamPlan, layout, pool_bytes, slot_bytes, slots, minimal_pool_bytes,
                                                total_weight_bytes, groups, resident, units, blob_pool_offset,
                                                blob_last_unit, unit_waits, order, max_copies_ahead,
                                                prefetch_limit_bytes, units_searched, searched_ms, chunks_ms,
                                                search_layer_ms, blob_resident, resident_bytes, blob_host_offset,
                                                staged_bytes, tail_units, tail_waits)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WeightBudget, kind, fraction, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ReadSegment, blob, blob_offset, bytes, staging_offset, joins_previous)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ReadUnit, index, staging_offset, bytes, first_blob, last_blob, first_layer,
                                   wait_unit, wait_layer, own_offset, own_bytes, segments)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ReadPlan, two_stage, staging_bytes, min_staging_bytes, queue_depth, block_bytes,
                                   units, copy_src_offset, blob_staging_offset, blob_read_unit, layer_read_unit,
                                   layer_releases)
// The options record: every row of runtime/options_table.h by its name. Reading takes
// the options a record has (one from an older dlrun lacks the newer ones: defaults).
void to_json(nlohmann::json& j, const SessionOptions& o) {
  j = nlohmann::json::object();
#define DLR_OPTION_TO_JSON_(name, Type, def, scope, valid, message) j[#name] = o.name;
  DLR_SESSION_OPTIONS(DLR_OPTION_TO_JSON_)
#undef DLR_OPTION_TO_JSON_
}
void from_json(const nlohmann::json& j, SessionOptions& o) {
#define DLR_OPTION_FROM_JSON_(name, Type, def, scope, valid, message) \
  if (j.contains(#name)) j.at(#name).get_to(o.name);
  DLR_SESSION_OPTIONS(DLR_OPTION_FROM_JSON_)
#undef DLR_OPTION_FROM_JSON_
}

// Step: the op parameters are written under the step's kind.
void to_json(nlohmann::json& j, const Step& s) {
  j = {{"layer", s.layer}, {"kind", s.kind},     {"cfg_line", s.cfg_line}, {"in", s.in},
       {"out", s.out},     {"inputs", s.inputs}, {"output", s.output},     {"copies", s.copies},
       {"no_op", s.no_op}, {"weight", s.weight}};
  if (s.slice >= 0) {
    j["slice"] = s.slice;
    j["slices"] = s.slices;
    j["axis"] = s.axis;
    j["filter_begin"] = s.filter_begin;
    j["channel_begin"] = s.channel_begin;
    j["accumulate"] = s.accumulate;
    j["packs"] = s.packs;
  }
  if (s.dequant >= 0) j["dequant"] = s.dequant;
  if (s.dequant_group >= 0) j["dequant_group"] = s.dequant_group;
  if (s.residual.buffer >= 0) {
    j["residual"] = s.residual;
    j["residual_activation"] = s.residual_activation;
  }
  if (s.folded_into >= 0) j["folded_into"] = s.folded_into;
  std::visit([&](const auto& p) { j["params"] = p; }, s.params);
}

void from_json(const nlohmann::json& j, Step& s) {
  j.at("layer").get_to(s.layer);
  j.at("kind").get_to(s.kind);
  j.at("cfg_line").get_to(s.cfg_line);
  j.at("in").get_to(s.in);
  j.at("out").get_to(s.out);
  j.at("inputs").get_to(s.inputs);
  j.at("output").get_to(s.output);
  j.at("copies").get_to(s.copies);
  j.at("no_op").get_to(s.no_op);
  j.at("weight").get_to(s.weight);
  s.slice = j.value("slice", -1);
  s.slices = j.value("slices", 0);
  s.axis = j.value("axis", SliceAxis::kFilters);
  s.filter_begin = j.value("filter_begin", 0);
  s.channel_begin = j.value("channel_begin", 0);
  s.accumulate = j.value("accumulate", false);
  s.packs = j.value("packs", std::vector<std::pair<ViewRef, ViewRef>>{});
  s.dequant = j.value("dequant", -1);
  s.dequant_group = j.value("dequant_group", -1);
  s.residual = j.value("residual", ViewRef{});
  s.residual_activation = j.value("residual_activation", Activation::kLinear);
  s.folded_into = j.value("folded_into", -1);
  const nlohmann::json& p = j.at("params");
  // The params struct of the step's kind (DLR_OPS).
  switch (s.kind) {
#define DLR_JSON_PARAMS_(K, ident, name, P, role) \
  case LayerKind::K:                              \
    s.params = p.get<P>();                        \
    break;
    DLR_OPS(DLR_JSON_PARAMS_)
#undef DLR_JSON_PARAMS_
  }
}

void to_json(nlohmann::json& j, const ExecutionPlan& p) {
  j = {{"options", p.options},   {"input_shape", p.input_shape}, {"input_buffer", p.input_buffer},
       {"buffers", p.buffers},   {"steps", p.steps},             {"layer_out", p.layer_out},
       {"output_layers", p.output_layers}, {"weights", p.weights},   {"arena_bytes", p.arena_bytes},
       {"naive_bytes", p.naive_bytes}, {"selects", p.selects}};
}

void from_json(const nlohmann::json& j, ExecutionPlan& p) {
  j.at("options").get_to(p.options);
  j.at("input_shape").get_to(p.input_shape);
  j.at("input_buffer").get_to(p.input_buffer);
  j.at("buffers").get_to(p.buffers);
  j.at("steps").get_to(p.steps);
  j.at("layer_out").get_to(p.layer_out);
  j.at("output_layers").get_to(p.output_layers);
  j.at("weights").get_to(p.weights);
  j.at("arena_bytes").get_to(p.arena_bytes);
  j.at("naive_bytes").get_to(p.naive_bytes);
  // A record from before device selection has none (every output downloaded whole).
  if (j.contains("selects")) j.at("selects").get_to(p.selects);
  // Derived: step positions, each layer's first step; a record from before slicing
  // has no blob "step" (its steps are its layers).
  p.layer_step.assign(p.layer_out.size(), 0);
  for (size_t i = p.steps.size(); i-- > 0;) {
    p.steps[i].index = int(i);
    if (p.steps[i].layer >= 0 && size_t(p.steps[i].layer) < p.layer_step.size()) p.layer_step[size_t(p.steps[i].layer)] = int(i);
  }
  const nlohmann::json& w = j.at("weights");
  for (size_t b = 0; b < p.weights.size(); ++b)
    if (!w[b].contains("step")) p.weights[b].step = p.weights[b].layer;
}

namespace {

nlohmann::json target_json(const Target& t) {
  return {{"device", t.device},
          {"name", t.name},
          {"integrated", t.integrated},
          {"memory_bytes", t.memory_bytes},
          {"map_granularity", t.map_granularity},
          {"tf32_tensor_cores", t.tf32_tensor_cores},
          {"copy_profile_source", t.copy_profile_source},
          // A target without copies (the CPU) has no profile: null.
          {"copy_profile", t.copy_profile.name.empty() ? nlohmann::json() : copy_profile_to_json(t.copy_profile)},
          // Set only when copy_profile is calibrated (Target::probed_copy_profile).
          {"probed_copy_profile",
           t.probed_copy_profile.name.empty() ? nlohmann::json() : copy_profile_to_json(t.probed_copy_profile)}};
}

Status read_target(const nlohmann::json& j, const std::string& what, Target* t) {
  j.at("device").get_to(t->device);
  j.at("name").get_to(t->name);
  j.at("integrated").get_to(t->integrated);
  j.at("memory_bytes").get_to(t->memory_bytes);
  j.at("map_granularity").get_to(t->map_granularity);
  if (j.contains("tf32_tensor_cores")) j.at("tf32_tensor_cores").get_to(t->tf32_tensor_cores);
  if (j.contains("copy_profile_source")) j.at("copy_profile_source").get_to(t->copy_profile_source);
  if (!j.at("copy_profile").is_null()) {
    DLR_ASSIGN_OR_RETURN(t->copy_profile, copy_profile_from_json(j.at("copy_profile"), what + ": copy_profile"));
  }
  if (j.contains("probed_copy_profile") && !j.at("probed_copy_profile").is_null()) {
    DLR_ASSIGN_OR_RETURN(t->probed_copy_profile,
                         copy_profile_from_json(j.at("probed_copy_profile"), what + ": probed_copy_profile"));
  }
  return Status();
}

}  // namespace

std::string compiled_model_to_json(const CompiledModel& m) {
  nlohmann::json j = {{"format", "dlrun-compiled-model"},
                            {"format_version", m.format_version},
                            {"cfg_path", m.cfg_path},
                            {"model_name", m.model_name},
                            {"target", target_json(m.target)},
                            {"options", m.options ? *m.options : SessionOptions()},
                            {"letterbox", m.letterbox},
                            {"plan", m.plan},
                            {"streaming", m.streaming},
                            {"stream", m.stream},
                            {"budget_bytes", m.budget_bytes},
                            {"from_storage", m.from_storage},
                            {"reads", m.reads},
                            {"layer_ms", m.layer_ms},
                            {"expand_ms", m.expand_ms},
                            {"lower_bound_expanded_steps", m.lower_bound_expanded_steps},
                            {"predicted_ms", m.predicted_ms},
                            {"lower_bound_ms", m.lower_bound_ms},
                            {"lower_bound_calibrated_ms", m.lower_bound_calibrated_ms},
                            {"auto_preload_ms", m.auto_preload_ms},
                            {"notes", m.notes}};
  // Added after the options' field list (older files lack it: the default applies).
  // Where the activation arena and the workspace live: a Runtime's (a compile input).
  j["shared_memory"] = m.engine.shared_memory;
  return j.dump(1) + "\n";
}

namespace {
Expected<CompiledModel> model_from_json(const std::string& text, const std::string& what);
}  // namespace

Expected<CompiledModel> compiled_model_from_json(const std::string& text, const std::string& what) {
  Expected<CompiledModel> m = model_from_json(text, what);
  // Messages may quote values from the file, which JSON escapes can fill with control bytes.
  if (!m.ok()) return Status(m.status().code(), printable(m.status().message()));
  return m;
}

namespace {

// Every field of the format that holds a fraction is small (times in ms, rates,
// thresholds), and sizes are written as integers. A floating-point number outside the
// int range would make the JSON library's conversion into an int field undefined, so
// the whole document is checked first (found by the plan_json fuzzer: 5.6e103).
bool numbers_in_range(const nlohmann::json& j, double* bad) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (!(v > -2147483648.0 && v < 2147483648.0)) {
      *bad = v;
      return false;
    }
    return true;
  }
  if (j.is_structured())
    for (const auto& e : j)
      if (!numbers_in_range(e, bad)) return false;
  return true;
}

Expected<CompiledModel> model_from_json(const std::string& text, const std::string& what) {
  CompiledModel m;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    double bad = 0;
    if (!numbers_in_range(j, &bad)) {
      char num[32];
      std::snprintf(num, sizeof(num), "%g", bad);
      return parse_error(what + ": number " + num + " is out of range (fractions must lie within +-2147483648; " +
                         "sizes are integers)");
    }
    if (!j.is_object() || j.value("format", std::string()) != "dlrun-compiled-model")
      return parse_error(what + ": not a dlrun compiled model (no \"format\": \"dlrun-compiled-model\")");
    const int version = j.at("format_version").get<int>();
    if (version != m.format_version)
      return parse_error(what + ": compiled model format version " + std::to_string(version) + ", this dlrun reads " +
                         std::to_string(m.format_version));
    j.at("cfg_path").get_to(m.cfg_path);
    j.at("model_name").get_to(m.model_name);
    DLR_RETURN_IF_ERROR(read_target(j.at("target"), what, &m.target));
    SessionOptions options;
    j.at("options").get_to(options);
    CompileInputs inputs;  // shared_memory: top level; in the options of records before it moved there
    const nlohmann::json& shared = j.contains("shared_memory") ? j.at("shared_memory") : j.at("options").at("shared_memory");
    shared.get_to(inputs.shared_memory);
    m.engine = engine_settings(options, inputs);  // derived, not stored
    m.options = std::make_shared<const SessionOptions>(std::move(options));
    j.at("letterbox").get_to(m.letterbox);
    j.at("plan").get_to(m.plan);
    j.at("streaming").get_to(m.streaming);
    j.at("stream").get_to(m.stream);
    j.at("budget_bytes").get_to(m.budget_bytes);
    j.at("from_storage").get_to(m.from_storage);
    j.at("reads").get_to(m.reads);
    plan_read_ahead(m.plan, &m.reads);  // derived, not stored
    j.at("layer_ms").get_to(m.layer_ms);
    if (j.contains("expand_ms")) j.at("expand_ms").get_to(m.expand_ms);
    if (j.contains("lower_bound_expanded_steps")) j.at("lower_bound_expanded_steps").get_to(m.lower_bound_expanded_steps);
    j.at("predicted_ms").get_to(m.predicted_ms);
    if (j.contains("lower_bound_ms")) j.at("lower_bound_ms").get_to(m.lower_bound_ms);
    if (j.contains("lower_bound_calibrated_ms")) j.at("lower_bound_calibrated_ms").get_to(m.lower_bound_calibrated_ms);
    if (j.contains("auto_preload_ms")) j.at("auto_preload_ms").get_to(m.auto_preload_ms);
    j.at("notes").get_to(m.notes);
    settle_graph(&m);  // derived, not stored
  } catch (const nlohmann::json::exception& e) {
    return parse_error(what + ": " + printable(e.what()));
  }
  return m;
}
}  // namespace

}  // namespace dlr
