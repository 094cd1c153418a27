// libFuzzer harness: the prepared weight file reader (runtime/storage/prepared_file.h)
// against the fixed model of fuzz_prepared_model.h. Input: one flag byte, then the
// file's bytes (written to a memfd that PreparedFile::open reads by path).
//   flag bit 0: set the header CRC32C right before opening (so mutations reach the
//               table and plan checks behind the CRC); bit 1: the CUDA fp16 NHWC plan
//               instead of the CPU fp32 NCHW one; bit 2: expect the seeds' identity;
//               bit 3: with bit 2, expect it without the content hash (mtime check).
// Properties: every error is one printable line; an accepted file's table obeys the
// format's rules (aligned, in order, inside the file, the plan's sizes); verify_all()
// and prepared_file_source() then either fail in one line or agree (a file that
// verifies gives every blob back through the source).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/storage/crc32c.h"
#include "tests/fuzz/fuzz_prepared_model.h"

namespace {

int file_fd() {
  static const int fd = memfd_create("fuzz.dlrw", MFD_CLOEXEC);
  dlr::fuzz::require(fd >= 0, "memfd_create");
  return fd;
}

struct Fixed {
  dlr::NetworkDesc net = dlr::fuzz::prepared_net();
  dlr::ExecutionPlan plans[2] = {dlr::fuzz::prepared_plan(net, false), dlr::fuzz::prepared_plan(net, true)};
};

const Fixed& fixed() {
  static const Fixed f;
  return f;
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (size_t(4) << 20)) return 0;
  const uint8_t flags = data[0];
  std::vector<uint8_t> file(data + 1, data + size);
  if ((flags & 1) && file.size() >= 24) {  // reseal over the header size the file claims (clamped to the file)
    const size_t header = size_t(std::min<uint64_t>(get_u64(file.data() + 16), file.size()));
    std::memset(file.data() + 12, 0, 4);
    const uint32_t crc = dlr::crc32c(file.data(), header);
    for (int i = 0; i < 4; ++i) file[size_t(12 + i)] = uint8_t(crc >> (8 * i));
  }
  const int fd = file_fd();
  dlr::fuzz::require(ftruncate(fd, 0) == 0 &&
                         (file.empty() || pwrite(fd, file.data(), file.size(), 0) == ssize_t(file.size())),
                     "memfd write");
  const std::string path = "/proc/self/fd/" + std::to_string(fd);

  const dlr::ExecutionPlan& plan = fixed().plans[(flags & 2) ? 1 : 0];
  dlr::PreparedIdentity expect = dlr::fuzz::prepared_identity_for(plan);
  if (flags & 8) expect.weights_hash = 0;
  dlr::Expected<dlr::PreparedFile> f = dlr::PreparedFile::open(path, plan, (flags & 4) ? &expect : nullptr);
  if (!f.ok()) {
    dlr::fuzz::require_one_line(f.status());
    return 0;
  }

  const int64_t n = int64_t(file.size());
  dlr::fuzz::require(f->file_bytes() == n, "file size");
  dlr::fuzz::require(f->header_bytes() > 0 && f->header_bytes() % dlr::kPreparedAlign == 0, "header size");
  dlr::fuzz::require(f->blobs().size() == plan.weights.size(), "blob count");
  int64_t at = f->header_bytes();
  for (size_t i = 0; i < f->blobs().size(); ++i) {
    const dlr::PreparedBlob& b = f->blobs()[i];
    dlr::fuzz::require(b.offset == at && b.offset % dlr::kPreparedAlign == 0, "blob offset");
    dlr::fuzz::require(b.bytes == plan.weights[i].bytes && b.layer == plan.weights[i].layer, "blob against the plan");
    at = (b.offset + b.bytes + dlr::kPreparedAlign - 1) / dlr::kPreparedAlign * dlr::kPreparedAlign;
    dlr::fuzz::require(at <= n, "blob inside the file");
  }
  dlr::fuzz::require(at == n, "file end");

  const dlr::Status verified = f->verify_all();
  dlr::fuzz::require_one_line(verified);
  dlr::Expected<std::unique_ptr<dlr::WeightSource>> source = dlr::prepared_file_source(*f);
  if (!source.ok()) {
    dlr::fuzz::require_one_line(source.status());
    return 0;
  }
  std::vector<unsigned char> dst;
  for (const dlr::WeightBlob& w : plan.weights) {
    dst.assign(size_t(w.bytes), 0);
    const dlr::Status st = (*source)->prepare(w, plan.options.layout, dst.data());
    dlr::fuzz::require_one_line(st);
    if (verified.ok()) dlr::fuzz::require(st.ok(), "a verified file fails a read", st.message());
  }
  return 0;
}
