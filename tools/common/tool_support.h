// Helpers shared by the command-line tools: image files, class names, JSON
// output, exit-code conventions. Tools print results on stdout and one-line
// errors on stderr; exit 0 ok, 1 error, 2 usage error.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/session.h"
#include "tools/common/image_decode.h"

namespace dlr::tools {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130;  // stopped by SIGINT (128 + 2, as a shell reports it); outputs closed

// Reads an image: any format OpenCV's imread knows (EXIF orientation applied, as
// Darknet's OpenCV build does) when built with OpenCV; otherwise binary PPM (P6) only.
// Regular files of at most kMaxImageFileBytes; the size a JPEG, PNG, BMP or PNM
// header claims is checked against ImageLimits before any pixel is allocated
// (image_decode.h); no exception escapes.
Expected<LoadedImage> load_image(const std::string& path);
// Writes a binary PPM (P6) of a BGR image (used to carry decoded images to machines without OpenCV).
Status save_ppm(const std::string& path, const LoadedImage& image);
// Draws boxes and labels like Darknet (boxes clamped to the image) and writes `path`; needs OpenCV.
Status save_annotated(const std::string& path, const LoadedImage& image, const std::vector<Detection>& dets,
                      const std::vector<std::string>& names);
bool have_opencv();

// The 80 COCO class names (the default for --names).
const std::vector<std::string>& coco_names();

// One JSON object for one image: {"image", "width", "height", "detections": [{class, id, prob, box px, rel}]}.
nlohmann::json detections_json(const std::string& image_name, int width, int height,
                               const std::vector<Detection>& dets, const std::vector<std::string>& names);

// Prints "<tool>: <message>" on stderr and returns kExitError.
int fail(const char* tool, const std::string& message);
int fail(const char* tool, const Status& status);

// Runs a tool's main body; an exception escaping it is printed as one line
// "<tool>: <what>" (std::bad_alloc: "out of memory") and gives kExitError.
int guarded_main(const char* tool, const std::function<int()>& body) noexcept;

}  // namespace dlr::tools
