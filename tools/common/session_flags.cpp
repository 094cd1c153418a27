// The session-option flags dlrun and dlbench share (session_flags.h): the table, the
// registration on a CLI::App and the conversion of their texts into SessionOptions.
#include "tools/common/session_flags.h"

#include <stdexcept>

#include "runtime/options_text.h"
#include "runtime/session.h"

namespace dlr::tools {
namespace {

using A = FlagApplies;
using C = FlagConvert;

// A row under construction: the flag, its option, where it applies and dlrun's help,
// then what differs from a plain value of the option's own text.
struct Row {
  SessionFlag r;
  Row(const char* flag, const char* option, FlagApplies applies, const char* help) {
    r.flag = flag;
    r.option = option;
    r.applies = applies;
    r.help = help;
  }
  Row& dflt(const char* text) {
    r.default_text = text;
    return *this;
  }
  Row& one_of(const char* choices) {
    r.choices = choices;
    return *this;
  }
  Row& words(const char* choices, const char* option_words) {
    r.convert = C::kWords;
    r.choices = choices;
    r.option_words = option_words;
    return *this;
  }
  Row& switches_to(const char* option_text) {
    r.convert = C::kSwitch;
    r.option_words = option_text;
    return *this;
  }
  Row& convert(FlagConvert c) {
    r.convert = c;
    return *this;
  }
  Row& ints(int lo, int hi) {
    r.min = lo;
    r.max = hi;
    return *this;
  }
  Row& expected(const char* text) {
    r.expected = text;
    return *this;
  }
  Row& sweep(const char* list_help = nullptr) {
    r.sweep = true;
    r.list_help = list_help;
    return *this;
  }
  Row& bench(const char* flag, const char* help) {
    r.bench_flag = flag;
    r.bench_help = help;
    return *this;
  }
  Row& bench_default(const char* text) {
    r.bench_default = text;
    return *this;
  }
  operator SessionFlag() const { return r; }
};

// The sentence a sweepable row's help gets in dlbench (unless the row has its own).
constexpr const char* kListHelp = "comma-separated to compare in one run";

// The rows of the general and CUDA options, in dlrun's order.
std::vector<SessionFlag> device_rows() {
  return {
      Row("--threads", "threads", A::kEveryRun,
          "CPU threads (OpenMP) for kernels and pre/post-processing; 0: auto (docs/library.md, \"CPU threads\")")
          .dflt("0").ints(0, 1024),
      Row("--thread-priority", "thread_priority", A::kEveryRun,
          "priority of the inference thread and the runtime's (storage readers): normal, high (nice -10) or "
          "realtime (SCHED_FIFO 10); where not permitted a warning, and normal")
          .dflt("normal").one_of("normal,high,realtime"),
      Row("--cpu-affinity", "cpu_affinity", A::kEveryRun,
          "the CPUs of the same threads, e.g. 2,3 or 4-7 (default: unchanged)"),
      Row("--device", "device", A::kEveryRun, "cpu (the reference backend) or cuda")
          .dflt("cpu").one_of("cpu,cuda").expected("cuda or cpu").sweep().bench_default("cuda"),
      Row("--precision", "precision", A::kEveryRun, "fp32, tf32 or fp16 (cuda only; cpu runs fp32)")
          .dflt("fp32").one_of("fp32,tf32,fp16").sweep(),
      Row("--mode", "mode", A::kEveryRun, "cuda: preload (all weights resident) or stream (demand layering)")
          .dflt("preload").one_of("preload,stream").sweep(),
      Row("--weight-budget", "weight_budget", A::kCudaStream,
          "stream mode: device memory for weights: min (about two of the largest layer), all, auto (the smallest "
          "within --max-slowdown of preload), NN%, NNMiB, NNMB or bytes")
          .dflt("min").convert(C::kBudget).sweep(),
      Row("--max-slowdown", "max_slowdown", A::kCudaStream,
          "--weight-budget auto: predicted latency at most this much above preload's, NN% (default 5%)")
          .dflt("5%").convert(C::kPercent),
      Row("--weight-pool", "weight_pool", A::kCudaStream,
          "stream mode: auto (ring where the GPU can map it), ring or slots (K slots of the largest layer)")
          .dflt("auto").one_of("auto,ring,slots").sweep(),
      Row("--slot-size", "slot_bytes", A::kEveryRun,
          "run every layer whose weights exceed SIZE as slices that fit (e.g. 1MiB), so the stream pool can be "
          "smaller than the largest layer; 0: none unless the budget holds no pool of whole layers (then a session "
          "takes the largest slot that fits, a runtime's model 1MiB)")
          .dflt("0").convert(C::kSize).sweep(),
      Row("--slice-by", "slice_by", A::kEveryRun,
          "how --slot-size cuts a layer: auto (cuda: the faster of the two per layer, timed at the first open; cpu: "
          "filters), filters (slices of its output channels) or channels (of its input channels, adding partial "
          "sums)")
          .dflt("auto").one_of("auto,filters,channels"),
      Row("--weight-format", "weight_format", A::kEveryRun,
          "how conv weights are stored and streamed: fp (the run's precision) or int8 (one scale per output "
          "channel for filters of 128 weights or more, smaller ones kept fp; expanded as each conv runs: about "
          "half the bytes of fp16; detections may differ slightly)")
          .dflt("fp").one_of("fp,int8").sweep(),
      Row("--units", "unit_search", A::kCudaStream,
          "stream mode, ring pool: search (copy units chosen by simulation) or chunks (the profile's chunk size)")
          .dflt("search").one_of("search,chunks").convert(C::kUnits).expected("search, chunks or chunks:SIZE")
          .sweep("also chunks:SIZE (equal chunks of SIZE, e.g. chunks:16MiB); comma-separated to compare in one run"),
      Row("--residency", "residency", A::kCudaStream,
          "stream mode, ring pool: the weights kept resident: greedy (chosen by simulation), largest-late (the "
          "largest layers) or none (all streamed)")
          .dflt("greedy").one_of("greedy,largest-late,none").sweep(),
      Row("--tail-prefetch", "tail_prefetch", A::kCudaStream,
          "stream mode, weights from host: on (each inference copies the next one's first units under its own last "
          "layers, as many as the planner predicts a gain from) or off")
          .dflt("off").one_of("on,off").sweep(),
      Row("--staging-early", "staging_early", A::kCudaStream,
          "stream mode, ring: on (a weight blob staged in idle activation bytes may be copied as soon as those bytes "
          "are free, where the planner predicts it faster) or off (always just before the ring's units needed after "
          "its layer)")
          .dflt("on").one_of("on,off").sweep(),
      Row("--staging-runs", "staging_runs", A::kCudaStream,
          "stream mode, ring: on (consecutive weight blobs staged in idle activation bytes may be placed together and "
          "copied in one copy, where the planner predicts it faster) or off (each staged blob copied alone)")
          .dflt("on").one_of("on,off").sweep(),
      Row("--expansion-stage", "expansion_stage", A::kCudaStream,
          "--weight-format int8: on (the planner runs each expansion of int8 weights on a stage of its own, as the "
          "engine does, from the expansion times measured at open; a session of its own) or off (the expansions counted "
          "inside the kernel times)")
          .dflt("on").one_of("on,off").sweep(),
      Row("--stage-whole", "stage_whole", A::kCudaStream,
          "stream mode, ring, with slices: on (a layer above the slot whose whole weights find room in idle "
          "activation bytes before it runs is copied there whole and runs unsliced) or off (every such layer "
          "in slices)")
          .dflt("on").one_of("on,off").sweep(),
      Row("--copy-profile", "copy_profile", A::kCudaStream,
          "stream mode: copy-engine profile: auto (measured on this GPU once, then cached), a dlprobe JSON file, "
          "h100, discrete or jetson-xavier")
          .dflt("auto"),
      Row("--fusion", "fusion", A::kCuda,
          "cuda: what a convolution's epilogue takes in: epilogue (a shortcut right after a conv added in the conv's "
          "bias + activation pass), cudnn (also conv + bias + activation as one cuDNN graph, fp16 and tf32), auto (with the "
          "kernel cache: per configuration the faster of the two, timed at the first open and kept; else "
          "epilogue) or off (a pass each)")
          .dflt("auto").one_of("auto,off,epilogue,cudnn"),
      Row("--layout", "layout", A::kCuda,
          "cuda: activation layout: auto (NHWC for fp16 and tf32; for fp32 NHWC with 3xTF32 tensor-core convs where "
          "the kernel cache is on, every weight is resident and the GPU has TF32 tensor cores, which costs workspace "
          "for their split operands; else NCHW), nchw or nhwc")
          .dflt("auto").words("auto,nchw,nhwc", "-1,0,1").sweep(),
      Row("--find", "find_algorithms", A::kCuda,
          "cuda: time cuDNN's algorithms at open (cudnnFind) instead of taking its heuristics' first, and with "
          "--fusion auto the fastest of up to four cuDNN engines per fused graph (a longer first open; kept with "
          "the kernel cache)")
          .switches_to("true"),
      Row("--decode", "decode", A::kCuda,
          "cuda: where [yolo] heads' candidates are picked: gpu (objectness > thresh on the device, only those rows "
          "downloaded), cpu (every output downloaded whole and scanned on the host) or auto (gpu for a batch of "
          "several images, cpu for one); the same detections")
          .dflt("auto").one_of("auto,cpu,gpu").sweep(),
      Row("--no-graph", "cuda_graph", A::kCuda,
          "cuda: do not capture the inference in a CUDA graph (dlrun: a run of one image never does)")
          .switches_to("false"),
      Row("--warm-threads", "warm_threads", A::kCuda,
          "cuda: threads that run each distinct convolution once at open, so that cuDNN and the driver load their "
          "kernels in parallel before the graph capture or the first inference (0: none)")
          .dflt("4").ints(0, 64).sweep(),
      Row("--no-kernel-cache", "cache_kernel_times", A::kEveryRun,
          "keep nothing between runs: measure kernel times at open (stream mode) and ask cuDNN for every "
          "convolution's algorithm (cuda) (default: reuse this GPU's kernel times and cuDNN algorithm choices for "
          "this model from the user's cache directory, kernel-times/ and conv-algos/, or measure/choose and keep "
          "them there)")
          .switches_to("false")
          .bench("--cache",
                 "keep kernel times (stream mode) and cuDNN algorithm choices per GPU and model in the user's cache "
                 "and reuse them, as dlrun does (run twice: the second run's startup line is a warm start)"),
      Row("--no-calibrate", "calibrate_copies", A::kCudaStream,
          "stream mode: plan with the copy profile as probed (default: time 5 inferences' copies at open and plan "
          "again)")
          .switches_to("false"),
  };
}

// The rows of the weights from storage, then --batch.
std::vector<SessionFlag> storage_and_batch_rows() {
  return {
      Row("--weights-from", "weights_from", A::kEveryRun,
          "host (in memory) or storage (each inference reads its weights from a prepared weight file with direct "
          "I/O: --device cpu, or --device cuda --mode stream)")
          .dflt("host").one_of("host,storage").sweep(),
      Row("--host-budget", "host_budget", A::kStorage,
          "storage: host memory for weights (staging; on the CPU also blobs kept): min (2 x the largest read) or a "
          "size (on a GPU below min: smaller copy units, two reads to the staging)")
          .dflt("min").convert(C::kMinOrSize),
      Row("--zero-copy", "zero_copy", A::kStorage,
          "storage, cuda: on (reads land in mapped memory the kernels read; Jetson), off (read -> copy -> kernel) "
          "or auto (on for integrated GPUs)")
          .dflt("auto").words("auto,on,off", "-1,1,0").sweep(),
      Row("--read-depth", "read_depth", A::kStorage, "storage: reads in flight (1..64)").dflt("8").ints(1, 64),
      Row("--read-block", "read_block_bytes", A::kStorage,
          "storage: bytes per read request (multiple of 4 KiB, e.g. 1MiB)")
          .dflt("1MiB").convert(C::kSize),
      Row("--reader", "reader", A::kStorage,
          "storage: auto (io_uring where the kernel allows it), uring or threads (pread)")
          .dflt("auto").one_of("auto,uring,threads"),
      Row("--prefetch-reads", "prefetch_reads", A::kStorage,
          "storage: on (read the next inference's first weights while this one still runs) or off")
          .dflt("on").one_of("on,off"),
      Row("--cache-hits", "cache_hits", A::kStorage,
          "storage: on (bytes of the prepared file that the page cache holds are read from it, the rest with direct "
          "I/O) or off (every read direct, as a cold start reads)")
          .dflt("on").one_of("on,off").sweep(),
      Row("--prepared", "prepared_path", A::kStorage,
          "storage: the prepared weight file (made on first use; default: in $DLR_CACHE_DIR or ~/.cache/dlrun)"),
      // ---- inputs ----
      Row("--batch", "batch", A::kEveryRun, "images per inference (frames are grouped in input order)")
          .dflt("1").ints(1, 64).sweep(),
  };
}

std::vector<SessionFlag> make_table() {
  std::vector<SessionFlag> rows = device_rows();
  for (const SessionFlag& r : storage_and_batch_rows()) rows.push_back(r);
  return rows;
}

std::vector<std::string> split_words(const char* list) {
  std::vector<std::string> out;
  std::string w;
  for (const char* p = list; ; ++p) {
    if (*p == ',' || *p == '\0') {
      out.push_back(w), w.clear();
      if (*p == '\0') return out;
    } else {
      w += *p;
    }
  }
}

// "a, b or c" of a row's choices, or its own `expected`.
std::string expected_words(const SessionFlag& r) {
  if (r.expected) return r.expected;
  const std::vector<std::string> w = split_words(r.choices);
  std::string s;
  for (size_t i = 0; i < w.size(); ++i) s += (i == 0 ? "" : i + 1 == w.size() ? " or " : ", ") + w[i];
  return s;
}

// "FLAG TEXT: expected a, b or c": a word the row does not take.
Status bad_word(const SessionFlag& r, const std::string& flag, const std::string& text) {
  return invalid_argument(flag + " " + text + ": expected " + expected_words(r));
}

std::string negation(const std::string& option_text) { return option_text == "true" ? "false" : "true"; }

// A switch's option text in `tool`: dlbench's opposite switch gives the negation.
std::string switch_text(const SessionFlag& r, FlagTool tool, bool on) {
  const bool opposite = tool == FlagTool::kDlbench && r.bench_flag;
  return on != opposite ? r.option_words : negation(r.option_words);
}

std::string default_text(const SessionFlag& r, FlagTool tool) {
  return tool == FlagTool::kDlbench && r.bench_default ? r.bench_default : r.default_text;
}

// A size as WeightBudget::parse reads sizes; `min` (0) where allowed.
Expected<int64_t> parse_size(const std::string& flag, const std::string& text, bool allow_min) {
  if (allow_min && text == "min") return int64_t(0);
  const Expected<WeightBudget> b = WeightBudget::parse(text);
  if (!b.ok() || b->kind != WeightBudget::Kind::kBytes)
    return invalid_argument(flag + " \"" + text + "\": expected " + (allow_min ? "min or " : "") +
                            "a size such as 64MiB, 8MB or a byte count");
  return b->bytes;
}

// --units: search, chunks or chunks:SIZE (*chunk_bytes: SIZE, else 0).
Expected<std::string> units_text(const SessionFlag& r, const std::string& flag, const std::string& text,
                                 int64_t* chunk_bytes) {
  const std::string prefix = "chunks:";
  *chunk_bytes = 0;
  if (text == "search" || text == "chunks") return std::string(text == "search" ? "true" : "false");
  if (text.rfind(prefix, 0) != 0) return bad_word(r, flag, text);
  const Expected<WeightBudget> size = WeightBudget::parse(text.substr(prefix.size()));
  if (!size.ok() || size->kind != WeightBudget::Kind::kBytes)
    return invalid_argument(flag + " " + text + ": expected a chunk size after 'chunks:', e.g. chunks:16MiB");
  *chunk_bytes = size->bytes;
  return std::string("false");
}

// The option's text for a flag's text; *chunk_bytes: --units chunks:SIZE's SIZE (else 0).
Expected<std::string> option_text_of(const SessionFlag& r, FlagTool tool, const std::string& text,
                                     int64_t* chunk_bytes) {
  *chunk_bytes = 0;
  const std::string flag = flag_name(r, tool);
  switch (r.convert) {
    case C::kSwitch: return text;  // already the option's
    case C::kSame:
    case C::kWords: {
      const std::vector<std::string> choices = r.choices ? split_words(r.choices) : std::vector<std::string>();
      for (size_t i = 0; i < choices.size(); ++i)
        if (text == choices[i]) return r.convert == C::kWords ? split_words(r.option_words)[i] : text;
      if (!choices.empty()) return bad_word(r, flag, text);
      return text;
    }
    case C::kPercent: {
      DLR_ASSIGN_OR_RETURN(const double fraction, parse_percentage(text, flag));
      return value_text(fraction);
    }
    case C::kSize:
    case C::kMinOrSize: {
      if (text == "0") return text;  // "none" where the option allows it (--slot-size); its check decides
      DLR_ASSIGN_OR_RETURN(const int64_t bytes, parse_size(flag, text, r.convert == C::kMinOrSize));
      return value_text(bytes);
    }
    case C::kBudget: {
      const Expected<WeightBudget> b = WeightBudget::parse(text);  // its message names the budget
      if (!b.ok())  // dlrun's names the flag too
        return invalid_argument((tool == FlagTool::kDlrun ? flag + ": " : "") + b.status().message());
      return value_text(*b);
    }
    case C::kUnits: return units_text(r, flag, text, chunk_bytes);
  }
  return text;
}

// Sets the row's option (and --units chunks:SIZE's chunk_bytes) of *o from the flag's text.
Status set_row(const SessionFlag& r, FlagTool tool, const std::string& text, SessionOptions* o) {
  int64_t chunk_bytes = 0;
  DLR_ASSIGN_OR_RETURN(const std::string value, option_text_of(r, tool, text, &chunk_bytes));
  const Status st = set_option_text(o, r.option, value);
  if (!st.ok()) {  // "OPTION 'VALUE': what parse_value expected" -> "FLAG TEXT: what it expected"
    const std::string named = std::string(r.option) + " '" + value + "': ", m = st.message();
    return invalid_argument(std::string(flag_name(r, tool)) + " " + text + ": " +
                            (m.rfind(named, 0) == 0 ? m.substr(named.size()) : m));
  }
  if (chunk_bytes > 0) o->chunk_bytes = chunk_bytes;
  return Status();
}

}  // namespace

const std::vector<SessionFlag>& session_flags() {
  static const std::vector<SessionFlag> table = make_table();
  return table;
}

const char* flag_name(const SessionFlag& row, FlagTool tool) {
  return tool == FlagTool::kDlbench && row.bench_flag ? row.bench_flag : row.flag;
}

SessionFlagTexts::SessionFlagTexts(FlagTool tool) : m_tool(tool), m_entries(session_flags().size()) {
  for (size_t i = 0; i < m_entries.size(); ++i) m_entries[i].text = default_text(session_flags()[i], tool);
}

size_t SessionFlagTexts::index(const std::string& option) const {
  for (size_t i = 0; i < session_flags().size(); ++i)
    if (option == session_flags()[i].option) return i;
  throw std::out_of_range("no session flag sets option '" + option + "'");
}

std::string SessionFlagTexts::text(const std::string& option) const {
  const size_t i = index(option);
  const SessionFlag& r = session_flags()[i];
  return r.convert == C::kSwitch ? switch_text(r, m_tool, m_entries[i].on) : m_entries[i].text;
}

void SessionFlagTexts::set(const std::string& option, const std::string& text) {
  const size_t i = index(option);
  const SessionFlag& r = session_flags()[i];
  if (r.convert == C::kSwitch) m_entries[i].on = text == switch_text(r, m_tool, true);
  else m_entries[i].text = text;
}

void SessionFlagTexts::reset(const std::string& option) {
  const size_t i = index(option);
  m_entries[i] = Entry{default_text(session_flags()[i], m_tool), false};
}

bool SessionFlagTexts::changed(const std::string& option) const {
  const size_t i = index(option);
  const SessionFlag& r = session_flags()[i];
  return r.convert == C::kSwitch ? m_entries[i].on : m_entries[i].text != default_text(r, m_tool);
}

// Row i on `app` in t's tool: its spelling, help, checks and entry.
CLI::Option* add_session_flag(CLI::App& app, SessionFlagTexts* t, size_t i) {
  const SessionFlag& r = session_flags()[i];
  const bool bench = t->m_tool == FlagTool::kDlbench, list = bench && r.sweep;
  std::string help = bench && r.bench_help ? r.bench_help : r.help;
  if (list) help += std::string("; ") + (r.list_help ? r.list_help : kListHelp);
  if (r.convert == C::kSwitch) return app.add_flag(flag_name(r, t->m_tool), t->m_entries[i].on, help);
  CLI::Option* o = app.add_option(flag_name(r, t->m_tool), t->m_entries[i].text, help)->capture_default_str();
  if (!list && r.min < r.max) o->type_name("INT")->check(CLI::Range(r.min, r.max));
  if (!list && r.choices) o->check(CLI::IsMember(split_words(r.choices)));
  return o;
}

void add_session_flags(CLI::App& app, SessionFlagTexts* t, const std::vector<std::string>& flags,
                       const std::string& group) {
  const std::vector<SessionFlag>& rows = session_flags();
  for (const std::string& f : flags) {
    size_t i = 0;
    while (i < rows.size() && f != flag_name(rows[i], t->tool())) ++i;
    if (i == rows.size()) throw std::invalid_argument("no session flag " + f);
    CLI::Option* o = add_session_flag(app, t, i);
    if (!group.empty()) o->group(group);
  }
}

void add_other_session_flags(CLI::App& app, SessionFlagTexts* t, const std::string& group) {
  for (size_t i = 0; i < session_flags().size(); ++i)
    if (!app.get_option_no_throw(flag_name(session_flags()[i], t->tool()))) {
      CLI::Option* o = add_session_flag(app, t, i);
      if (!group.empty()) o->group(group);
    }
}

Status apply_session_flags(const SessionFlagTexts& t, SessionOptions* o) {
  const std::vector<SessionFlag>& rows = session_flags();
  for (const SessionFlag& r : rows) DLR_RETURN_IF_ERROR(set_row(r, t.tool(), t.text(r.option), o));
  for (const FlagApplies where : {A::kCudaStream, A::kCuda, A::kStorage})
    for (const SessionFlag& r : rows)
      if (r.applies == where && t.changed(r.option) && !flag_applies(where, *o))
        return flag_refused(flag_name(r, t.tool()), where);
  return Status();
}

Status set_session_flag(FlagTool tool, const std::string& option, const std::string& text, SessionOptions* o) {
  for (const SessionFlag& r : session_flags())
    if (option == r.option) return set_row(r, tool, text, o);
  throw std::out_of_range("no session flag sets option '" + option + "'");
}

Status apply_thread_flags(const SessionFlagTexts& t) {
  SessionOptions o;
  for (const char* option : {"thread_priority", "cpu_affinity"})
    DLR_RETURN_IF_ERROR(set_session_flag(t.tool(), option, t.text(option), &o));
  return apply_thread_options(o);
}

bool flag_applies(FlagApplies applies, const SessionOptions& o) {
  switch (applies) {
    case A::kEveryRun: return true;
    case A::kCuda: return o.device == DeviceKind::kCUDA;
    case A::kCudaStream: return o.device == DeviceKind::kCUDA && o.mode == WeightMode::kStream;
    case A::kStorage: return o.weights_from == WeightsFrom::kStorage;
  }
  return true;
}

Status flag_refused(const std::string& flag, FlagApplies applies) {
  const char* where = applies == A::kCudaStream ? "--device cuda --mode stream"
                      : applies == A::kCuda     ? "--device cuda"
                                                : "--weights-from storage";
  return invalid_argument(flag + " applies to " + where + " only");
}

void reset_inapplicable(SessionFlagTexts* t) {
  SessionOptions run;  // the run's device, mode and weights-from; a bad text is apply's error
  for (const char* option : {"device", "mode", "weights_from"}) (void)set_option_text(&run, option, t->text(option));
  for (const SessionFlag& r : session_flags())
    if (!flag_applies(r.applies, run)) t->reset(r.option);
}

}  // namespace dlr::tools
