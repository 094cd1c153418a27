// Class names for dlrun --names: a names file (one name per line, Darknet's
// coco.names) or a Darknet .data file, whose `names=` key gives the names file.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/status.h"

namespace dlr::tools {

// A path ending in ".data" is read as a .data file: lines "key = value" (spaces
// anywhere ignored, as Darknet strips them; lines starting with '#' or ';'
// skipped). The names path is used as Darknet uses it (relative to the current
// directory); when no file is there, relative to the .data file's folder, and
// then its file name alone in that folder (coco.data beside coco.names).
// Errors name the .data file and line, or the names file.
Expected<std::vector<std::string>> read_class_names(const std::string& path);

// The names file a .data file points to (the rules above), without reading it.
Expected<std::string> data_file_names_path(const std::string& data_path);

}  // namespace dlr::tools
