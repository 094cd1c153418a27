// The command-line flags of the session options that dlrun and dlbench both have: one
// table (session_flags.cpp), one row per flag, from which each tool registers its flags
// (CLI11) and turns their texts into SessionOptions (dlr::set_option_text). Flags only one
// tool has stay in that tool. docs/architecture.md, "Adding an option".
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/core/status.h"
#include "runtime/options.h"

namespace dlr::tools {

// dlrun: one value per flag. dlbench: the sweepable flags are comma-separated lists, one
// configuration per item (the others take one value, as in dlrun).
enum class FlagTool { kDlrun, kDlbench };

// Where a flag's value means something; apply_session_flags() refuses a flag given
// elsewhere ("--units applies to --device cuda --mode stream only").
enum class FlagApplies { kEveryRun, kCuda, kCudaStream, kStorage };

// How a flag's text becomes its option's text.
enum class FlagConvert {
  kSame,       // the option's own text form (runtime/options_text.h)
  kWords,      // each of `choices` to the word at its position in `option_words`
  kSwitch,     // no value: given, the option's text is `option_words`; not given, its negation
  kPercent,    // NN% -> a fraction (dlr::parse_percentage)
  kSize,       // a size as WeightBudget::parse reads it (64MiB, 8MB, bytes) -> bytes; "0" passes to the option's check
  kMinOrSize,  // min (0) or a size -> bytes
  kBudget,     // a weight budget (WeightBudget::parse)
  kUnits,      // search (true), chunks (false) or, dlbench's, chunks:SIZE (false; chunk_bytes SIZE)
};

// One row: a flag and the option it sets. Text fields are nullptr where unused.
struct SessionFlag {
  const char* flag = nullptr;    // dlrun's spelling, "--weight-budget"
  const char* option = nullptr;  // the SessionOptions option it sets (runtime/options_table.h)
  const char* help = nullptr;    // dlrun's help text
  FlagApplies applies = FlagApplies::kEveryRun;
  FlagConvert convert = FlagConvert::kSame;
  const char* default_text = "";     // the flag's default text (a switch: unused)
  const char* choices = nullptr;     // the words it accepts, comma-separated (a CLI11 check where single)
  const char* option_words = nullptr;  // kWords, kSwitch: see FlagConvert
  const char* expected = nullptr;    // a bad word's "expected ..." where not the choices listed
  int min = 0, max = 0;              // min < max: an integer in [min, max] (INT, a CLI11 range check)
  bool sweep = false;                // dlbench: a comma-separated list
  const char* list_help = nullptr;   // appended to help where a list, instead of the usual sentence
  // dlbench where it differs: its spelling (of a switch: the opposite switch), help, default.
  const char* bench_flag = nullptr;
  const char* bench_help = nullptr;
  const char* bench_default = nullptr;
};

// The table, in dlrun's order (apply_session_flags() converts and refuses in this order).
const std::vector<SessionFlag>& session_flags();
// The row's spelling in `tool`.
const char* flag_name(const SessionFlag& row, FlagTool tool);

// The texts of the table's flags for one tool: each row's given text or the tool's
// default; a switch's text is its option's ("true"/"false"). Rows are named by option
// (an unknown name throws std::out_of_range: a programming error).
class SessionFlagTexts {
 public:
  explicit SessionFlagTexts(FlagTool tool);
  FlagTool tool() const { return m_tool; }
  std::string text(const std::string& option) const;
  void set(const std::string& option, const std::string& text);  // a switch: its option's text
  void reset(const std::string& option);                         // back to the tool's default
  bool changed(const std::string& option) const;                 // not the tool's default

 private:
  friend CLI::Option* add_session_flag(CLI::App&, SessionFlagTexts*, size_t);
  struct Entry {
    std::string text;  // a value's text
    bool on = false;   // a switch given
  };
  size_t index(const std::string& option) const;
  FlagTool m_tool;
  std::vector<Entry> m_entries;  // one per row; never resized (CLI11 keeps pointers into it)
};

// Adds the rows spelt `flags` in t's tool, in that order, to `app` (in `group` unless
// empty), writing into *t, which must outlive the parse. dlrun's single values, dlbench's
// sweepable rows as lists; every value shows its default. An unknown flag throws
// std::invalid_argument (a programming error).
void add_session_flags(CLI::App& app, SessionFlagTexts* t, const std::vector<std::string>& flags,
                       const std::string& group = "");
// Adds the rows not on `app` yet, in the table's order: each tool calls it last, so that a
// new row needs no line in either tool (add_session_flags() places the known ones).
void add_other_session_flags(CLI::App& app, SessionFlagTexts* t, const std::string& group = "");

// Sets every row's option of *o from t, one value per flag (a list of dlbench's: one
// item), through dlr::set_option_text; then refuses a flag given where it does not apply
// (o's device, mode and weights_from). One-line errors naming the flag. Ranges and the
// options' combinations are validate_options()'s (the caller's).
Status apply_session_flags(const SessionFlagTexts& t, SessionOptions* o);
// Sets the option of the row of `option` (and chunk_bytes for --units chunks:SIZE) of *o
// from one text as apply_session_flags() does (its errors), without refusals: dlbench's
// single items (a list's, checked before any work; a simulation's precision).
Status set_session_flag(FlagTool tool, const std::string& option, const std::string& text, SessionOptions* o);

// Places the calling thread as t's --thread-priority and --cpu-affinity ask
// (dlr::apply_thread_options): the tool's inference thread, before any session opens.
Status apply_thread_flags(const SessionFlagTexts& t);

// Whether a row of `applies` means something for the run of `o`.
bool flag_applies(FlagApplies applies, const SessionOptions& o);
// The refusal of flag `flag` (its row's or a tool's own) given where it does not apply.
Status flag_refused(const std::string& flag, FlagApplies applies);
// Resets the rows that do not apply to the run t's device, mode and weights-from texts
// describe (single values): dlbench ignores them in such a configuration.
void reset_inapplicable(SessionFlagTexts* t);

}  // namespace dlr::tools
