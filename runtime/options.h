// Typed session options: every value an application or a tool passes to
// Session::open, parsed from text at the boundary (the parse_* functions, whose
// errors are one line naming the option) and validated by validate_options()
// before any file or device work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/thread_placement.h"
#include "runtime/core/types.h"
#include "runtime/options_table.h"

namespace dlr {

enum class WeightMode : uint8_t { kPreload, kStream };
const char* weight_mode_name(WeightMode m);
bool parse_weight_mode(const std::string& s, WeightMode* out);


// Which weights stay resident within the weight budget in stream mode
// (runtime/streaming/residency.h): none (every blob streamed through a pool of the
// whole budget), largest-late (the largest blobs, later first), greedy (chosen by
// simulation from kernel times measured at open; the default).
enum class Residency : uint8_t { kNone, kLargestLate, kGreedy };
const char* residency_name(Residency r);
bool parse_residency(const std::string& s, Residency* out);  // "none", "largest-late", "greedy"

// How a conv whose weights exceed slot_bytes is cut (runtime/compile/slicing.h): auto
// (input channels on CUDA, whose slices then keep the layer's output parallelism;
// filters on the CPU, whose sums then stay bit-identical), filters or channels.
enum class SliceBy : uint8_t { kAuto, kFilters, kChannels };
const char* slice_by_name(SliceBy s);

// Where streamed weights come from each inference ("--weights-from"): host (every
// streamed blob prepared once in a pinned host store) or storage (read from a prepared
// weight file with direct I/O into a bounded staging ring, runtime/streaming/read_plan.h).
enum class WeightsFrom : uint8_t { kHost, kStorage };
const char* weights_from_name(WeightsFrom w);
bool parse_weights_from(const std::string& s, WeightsFrom* out);  // "host", "storage"

// Device memory for streamed weights ("--weight-budget"). Resolved against the
// plan's weight bytes and the pool minimum by the compile step.
struct WeightBudget {
  // kAuto: the compile step picks the smallest budget predicted within
  // SessionOptions::max_slowdown of preload (or within latency_target_ms).
  enum class Kind : uint8_t { kMin, kAll, kFraction, kBytes, kAuto };
  Kind kind = Kind::kMin;
  double fraction = 0;  // kFraction: (0, 1]
  int64_t bytes = 0;    // kBytes: > 0

  static WeightBudget min() { return {}; }
  static WeightBudget all() { return {Kind::kAll, 0, 0}; }
  static WeightBudget percent(double p) { return {Kind::kFraction, p / 100.0, 0}; }
  static WeightBudget of_bytes(int64_t b) { return {Kind::kBytes, 0, b}; }
  static WeightBudget automatic() { return {Kind::kAuto, 0, 0}; }
  // "min", "all", "auto", "NN%" (0 < NN <= 100, decimals allowed), "N" + KB/MB/GB (1e3..),
  // KiB/MiB/GiB (2^10..) or B, or plain bytes; case-insensitive, blanks around ignored.
  static Expected<WeightBudget> parse(const std::string& text);
  // Bytes for a plan with `total` weight bytes whose smallest pool is `minimal`
  // (min and auto -> minimal: auto is chosen later, from measured kernel times; a
  // percentage is rounded down to whole bytes).
  int64_t resolve(int64_t total, int64_t minimal) const;
  std::string to_string() const;  // parse(to_string()) == *this
  bool operator==(const WeightBudget& o) const {
    return kind == o.kind && fraction == o.fraction && bytes == o.bytes;
  }
};

// Every value an application or a tool passes to Session::open: one member per row of
// runtime/options_table.h, with the row's type and default (the table documents each).
struct SessionOptions {
#define DLR_OPTION_MEMBER_(name, Type, def, scope, valid, message) Type name = def;
  DLR_SESSION_OPTIONS(DLR_OPTION_MEMBER_)
#undef DLR_OPTION_MEMBER_
};

// The placement thread_priority and cpu_affinity ask for.
ThreadPlacement thread_placement(const SessionOptions& options);

// "5%" or "5" (percent, decimals allowed, >= 0) -> 0.05; errors name `what`.
Expected<double> parse_percentage(const std::string& text, const std::string& what);

// Checks every option's range (the table's checks) and that the options fit together
// (e.g. the CPU backend runs fp32 preload only). Touches no file and no device.
// One-line errors naming the option.
Status validate_options(const SessionOptions& options);

}  // namespace dlr
