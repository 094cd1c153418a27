// storage_options(): the command-line form of the weights-from-storage options.
#include "tools/common/tool_support.h"

namespace dlr::tools {
namespace {

// "min" (0) or a size ("64MiB", "8MB", bytes) as WeightBudget::parse reads sizes.
Expected<int64_t> parse_size(const std::string& text, const std::string& option, bool allow_min) {
  if (allow_min && text == "min") return int64_t(0);
  const Expected<WeightBudget> b = WeightBudget::parse(text);
  if (!b.ok() || b->kind != WeightBudget::Kind::kBytes)
    return invalid_argument(option + " \"" + text + "\": expected " + (allow_min ? "min or " : "") +
                            "a size such as 64MiB, 8MB or a byte count");
  return b->bytes;
}

}  // namespace

Status storage_options(const std::string& weights_from, const std::string& host_budget, const std::string& zero_copy,
                       int read_depth, const std::string& read_block, const std::string& reader,
                       const std::string& prepared, const std::string& prefetch_reads, SessionOptions* opt) {
  if (!parse_weights_from(weights_from, &opt->weights_from))
    return invalid_argument("--weights-from " + weights_from + ": expected host or storage");
  const bool storage = opt->weights_from == WeightsFrom::kStorage;
  const std::pair<const char*, bool> storage_only[] = {{"--host-budget", host_budget != "min"},
                                                       {"--zero-copy", zero_copy != "auto"},
                                                       {"--read-depth", read_depth != 8},
                                                       {"--read-block", read_block != "1MiB"},
                                                       {"--reader", reader != "auto"},
                                                       {"--prepared", !prepared.empty()},
                                                       {"--prefetch-reads", prefetch_reads != "on"}};
  for (const auto& [name, given] : storage_only)
    if (given && !storage) return invalid_argument(std::string(name) + " applies to --weights-from storage only");
  DLR_ASSIGN_OR_RETURN(opt->host_budget, parse_size(host_budget, "--host-budget", true));
  DLR_ASSIGN_OR_RETURN(opt->read_block_bytes, parse_size(read_block, "--read-block", false));
  opt->zero_copy = zero_copy == "on" ? 1 : zero_copy == "off" ? 0 : -1;
  opt->read_depth = read_depth;
  if (!parse_reader_kind(reader, &opt->reader))
    return invalid_argument("--reader " + reader + ": expected auto, uring or threads");
  opt->prepared_path = prepared;
  if (prefetch_reads != "on" && prefetch_reads != "off")
    return invalid_argument("--prefetch-reads " + prefetch_reads + ": expected on or off");
  opt->prefetch_reads = prefetch_reads == "on";
  return Status();
}

}  // namespace dlr::tools
