// The smallest dlrun application: built by scripts/install_test.sh against an
// installed dlrun with find_package and with pkg-config, shared and static.
// consumer [CFG WEIGHTS [cuda]]: prints the version, checks that a bad open is an error
// value, and with a network given detects on a grey image (on the GPU with "cuda": the
// shared library then loads its CUDA backend).
#include <dlrun/dlrun.h>

#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  std::printf("dlrun %s (header %s), cuda %d\n", dlrun::version(), DLRUN_VERSION_STRING, int(dlrun::has_cuda()));
  auto bad = dlrun::Session::open("/nonexistent.cfg", "/nonexistent.weights");
  if (bad.ok() || bad.error().message.empty()) return std::fprintf(stderr, "expected an error\n"), 1;
  if (argc < 3) return 0;
  dlrun::Options o;
  o.threads = 1;
  if (argc > 3 && std::strcmp(argv[3], "cuda") == 0) o.device = dlrun::Device::kCUDA;
  auto s = dlrun::Session::open(argv[1], argv[2], o);
  if (!s) return std::fprintf(stderr, "%s\n", s.error().message.c_str()), 1;
  std::vector<uint8_t> grey(64 * 48 * 3, 128);
  auto d = s->detect(dlrun::ImageView{grey.data(), 64, 48, 0, dlrun::ImageView::Order::kBGR});
  if (!d) return std::fprintf(stderr, "%s\n", d.error().message.c_str()), 1;
  std::printf("%zu detections, %zu layers timed\n", d->size(), s->last_report().layers.size());
  return 0;
}
