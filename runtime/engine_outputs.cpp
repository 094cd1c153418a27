#include "runtime/engine_outputs.h"

namespace dlr {

Status download_overflowed_outputs(const Engine& e, const std::vector<int>& outputs, int n) {
  for (int y : outputs) {
    bool whole = false;
    for (int i = 0; i < n && !whole; ++i) {
      const OutputRows r = e.output_rows(y, i);
      whole = r.rows != nullptr && !r.complete();
    }
    if (whole) DLR_RETURN_IF_ERROR(e.download_output(y));
  }
  return Status();
}

HeadOutput engine_head(const Engine& e, const LayerDesc& l, int image) {
  const OutputRows r = e.output_rows(l.index, image);
  if (!r.complete()) return head_output(l, e.output(l.index, image));
  HeadOutput h = head_output(l, r.rows);
  h.keys = r.keys;
  h.rows = r.count;
  return h;
}

}  // namespace dlr
