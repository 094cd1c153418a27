// ImageU8: an 8-bit interleaved image as an application hands it over (a view:
// the caller owns the pixels and keeps them alive for the call).
#pragma once

#include <cstdint>

namespace dlr {

struct ImageU8 {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  int channels = 3;
  int64_t row_stride = 0;  // bytes between rows (>= width*channels)
  bool bgr = true;         // OpenCV order; converted to RGB like Darknet's load_image_cv
};

// A view of `width` x `height` BGR pixels packed row after row at `data`.
inline ImageU8 packed_bgr(const uint8_t* data, int width, int height) {
  ImageU8 img;
  img.data = data;
  img.width = width;
  img.height = height;
  img.row_stride = int64_t(width) * 3;
  return img;
}

}  // namespace dlr
