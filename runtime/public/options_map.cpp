// dlrun::Options <-> dlr::SessionOptions and dlrun::set_option(), both generated from
// the options table (runtime/options_table.h): a PUBLIC row is a field of dlrun::Options
// of the same name. Public types are converted by the overloads below (the public enums
// to the internal ones; text fields parsed into their typed values).
#include "runtime/public/options_map.h"

#include <type_traits>

#include "runtime/options_text.h"

namespace dlrun::detail {
namespace {

template <class T>
dlr::Status same(const T& p, T* s) {
  *s = p;
  return dlr::Status();
}
dlr::Status convert(int p, int* s) { return same(p, s); }
dlr::Status convert(int64_t p, int64_t* s) { return same(p, s); }
dlr::Status convert(float p, float* s) { return same(p, s); }
dlr::Status convert(double p, double* s) { return same(p, s); }
dlr::Status convert(bool p, bool* s) { return same(p, s); }
dlr::Status convert(const std::string& p, std::string* s) { return same(p, s); }
// Text fields of the public options: their typed value.
dlr::Status convert(const std::string& p, dlr::WeightBudget* s) { return dlr::parse_value(p, s); }
dlr::Status convert(const std::string& p, dlr::ReaderKind* s) { return dlr::parse_value(p, s); }
dlr::Status convert(const std::string& p, dlr::CpuList* s) {
  const dlr::Status st = dlr::parse_value(p, s);  // its message does not repeat the text
  return st.ok() ? st : dlr::invalid_argument("'" + p + "': " + st.message());
}
dlr::Status convert(bool storage, dlr::WeightsFrom* s) {
  *s = storage ? dlr::WeightsFrom::kStorage : dlr::WeightsFrom::kHost;
  return dlr::Status();
}
// The public enums: the same enumerators in the same order as the internal ones.
static_assert(uint8_t(Device::kCUDA) == uint8_t(dlr::DeviceKind::kCUDA), "Device");
static_assert(uint8_t(Precision::kTF32) == uint8_t(dlr::Precision::kTF32) &&
                  uint8_t(Precision::kFP16) == uint8_t(dlr::Precision::kFP16), "Precision");
static_assert(uint8_t(Mode::kStream) == uint8_t(dlr::WeightMode::kStream), "Mode");
static_assert(uint8_t(PoolLayout::kSlots) == uint8_t(dlr::PoolLayout::kSlots) &&
                  uint8_t(PoolLayout::kRing) == uint8_t(dlr::PoolLayout::kRing), "PoolLayout");
static_assert(uint8_t(Residency::kLargestLate) == uint8_t(dlr::Residency::kLargestLate) &&
                  uint8_t(Residency::kGreedy) == uint8_t(dlr::Residency::kGreedy), "Residency");
static_assert(uint8_t(SliceBy::kFilters) == uint8_t(dlr::SliceBy::kFilters) &&
                  uint8_t(SliceBy::kChannels) == uint8_t(dlr::SliceBy::kChannels), "SliceBy");
static_assert(uint8_t(WeightFormat::kInt8) == uint8_t(dlr::WeightFormat::kInt8), "WeightFormat");
static_assert(uint8_t(Fusion::kOff) == uint8_t(dlr::Fusion::kOff) && uint8_t(Fusion::kEpilogue) == uint8_t(dlr::Fusion::kEpilogue) &&
                  uint8_t(Fusion::kCudnn) == uint8_t(dlr::Fusion::kCudnn), "Fusion");
static_assert(uint8_t(Decode::kCpu) == uint8_t(dlr::Decode::kCpu) && uint8_t(Decode::kGpu) == uint8_t(dlr::Decode::kGpu),
              "Decode");
static_assert(uint8_t(ThreadPriority::kHigh) == uint8_t(dlr::ThreadPriority::kHigh) &&
                  uint8_t(ThreadPriority::kRealtime) == uint8_t(dlr::ThreadPriority::kRealtime), "ThreadPriority");
template <class P, class I>
dlr::Status as_internal(P p, I* s) {
  *s = static_cast<I>(static_cast<uint8_t>(p));
  return dlr::Status();
}
dlr::Status convert(Device p, dlr::DeviceKind* s) { return as_internal(p, s); }
dlr::Status convert(Precision p, dlr::Precision* s) { return as_internal(p, s); }
dlr::Status convert(Mode p, dlr::WeightMode* s) { return as_internal(p, s); }
dlr::Status convert(PoolLayout p, dlr::PoolLayout* s) { return as_internal(p, s); }
dlr::Status convert(Residency p, dlr::Residency* s) { return as_internal(p, s); }
dlr::Status convert(SliceBy p, dlr::SliceBy* s) { return as_internal(p, s); }
dlr::Status convert(WeightFormat p, dlr::WeightFormat* s) { return as_internal(p, s); }
dlr::Status convert(Fusion p, dlr::Fusion* s) { return as_internal(p, s); }
dlr::Status convert(Decode p, dlr::Decode* s) { return as_internal(p, s); }
dlr::Status convert(ThreadPriority p, dlr::ThreadPriority* s) { return as_internal(p, s); }

// A parsed value into its public field: a public enum from the internal one, or as it is.
template <class I, class P>
dlr::Status store(const I& parsed, P* field) {
  *field = static_cast<P>(static_cast<uint8_t>(parsed));
  return dlr::Status();
}
template <class T>
dlr::Status store(const T& parsed, T* field) {
  *field = parsed;
  return dlr::Status();
}

// A PUBLIC row's public field; PUBLIC_STORAGE's is weights_from_storage.
#define DLR_PUBLIC_FIELD_PUBLIC(name) name
#define DLR_PUBLIC_FIELD_PUBLIC_STORAGE(name) weights_from_storage
#define DLR_PUBLIC_FIELD_(scope, name) DLR_PUBLIC_FIELD_##scope(name)
#define DLR_TEXT_(x) DLR_TEXT2_(x)  // the text of x after expansion
#define DLR_TEXT2_(x) #x

// A public field from text: parsed as the option's internal type I, then stored. A text
// field keeps the text as given; it is parsed where the options are used (at open), like
// a field set directly.
template <class I, class P>
dlr::Status set_field(const char* name, const std::string& text, P* field) {
  I parsed{};
  const dlr::Status st = dlr::parse_value(text, &parsed);
  if (!st.ok()) return dlr::invalid_argument(std::string(name) + " '" + text + "': " + st.message());
  return store(parsed, field);
}
template <class I>
dlr::Status set_field(const char*, const std::string& text, std::string* field) {
  *field = text;
  return dlr::Status();
}

dlr::Status named(const char* name, const dlr::Status& st) {
  return st.ok() ? st : dlr::invalid_argument(std::string(name) + ": " + st.message());
}

// The public fields, each converted (INTERNAL rows expand to nothing).
#define DLR_MAP_PUBLIC(name, field) \
  DLR_RETURN_IF_ERROR(named(DLR_TEXT_(field), convert(o.field, &s.name)));
#define DLR_MAP_PUBLIC_STORAGE(name, field) DLR_MAP_PUBLIC(name, field)
#define DLR_MAP_INTERNAL(name, field)

// set_option for the public fields.
#define DLR_SET_PUBLIC(name, field) \
  if (key == DLR_TEXT_(field)) return set_field<decltype(dlr::SessionOptions::name)>(DLR_TEXT_(field), text, &o->field);
#define DLR_SET_PUBLIC_STORAGE(name, field) \
  if (key == DLR_TEXT_(field)) return set_field<bool>(DLR_TEXT_(field), text, &o->field);
#define DLR_SET_INTERNAL(name, field)

}  // namespace

dlr::Expected<dlr::SessionOptions> to_session_options(const Options& o) {
  dlr::SessionOptions s;
#define DLR_MAP_ROW_(name, Type, def, scope, valid, message) DLR_MAP_##scope(name, DLR_PUBLIC_FIELD_(scope, name))
  DLR_SESSION_OPTIONS(DLR_MAP_ROW_)
#undef DLR_MAP_ROW_
  return s;
}

dlr::Status set_public_option(Options* o, const std::string& key, const std::string& text) {
#define DLR_SET_ROW_(name, Type, def, scope, valid, message) DLR_SET_##scope(name, DLR_PUBLIC_FIELD_(scope, name))
  DLR_SESSION_OPTIONS(DLR_SET_ROW_)
#undef DLR_SET_ROW_
  return dlr::invalid_argument("unknown option '" + key + "'");
}

bool public_option_is_text(const std::string& key) {
#define DLR_TEXT_ROW_(name, Type, def, scope, valid, message) DLR_IS_TEXT_##scope(DLR_PUBLIC_FIELD_(scope, name))
#define DLR_IS_TEXT_PUBLIC(field) \
  if (key == DLR_TEXT_(field)) return std::is_same_v<decltype(Options::field), std::string>;
#define DLR_IS_TEXT_PUBLIC_STORAGE(field) DLR_IS_TEXT_PUBLIC(field)
#define DLR_IS_TEXT_INTERNAL(field)
  DLR_SESSION_OPTIONS(DLR_TEXT_ROW_)
#undef DLR_TEXT_ROW_
#undef DLR_IS_TEXT_PUBLIC
#undef DLR_IS_TEXT_PUBLIC_STORAGE
#undef DLR_IS_TEXT_INTERNAL
  return false;
}

const std::vector<std::string>& public_option_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
#define DLR_NAME_ROW_(name, Type, def, scope, valid, message) DLR_NAME_##scope(name)
#define DLR_NAME_PUBLIC(name) n.push_back(DLR_TEXT_(DLR_PUBLIC_FIELD_PUBLIC(name)));
#define DLR_NAME_PUBLIC_STORAGE(name) n.push_back(DLR_TEXT_(DLR_PUBLIC_FIELD_PUBLIC_STORAGE(name)));
#define DLR_NAME_INTERNAL(name)
    DLR_SESSION_OPTIONS(DLR_NAME_ROW_)
#undef DLR_NAME_ROW_
    return n;
  }();
  return names;
}

}  // namespace dlrun::detail
