// Input enumeration for dlrun: turns command-line input arguments into an
// ordered list of images, video files and cameras. Pure file-system work: no
// decoding here (tools/common/frames.h reads the items).
//
// Argument forms (docs: README.md, dlrun --help):
//   photo.jpg          an image file (existence is checked when it is read)
//   clip.mp4           a video file (by extension, is_video_path)
//   rtsp://cam/live    a stream: a URL or a GStreamer pipeline (streams.h); never
//                      taken for a file, a directory or a glob, in a list too
//   DIR                the image files in DIR, sorted by name (--recursive: and below)
//   'shots/*.jpg'      a quoted glob, expanded with glob(3), sorted
//   @list.txt          a list file: one path per line (Darknet's train.txt/test.txt
//                      form); --list FILE is the same
//   -                  paths read from standard input, one per line
// A list line is trimmed of surrounding whitespace (a Windows '\r' included);
// blank lines and lines starting with '#' are skipped; relative paths are taken
// relative to the current directory, as Darknet does. List entries are not
// expanded again (a directory or glob in a list is an error when read).
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "tools/common/streams.h"

namespace dlr::tools {

enum class InputKind { kImage, kVideo, kCamera, kStream };

struct InputItem {
  InputKind kind = InputKind::kImage;
  std::string path;  // image or video path; "camera N" for a camera; a stream's name (credentials hidden)
  int camera = -1;   // camera index (kCamera)
  std::string source;  // kStream: the URL or pipeline as given (credentials kept): what is opened
};

struct InputOptions {
  bool recursive = false;  // directories: descend into sub-directories
};

// File-name extensions (lower case, with the dot) taken as images / videos.
const std::vector<std::string>& image_extensions();
const std::vector<std::string>& video_extensions();
bool is_image_path(const std::string& path);  // by extension, case-insensitive
bool is_video_path(const std::string& path);

// Expands `args` in order. `stdin_paths` is read when an argument is "-" (at most
// once). Errors (one line, naming the argument): a directory without image files,
// a glob that matches nothing, a list file that cannot be read or lists nothing,
// "-" twice, no input at all.
Expected<std::vector<InputItem>> expand_inputs(const std::vector<std::string>& args, const InputOptions& options,
                                               std::istream& stdin_paths);

// The paths of a list (file or stream), per the rules above. `what` names the
// source in errors ("list.txt", "standard input").
Expected<std::vector<std::string>> read_path_list(std::istream& in, const std::string& what);

}  // namespace dlr::tools
