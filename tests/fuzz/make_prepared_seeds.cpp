// Writes the seed corpus of the prepared-file harness (fuzz_prepared.cpp): valid
// prepared files of the fixed model (fuzz_prepared_model.h) with synthetic weights,
// each behind the harness's flag byte.
//   dlr_fuzz_prepared_seeds OUT_DIR      (tests/fuzz/corpus/prepared)
// Deterministic: the same bytes on every run (seeded synthetic weights, fixed identity).
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "loaders/synthetic_weights.h"
#include "loaders/weights_file.h"
#include "runtime/weight_source.h"
#include "tests/fuzz/fuzz_prepared_model.h"

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "dlr_fuzz_prepared_seeds: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: dlr_fuzz_prepared_seeds OUT_DIR");
  const std::string out = argv[1];
  char tmpl[] = "/tmp/dlr_prepared_seeds_XXXXXX";
  if (!mkdtemp(tmpl)) return fail("mkdtemp failed");
  const std::string tmp = tmpl;
  const dlr::NetworkDesc net = dlr::fuzz::prepared_net();
  const std::string weights_path = tmp + "/w.weights";
  dlr::Status st = dlr::write_synthetic_weights(net, weights_path, dlr::SyntheticOptions{});
  if (!st.ok()) return fail(st.message());
  dlr::Expected<dlr::WeightsFile> wf = dlr::WeightsFile::open(weights_path, net);
  if (!wf.ok()) return fail(wf.status().message());
  const std::unique_ptr<dlr::WeightSource> source = dlr::weights_file_source(net, *wf);

  // name, fp16 CUDA plan, flag byte (bit 0 reseal the header CRC, bit 1 fp16 plan, bit 2 expect the identity)
  struct Seed {
    const char* name;
    bool fp16;
    unsigned char flags;
  };
  const Seed seeds[] = {{"fp32_nchw", false, 0}, {"fp32_nchw_expect", false, 4},
                        {"fp16_nhwc", true, 2},  {"fp16_nhwc_reseal_expect", true, 7}};
  int rc = 0;
  for (const Seed& s : seeds) {
    const dlr::ExecutionPlan plan = dlr::fuzz::prepared_plan(net, s.fp16);
    const std::string file = tmp + "/" + s.name + ".dlrw";
    st = dlr::write_prepared_file(file, plan, *source, dlr::fuzz::prepared_identity_for(plan));
    if (!st.ok()) {
      rc = fail(st.message());
      break;
    }
    std::ifstream in(file, std::ios::binary);
    std::vector<char> bytes(1, char(s.flags));
    bytes.insert(bytes.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::ofstream o(out + "/" + s.name, std::ios::binary | std::ios::trunc);
    o.write(bytes.data(), std::streamsize(bytes.size()));
    if (!o) {
      rc = fail(out + "/" + s.name + ": cannot write");
      break;
    }
    std::printf("%s: %zu bytes\n", s.name, bytes.size());
    std::remove(file.c_str());
  }
  std::remove(weights_path.c_str());
  rmdir(tmp.c_str());
  return rc;
}
