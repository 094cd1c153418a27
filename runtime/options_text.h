// The text form of the session options (runtime/options_table.h): one parser per option
// type and the options set or printed by name. What the public dlrun::set_option(), the
// Python keywords and the tools read. Errors are one line; the by-name calls name the
// option ("threads 'abc': expected an integer").
#pragma once

#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/options.h"

namespace dlr {

// Each returns an error saying what was expected (without the option's name).
Status parse_value(const std::string& text, int* out);          // a decimal integer
Status parse_value(const std::string& text, int64_t* out);      // a decimal integer
Status parse_value(const std::string& text, float* out);        // a decimal number
Status parse_value(const std::string& text, double* out);       // a decimal number
Status parse_value(const std::string& text, bool* out);         // true/false, on/off, yes/no, 1/0
Status parse_value(const std::string& text, std::string* out);  // any text
Status parse_value(const std::string& text, DeviceKind* out);   // cpu, cuda
Status parse_value(const std::string& text, Precision* out);    // fp32, tf32, fp16
Status parse_value(const std::string& text, WeightMode* out);   // preload, stream
Status parse_value(const std::string& text, WeightFormat* out);  // fp, int8
Status parse_value(const std::string& text, Fusion* out);  // auto, off, epilogue, cudnn
Status parse_value(const std::string& text, Decode* out);  // auto, cpu, gpu
Status parse_value(const std::string& text, PoolLayout* out);   // auto, slots, ring
Status parse_value(const std::string& text, Residency* out);    // none, largest-late, greedy
Status parse_value(const std::string& text, SliceBy* out);      // auto, filters, channels
Status parse_value(const std::string& text, WeightsFrom* out);  // host, storage
Status parse_value(const std::string& text, ReaderKind* out);   // auto, uring, threads
Status parse_value(const std::string& text, WeightBudget* out); // WeightBudget::parse
Status parse_value(const std::string& text, ThreadPriority* out);  // normal, high, realtime
Status parse_value(const std::string& text, CpuList* out);      // CpuList::parse ("2,3", "4-7", "")

// The text a value reads back from (parse_value(value_text(v)) == v).
std::string value_text(int v);
std::string value_text(int64_t v);
std::string value_text(float v);
std::string value_text(double v);
std::string value_text(bool v);
std::string value_text(const std::string& v);
std::string value_text(DeviceKind v);
std::string value_text(Precision v);
std::string value_text(WeightMode v);
std::string value_text(WeightFormat v);
std::string value_text(Fusion v);
std::string value_text(Decode v);
std::string value_text(PoolLayout v);
std::string value_text(Residency v);
std::string value_text(SliceBy v);
std::string value_text(WeightsFrom v);
std::string value_text(ReaderKind v);
std::string value_text(const WeightBudget& v);
std::string value_text(ThreadPriority v);
std::string value_text(const CpuList& v);

// Every option's name, in the table's order.
const std::vector<std::string>& option_names();
// Sets option `name` of *o from text; unknown names and bad text are one-line errors
// naming the option. Ranges are validate_options()'s.
Status set_option_text(SessionOptions* o, const std::string& name, const std::string& text);
// The option's value as text; an unknown name is an error.
Expected<std::string> option_text(const SessionOptions& o, const std::string& name);

}  // namespace dlr
