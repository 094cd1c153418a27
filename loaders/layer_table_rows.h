// What the files of the layer table share: layer_table.cpp (kRows, generated from
// DLR_OPS, and the helpers below) and layer_table_<group>.cpp (one block per kind: its
// key rules, its parse and its row). Private to loaders/.
#pragma once

#include <string>
#include <vector>

#include "loaders/layer_table.h"

namespace dlr::layer_rows {

using U = KeyUse;

// "   w x   h x   c ->    w x   h x   c" of a summary line (input and output shapes).
std::string io_shapes(const Shape3& in, const Shape3& out);
// The numbers comma-separated ("1,2,3").
std::string join(const std::vector<int>& v);
// The moments of a kind whose output estimate is its input's.
SyntheticMoments same_as_input(const MomentsIn& m);

// Every kind's row (row_<ident>), defined in the file of its group.
#define DLR_LAYER_ROW_DECL_(K, ident, name, P, role) extern const LayerRow row_##ident;
DLR_OPS(DLR_LAYER_ROW_DECL_)
#undef DLR_LAYER_ROW_DECL_

}  // namespace dlr::layer_rows
