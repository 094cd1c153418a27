// libFuzzer harness: image bytes -> the header reader, the PPM decoder and (with
// OpenCV) the checked OpenCV decoder. Limits are small (1024 per side, 2^20
// pixels) so that every accepted image decodes fast. OpenCV is only asked to
// decode formats whose header dlrun checks first (JPEG, PNG, BMP, PNM); other
// formats rely on OpenCV's own limits (docs/reliability.md).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_check.h"
#include "tools/common/image_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlr::tools;
  ImageLimits limits;
  limits.max_side = 1024;
  limits.max_pixels = int64_t(1) << 20;
  dlr::Expected<LoadedImage> ppm = decode_ppm(data, size, "fuzz.ppm", limits);
  if (ppm.ok())
    dlr::fuzz::require(ppm->pixels.size() == size_t(ppm->width) * size_t(ppm->height) * 3, "ppm size");
  else
    dlr::fuzz::require_one_line(ppm.status());
  dlr::Expected<ImageHeader> h = read_image_header(data, size, "fuzz.img");
  if (!h.ok()) {
    dlr::fuzz::require_one_line(h.status());
    return 0;
  }
#ifdef DLR_HAVE_OPENCV
  dlr::Expected<LoadedImage> img = decode_with_opencv(data, size, "fuzz.img", limits);
  if (img.ok())
    dlr::fuzz::require(img->width <= limits.max_side && img->height <= limits.max_side &&
                           img->pixels.size() == size_t(img->width) * size_t(img->height) * 3,
                       "decoded size");
  else
    dlr::fuzz::require_one_line(img.status());
#endif
  return 0;
}
