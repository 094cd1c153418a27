// libFuzzer harness: the compiled model's JSON (`dlrun --save-plan`, read back by
// compiled_model_from_json) and the copy profile JSON (`dlprobe`, `--copy-profile
// FILE`). Every error is one printable line; a model or profile that loads writes
// JSON that loads again to the same JSON (the round trip tests and tools rely on).
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/compile/compile.h"
#include "runtime/streaming/copy_profile.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (size_t(1) << 20)) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  dlr::Expected<dlr::CompiledModel> m = dlr::compiled_model_from_json(text, "fuzz.json");
  if (!m.ok()) {
    dlr::fuzz::require_one_line(m.status());
  } else {
    const std::string once = dlr::compiled_model_to_json(*m);
    dlr::Expected<dlr::CompiledModel> again = dlr::compiled_model_from_json(once, "again.json");
    dlr::fuzz::require(again.ok(), "model JSON written by to_json does not load", again.status().message());
    dlr::fuzz::require(dlr::compiled_model_to_json(*again) == once, "model JSON round trip");
    // (A loaded model is for reading and diffing; no engine runs one, so its internal
    // consistency is not checked and to_text() is not called on fuzzed data.)
  }
  dlr::Expected<dlr::CopyProfile> p = dlr::CopyProfile::from_json_text(text, "fuzz-profile.json");
  if (!p.ok()) {
    dlr::fuzz::require_one_line(p.status());
  } else {
    const std::string once = p->to_json_text();
    dlr::Expected<dlr::CopyProfile> again = dlr::CopyProfile::from_json_text(once, "again.json");
    dlr::fuzz::require(again.ok(), "profile JSON written by to_json does not load", again.status().message());
    dlr::fuzz::require(again->to_json_text() == once, "profile JSON round trip");
    for (int64_t b : {int64_t(1), int64_t(4096), int64_t(1) << 20, int64_t(1) << 30})
      dlr::fuzz::require(p->copy_ms(b) >= 0, "negative copy time");
    for (int64_t b : {int64_t(1), int64_t(4096), int64_t(1) << 20, int64_t(1) << 30})
      for (int d : {0, 1, 3, 64})
        dlr::fuzz::require(p->storage_or_default().read_ms(b, int64_t(1) << 20, d) >= 0, "negative or NaN read time");
  }
  return 0;
}
