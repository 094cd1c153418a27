// The layer table: one row per LayerKind with everything the loaders know about it
// (layer_table.h). A kind's block, in the file of its group, holds its cfg key rules,
// its parse (keys -> params, inputs and shape inference) and its row (sections, FLOPs,
// summary line, synthetic-weights moments, head layout): layer_table_conv.cpp,
// layer_table_pool.cpp, layer_table_merge.cpp, layer_table_reshape.cpp and
// layer_table_heads.cpp. kRows below is generated from DLR_OPS (kernels/op_params.h),
// so a kind without a row does not link.
// Semantics follow Darknet's parser.c (shared docs DARKNET.md section 1); every
// message is one line in the format of network_desc.h.
#include "loaders/layer_table.h"

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "loaders/layer_table_rows.h"

namespace dlr {

std::string strfmt(const char* format, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  return buf;
}

namespace layer_rows {

std::string io_shapes(const Shape3& in, const Shape3& out) {
  return strfmt("%4d x%4d x%4d -> %4d x%4d x%4d", in.w, in.h, in.c, out.w, out.h, out.c);
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

SyntheticMoments same_as_input(const MomentsIn& m) { return m.in; }

}  // namespace layer_rows

namespace {

// ---- the table ------------------------------------------------------------------------

#define DLR_LAYER_ROW_(K, ident, name, P, role) &layer_rows::row_##ident,
const LayerRow* const kRows[] = {DLR_OPS(DLR_LAYER_ROW_)};
#undef DLR_LAYER_ROW_
static_assert(sizeof(kRows) / sizeof(kRows[0]) == size_t(kLayerKindCount), "one row per LayerKind");

}  // namespace

const LayerRow& layer_row(LayerKind kind) { return *kRows[static_cast<size_t>(kind)]; }

const LayerRow* find_layer_section(const std::string& name) {
  for (const LayerRow* row : kRows)
    for (const char* section : row->sections)
      if (section != nullptr && name == section) return row;
  return nullptr;
}

}  // namespace dlr
