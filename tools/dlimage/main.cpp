// dlimage: small image utilities for demos and the GPU machine (which has no
// OpenCV): convert any image OpenCV reads to binary PPM, or synthesise a test
// image. Exit: 0 ok, 1 error, 2 usage error.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <string>

#include "runtime/core/log.h"
#include "tools/common/command_line.h"
#include "tools/common/tool_support.h"

namespace {

using namespace dlr::tools;

// A deterministic scene: sky-to-ground gradient with a few filled shapes.
LoadedImage synth_image(int w, int h, uint32_t seed) {
  LoadedImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t(w) * h * 3);
  uint32_t s = seed * 2654435761u + 1u;
  auto rnd = [&]() {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return s;
  };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &img.pixels[(size_t(y) * w + x) * 3];
      const double t = double(y) / h;
      p[0] = uint8_t(200 - 120 * t);  // B
      p[1] = uint8_t(170 - 60 * t + 20 * std::sin(x * 0.05));
      p[2] = uint8_t(120 + 60 * t);  // R
    }
  for (int k = 0; k < 6; ++k) {
    const int cx = int(rnd() % uint32_t(w)), cy = int(rnd() % uint32_t(h));
    const int rw = 20 + int(rnd() % uint32_t(w / 4 + 1)), rh = 20 + int(rnd() % uint32_t(h / 4 + 1));
    const uint8_t b = uint8_t(rnd()), g = uint8_t(rnd()), r = uint8_t(rnd());
    const bool ellipse = k % 2 == 1;
    for (int y = std::max(0, cy - rh); y < std::min(h, cy + rh); ++y)
      for (int x = std::max(0, cx - rw); x < std::min(w, cx + rw); ++x) {
        const double dx = double(x - cx) / rw, dy = double(y - cy) / rh;
        if (ellipse && dx * dx + dy * dy > 1.0) continue;
        uint8_t* p = &img.pixels[(size_t(y) * w + x) * 3];
        p[0] = b;
        p[1] = g;
        p[2] = r;
      }
  }
  return img;
}

}  // namespace

namespace {

int tool_main(int argc, char** argv) {
  dlr::init_logging();
  CLI::App app{"dlimage: convert images to PPM or synthesise a test image", "dlimage"};
  app.require_subcommand(1);
  std::string in, out;
  int width = 640, height = 480;
  uint32_t seed = 1;
  auto* conv = app.add_subcommand("convert", "read any image OpenCV reads, write binary PPM (or any OpenCV format)");
  conv->add_option("input", in, "input image")->required();
  conv->add_option("output", out, "output image (.ppm works without OpenCV)")->required();
  auto* syn = app.add_subcommand("synth", "write a deterministic synthetic scene");
  syn->add_option("output", out, "output image (.ppm, or any OpenCV format)")->required();
  syn->add_option("--width", width, "width (default 640)")->check(CLI::Range(16, 8192));
  syn->add_option("--height", height, "height (default 480)")->check(CLI::Range(16, 8192));
  syn->add_option("--seed", seed, "seed (default 1)");
  if (const int rc = dlr::tools::parse_command_line(app, argc, argv, "dlimage"); rc >= 0) return rc;
  LoadedImage img;
  if (conv->parsed()) {
    auto r = load_image(in);
    if (!r.ok()) return fail("dlimage", r.status());
    img = std::move(r).value();
  } else {
    img = synth_image(width, height, seed);
  }
  const bool ppm = out.size() >= 4 && out.compare(out.size() - 4, 4, ".ppm") == 0;
  const dlr::Status st = ppm ? save_ppm(out, img) : save_annotated(out, img, {}, {});
  if (!st.ok()) return fail("dlimage", st);
  std::printf("wrote %s (%dx%d)\n", out.c_str(), img.width, img.height);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return dlr::tools::guarded_main("dlimage", [&] { return tool_main(argc, argv); });
}
