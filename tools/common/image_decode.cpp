// Image headers and decoders working on bytes in memory; every size is checked
// before it is used to allocate (image_decode.h).
#include "tools/common/image_decode.h"

#include <algorithm>
#include <cctype>
#include <new>

namespace dlr::tools {
namespace {

uint32_t be16(const uint8_t* p) { return uint32_t(p[0]) << 8 | p[1]; }
uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

// PNM header integer: skips whitespace and '#' comments; at most 9 digits; must be
// followed by whitespace. OpenCV's PNM reader consumes the byte after a number as its
// delimiter, so in "869#1041720\n" it reads the comment's digits as the next number:
// a header that two readers would size differently is refused.
bool pnm_int(const uint8_t* d, size_t n, size_t* pos, int64_t* out) {
  size_t i = *pos;
  while (i < n) {
    if (std::isspace(d[i])) {
      ++i;
    } else if (d[i] == '#') {
      while (i < n && d[i] != '\n' && d[i] != '\r') ++i;
    } else {
      break;
    }
  }
  int64_t v = 0;
  size_t digits = 0;
  while (i < n && std::isdigit(d[i])) {
    if (++digits > 9) return false;
    v = v * 10 + (d[i] - '0');
    ++i;
  }
  if (digits == 0 || i >= n || !std::isspace(d[i])) return false;
  *pos = i;
  *out = v;
  return true;
}

Expected<ImageHeader> jpeg_header(const uint8_t* d, size_t n, const std::string& name) {
  size_t pos = 2;  // after SOI
  while (true) {
    if (pos + 4 > n) return parse_error(name + ": JPEG ends before its frame header (truncated file?)");
    if (d[pos] != 0xFF) return parse_error(name + ": malformed JPEG: expected a marker at byte " + std::to_string(pos));
    const uint8_t m = d[pos + 1];
    if (m == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) {  // markers without a length
      pos += 2;
      continue;
    }
    if (m == 0xD9 || m == 0xDA) return parse_error(name + ": malformed JPEG: no frame header before the image data");
    const uint32_t len = be16(d + pos + 2);
    if (len < 2) return parse_error(name + ": malformed JPEG: segment length " + std::to_string(len) + " at byte " +
                                    std::to_string(pos));
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof) {
      if (len < 7 || pos + 9 > n) return parse_error(name + ": malformed JPEG: truncated frame header");
      ImageHeader h;
      h.format = "JPEG";
      h.height = be16(d + pos + 5);
      h.width = be16(d + pos + 7);
      return h;
    }
    pos += 2 + size_t(len);
  }
}

}  // namespace

Expected<ImageHeader> read_image_header(const uint8_t* d, size_t n, const std::string& name) {
  ImageHeader h;
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return jpeg_header(d, n, name);
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (n >= 8 && std::equal(kPng, kPng + 8, d)) {
    if (n < 24 || !std::equal(d + 12, d + 16, reinterpret_cast<const uint8_t*>("IHDR")))
      return parse_error(name + ": malformed PNG: expected the IHDR chunk first");
    h.format = "PNG";
    h.width = be32(d + 16);
    h.height = be32(d + 20);
    return h;
  }
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') {
    if (n < 26) return parse_error(name + ": malformed BMP: header truncated");
    h.format = "BMP";
    if (le32(d + 14) == 12) {  // OS/2 core header: 16-bit sizes
      h.width = le16(d + 18);
      h.height = le16(d + 20);
    } else {
      h.width = int32_t(le32(d + 18));
      h.height = int32_t(le32(d + 22));
      if (h.height < 0) h.height = -h.height;  // top-down rows
    }
    return h;
  }
  // PNM as OpenCV recognises it: "P1".."P6" and then whitespace. Anything else must not
  // pass as PNM: OpenCV would try its other decoders on it (GDCM, DICOM, asserted and
  // aborted on "P62 1\n..." with a DICM tag; found by the image fuzzer).
  if (n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6' && std::isspace(d[2])) {
    size_t pos = 2;
    h.format = "PNM";
    if (!pnm_int(d, n, &pos, &h.width) || !pnm_int(d, n, &pos, &h.height))
      return parse_error(name + ": malformed PNM header: expected width and height");
    return h;
  }
  return unsupported(name + ": image format not recognised from its header");
}

Status check_image_size(const std::string& name, const char* format, int64_t width, int64_t height,
                        const ImageLimits& limits) {
  if (width >= 1 && height >= 1 && width <= limits.max_side && height <= limits.max_side &&
      width * height <= limits.max_pixels)
    return Status();
  return parse_error(name + ": " + format + " image size " + std::to_string(width) + "x" + std::to_string(height) +
                     ": expected width and height in 1.." + std::to_string(limits.max_side) +
                     " and width*height <= " + std::to_string(limits.max_pixels));
}

Expected<LoadedImage> decode_ppm(const uint8_t* d, size_t n, const std::string& name, const ImageLimits& limits) {
  size_t pos = 2;
  int64_t w = 0, h = 0, maxval = 0;
  if (n < 3 || d[0] != 'P' || d[1] != '6' || !std::isspace(d[2]) || !pnm_int(d, n, &pos, &w) || !pnm_int(d, n, &pos, &h) ||
      !pnm_int(d, n, &pos, &maxval) || pos >= n || !std::isspace(d[pos]))
    return parse_error(name + ": not a binary PPM (P6) image");
  if (maxval != 255)
    return unsupported(name + ": PPM maxval " + std::to_string(maxval) + " is not supported (expected 255, 8-bit)");
  DLR_RETURN_IF_ERROR(check_image_size(name, "PPM", w, h, limits));
  ++pos;  // the single whitespace after maxval
  const uint64_t need = uint64_t(w) * uint64_t(h) * 3;
  if (n - pos < need)
    return parse_error(name + ": PPM data is truncated: " + std::to_string(w) + "x" + std::to_string(h) + "x3 = " +
                       std::to_string(need) + " bytes of pixels expected, " + std::to_string(n - pos) + " present");
  LoadedImage img;
  img.width = int(w);
  img.height = int(h);
  img.pixels.assign(d + pos, d + pos + need);
  for (size_t i = 0; i < img.pixels.size(); i += 3) std::swap(img.pixels[i], img.pixels[i + 2]);
  return img;
}

}  // namespace dlr::tools
