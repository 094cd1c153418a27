// Darknet's stdout detection lines (AlexeyAB image.c:draw_detections_v3):
//   printf("%s: %.0f%%", name, prob*100)            prob*100 in float
//   ext_output: printf("\t(left_x: %4.0f   top_y: %4.0f   width: %4.0f   height: %4.0f)\n",
//                      round((x-w/2)*im.w), round((y-h/2)*im.h), round(w*im.w), round(h*im.h))
//   else "\n"; then the same for every other class above thresh (Detection::others).
// Pixel values are not clamped (negative or past the edge are printed as is).
// A class id without a name (names too short) prints its number instead.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cmath>
#include <cstdio>

#include "runtime/detect/detection.h"

namespace dlr {
namespace {

void append_line(std::string* out, const std::string& name, float prob, const Box& b, int image_w, int image_h,
                 bool ext_output) {
  char buf[512];  // %4.0f of any float fits
  out->append(name);
  const float percent = prob * 100;  // float product, as in Darknet
  std::snprintf(buf, sizeof(buf), ": %.0f%%", static_cast<double>(percent));
  out->append(buf);
  if (!ext_output) {
    out->push_back('\n');
    return;
  }
  // float expressions, then C round() on the promoted double.
  const float left = (b.x - b.w / 2) * image_w;
  const float top = (b.y - b.h / 2) * image_h;
  const float width = b.w * image_w;
  const float height = b.h * image_h;
  std::snprintf(buf, sizeof(buf), "\t(left_x: %4.0f   top_y: %4.0f   width: %4.0f   height: %4.0f)\n",
                std::round(static_cast<double>(left)), std::round(static_cast<double>(top)),
                std::round(static_cast<double>(width)), std::round(static_cast<double>(height)));
  out->append(buf);
}

std::string class_name(const std::vector<std::string>& names, int id) {
  if (id >= 0 && id < static_cast<int>(names.size())) return names[id];
  return std::to_string(id);
}

}  // namespace

std::string format_darknet(const std::vector<Detection>& dets, const std::vector<std::string>& names, int image_w,
                           int image_h, bool ext_output) {
  std::string out;
  for (const Detection& d : dets) {
    append_line(&out, class_name(names, d.class_id), d.prob, d.box, image_w, image_h, ext_output);
    for (const Detection::Extra& e : d.others) {
      append_line(&out, class_name(names, e.class_id), e.prob, d.box, image_w, image_h, ext_output);
    }
  }
  return out;
}

}  // namespace dlr
