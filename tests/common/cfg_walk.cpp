#include "tests/common/cfg_walk.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loaders/network_desc.h"
#include "loaders/synthetic_weights.h"
#include "loaders/weights_file.h"
#include "runtime/session.h"
#include "tests/common/test_paths.h"

namespace dlr::test {
namespace {

bool has_detector_section(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::string t;
    for (char ch : line)
      if (ch != ' ' && ch != '\t' && ch != '\r') t += ch;
    if (t == "[yolo]" || t == "[region]" || t == "[Gaussian_yolo]" || t == "[detection]") return true;
  }
  return false;
}

// First line of an error, without the cfg's directory and without the list of supported
// sections (the table's note column).
std::string note_of(const std::string& message, const std::string& path) {
  std::string s = message.substr(0, message.find('\n'));
  const std::string dir = path.substr(0, path.find_last_of('/') + 1);
  if (!dir.empty() && s.compare(0, dir.size(), dir) == 0) s = s.substr(dir.size());
  const size_t cut = s.find(" (expected one of net,");
  if (cut != std::string::npos) s = s.substr(0, cut);
  return s;
}

// A .weights file of the right size whose floats are all 0 (a sparse file: no disk
// writes): enough to run a network whose synthetic weights would take long to write.
Status write_zero_weights(const NetworkDesc& net, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return io_error(path + ": cannot create");
  const bool ok = write_weights_header(f, WeightsHeader{}).ok();
  std::fclose(f);
  if (!ok) return io_error(path + ": cannot write the header");
  std::error_code ec;
  std::filesystem::resize_file(path, std::filesystem::file_size(path, ec) + 4 * uint64_t(net.total_file_floats()), ec);
  if (ec) return io_error(path + ": " + ec.message());
  return Status();
}

}  // namespace

CfgWalkRow walk_cfg(const std::string& path, DeviceKind device) {
  CfgWalkRow row;
  row.cfg = std::filesystem::path(path).filename().string();
  row.detector = has_detector_section(path);
  auto net = parse_network_cfg(path);
  if (!net.ok()) {
    row.note = note_of(net.status().message(), path);
    return row;
  }
  row.loads = true;
  if (net->output_layers().empty()) {
    row.note = "no detection output layer";
    return row;
  }
  // The smallest input size the cfg's layers accept (strides, reorg divisibility).
  int size = 0;
  for (int s : {64, 96, 128, 160, 192, 256, 320, 384, 448, 512, 640}) {
    CfgOptions o;
    o.width = o.height = s;
    if (parse_network_cfg(path, o).ok()) {
      size = s;
      break;
    }
  }
  if (size == 0) {
    row.note = "no input size in 64..640 accepted";
    return row;
  }
  const std::string weights = temp_dir() + "/walk-" + row.cfg + ".weights";
  // Synthetic weights up to 32 MB; zeros above (writing hundreds of MB per cfg would make
  // the walk slow on a small machine; the forward pass runs the same kernels either way).
  const bool small = net->total_file_floats() <= (int64_t(8) << 20);
  const Status ws = small ? write_synthetic_weights(*net, weights, SyntheticOptions{}) : write_zero_weights(*net, weights);
  if (!ws.ok()) {
    row.note = note_of(ws.message(), path);
    return row;
  }
  SessionOptions so;
  so.device = device;
  so.width = so.height = size;
  so.max_image_width = so.max_image_height = 64;
  auto session = Session::open(path, weights, so);
  if (session.ok()) {
    std::vector<uint8_t> pixels(size_t(48) * 64 * 3);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t((i * 37) % 251);
    ImageView img;
    img.data = pixels.data();
    img.width = 64;
    img.height = 48;
    img.row_stride = 64 * 3;
    auto dets = (*session)->detect(img);
    if (dets.ok()) {
      row.runs = true;
      row.size = size;
    } else {
      row.note = note_of(dets.status().message(), path);
    }
  } else {
    row.note = note_of(session.status().message(), path);
  }
  std::remove(weights.c_str());
  return row;
}

std::map<std::string, CfgTableRow> read_cfg_table(const std::string& markdown_path) {
  std::map<std::string, CfgTableRow> rows;
  std::ifstream f(markdown_path);
  std::string line;
  bool inside = false;
  auto cell_yes = [](std::string c) {
    c.erase(std::remove(c.begin(), c.end(), ' '), c.end());
    return c == "yes";
  };
  while (std::getline(f, line)) {
    if (line.find("<!-- cfg-table begin -->") != std::string::npos) {
      inside = true;
      continue;
    }
    if (line.find("<!-- cfg-table end -->") != std::string::npos) break;
    if (!inside || line.size() < 2 || line[0] != '|') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string c;
    while (std::getline(ss, c, '|')) cells.push_back(c);
    if (cells.size() < 5) continue;
    std::string name = cells[0];
    name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
    name.erase(std::remove(name.begin(), name.end(), '`'), name.end());
    if (name.size() < 5 || name.substr(name.size() - 4) != ".cfg") continue;  // header / separator
    rows[name] = CfgTableRow{cell_yes(cells[1]), cell_yes(cells[2]), cell_yes(cells[3]), cell_yes(cells[4])};
  }
  return rows;
}

std::vector<std::string> list_cfgs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".cfg") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dlr::test
