// The Darknet cfg walk behind docs/cfg-support.md's table of every cfg in
// ../shared/models/darknet-cfg: for one cfg, whether it is a detector (has a
// [yolo], [region], [Gaussian_yolo] or [detection] section), whether dlrun loads
// it, and whether a forward pass plus post-processing runs on a device, with
// synthetic weights (all-zero weights for cfgs above 32 MB of weights, to keep the
// walk fast) at the smallest input size the cfg accepts (64, 96, ... px).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/core/types.h"

namespace dlr::test {

struct CfgWalkRow {
  std::string cfg;        // file name
  bool detector = false;
  bool loads = false;
  bool runs = false;      // on the device asked for
  int size = 0;           // input size of the run (0: not run)
  std::string note;       // first error, one line
};

// Walks one cfg (absolute path). Weights are generated into a temporary file, removed after.
CfgWalkRow walk_cfg(const std::string& path, DeviceKind device);

// Table rows of docs/cfg-support.md between the "<!-- cfg-table begin -->" and
// "<!-- cfg-table end -->" markers: | cfg | detector | loads | CPU | CUDA | note |,
// yes/no cells. Key: cfg file name. Empty when the markers are missing.
struct CfgTableRow {
  bool detector = false, loads = false, cpu = false, cuda = false;
};
std::map<std::string, CfgTableRow> read_cfg_table(const std::string& markdown_path);

// Every *.cfg file name in `dir`, sorted.
std::vector<std::string> list_cfgs(const std::string& dir);

}  // namespace dlr::test
