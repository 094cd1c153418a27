// dlr_detect_ppm CFG WEIGHTS IMAGE.ppm [THRESH]: the C++ public API's detections of
// a binary PPM (P6, maxval 255), one per line "class prob x y w h" (%.9g, exact for
// float), for the Python binding test to compare with. An open or detect error is
// printed as its message alone on stderr, exit 1.
#include <dlrun/dlrun.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: dlr_detect_ppm CFG WEIGHTS IMAGE.ppm [THRESH]\n");
    return 2;
  }
  dlrun::Options o;
  o.threads = 1;
  if (argc > 4) o.thresh = std::strtof(argv[4], nullptr);
  auto s = dlrun::Session::open(argv[1], argv[2], o);
  if (!s) {
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return 1;
  }
  std::ifstream f(argv[3], std::ios::binary);
  std::string magic;
  int w = 0, h = 0, maxval = 0;
  f >> magic >> w >> h >> maxval;
  f.get();
  if (!f || magic != "P6" || maxval != 255 || w <= 0 || h <= 0 || w > 16384 || h > 16384) {
    std::fprintf(stderr, "%s: not a binary 8-bit PPM\n", argv[3]);
    return 1;
  }
  std::vector<uint8_t> rgb(size_t(w) * size_t(h) * 3);
  f.read(reinterpret_cast<char*>(rgb.data()), std::streamsize(rgb.size()));
  if (!f) {
    std::fprintf(stderr, "%s: truncated\n", argv[3]);
    return 1;
  }
  dlrun::ImageView v;
  v.data = rgb.data();
  v.width = w;
  v.height = h;
  v.order = dlrun::ImageView::Order::kRGB;  // PPM is RGB
  auto dets = s->detect(v);
  if (!dets) {
    std::fprintf(stderr, "%s\n", dets.error().message.c_str());
    return 1;
  }
  for (const auto& d : *dets)
    std::printf("%d %.9g %.9g %.9g %.9g %.9g\n", d.class_id, d.prob, d.box.x, d.box.y, d.box.w, d.box.h);
  return 0;
}
