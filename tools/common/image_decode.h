// Image decoding from bytes in memory, with the size an image claims checked
// against limits before any pixel memory is allocated (docs/reliability.md).
// Used by load_image() (image_io.cpp) and by the image fuzz harness; needs no
// runtime library, only dlr_core (and dlr_tools_opencv for decode_with_opencv).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/image.h"
#include "runtime/core/status.h"

namespace dlr::tools {

// An 8-bit BGR image in host memory.
struct LoadedImage {
  std::vector<uint8_t> pixels;  // BGR interleaved, rows packed
  int width = 0;
  int height = 0;
  ImageU8 view() const;  // defined in image_io.cpp
};

// Largest image accepted: generous for photos (a 100 MP camera is 12288x8192).
struct ImageLimits {
  int max_side = 32768;                       // width and height
  int64_t max_pixels = int64_t(1) << 27;      // width*height (134 MP, 384 MiB as BGR)
};
// Largest image file read into memory.
constexpr uint64_t kMaxImageFileBytes = uint64_t(512) << 20;

// The size an image header claims.
struct ImageHeader {
  const char* format = "";  // "JPEG", "PNG", "BMP", "PNM"
  int64_t width = 0;
  int64_t height = 0;
};

// Reads the header of a JPEG (the first SOFn frame header), PNG (IHDR), BMP or
// PNM (P1-P6) image without decoding pixels. kUnsupported when the bytes are
// none of these (OpenCV may still know the format); kParseError, naming `name`,
// when the header of a recognised format is malformed or truncated.
Expected<ImageHeader> read_image_header(const uint8_t* data, size_t size, const std::string& name);

// "NAME: FORMAT image size WxH: expected width and height in 1..MAX_SIDE and
// width*height <= MAX_PIXELS" unless the size is within the limits.
Status check_image_size(const std::string& name, const char* format, int64_t width, int64_t height,
                        const ImageLimits& limits);

// Binary PPM (P6, maxval 255): RGB on disk, BGR in memory. The claimed size is
// checked against the limits and against the bytes present before allocating.
Expected<LoadedImage> decode_ppm(const uint8_t* data, size_t size, const std::string& name,
                                 const ImageLimits& limits = {});

#ifdef DLR_HAVE_OPENCV
// Defined in tools/common/opencv/image_decode_opencv.cpp (dlr_tools_opencv): tools that load
// OpenCV on use reach them through media() (media.h) only.
//
// Any format OpenCV decodes (cv::imdecode, 3-channel BGR): the header is checked
// first where read_image_header knows the format (others rely on OpenCV's own
// limits); cv::Exception and std::bad_alloc become one-line errors.
Expected<LoadedImage> decode_with_opencv(const uint8_t* data, size_t size, const std::string& name,
                                         const ImageLimits& limits = {});
// The same checks on `data` (the bytes of the file at `path`), then cv::imread(path)
// so that the file is decoded exactly as Darknet's OpenCV build does (EXIF orientation).
Expected<LoadedImage> imread_checked(const std::string& path, const uint8_t* data, size_t size,
                                     const ImageLimits& limits = {});
#endif

}  // namespace dlr::tools
