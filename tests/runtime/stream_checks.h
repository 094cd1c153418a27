// check_stream_plan: every structural property of a StreamPlan (tiling, placement,
// waits, host order), shared by the plan and unit-search tests. gtest assertions.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr::test {

constexpr int64_t kRingGranularity = int64_t(2) << 20;  // StreamOptions' default

// `budget` as passed to plan_streaming; every unit at most `chunk` bytes.
inline void check_stream_plan(const ExecutionPlan& plan, const StreamPlan& s, const CopyProfile& prof,
                              int64_t budget, int64_t chunk) {
  int64_t total = 0, largest = 0;
  std::vector<int64_t> off;
  for (const WeightBlob& w : plan.weights) {
    off.push_back(total);
    total += w.bytes;
    largest = std::max(largest, w.bytes);
  }
  ASSERT_EQ(s.total_weight_bytes, total);
  ASSERT_EQ(s.slot_bytes, largest);
  const bool ring = s.layout == PoolLayout::kRing;
  ASSERT_TRUE(ring || s.layout == PoolLayout::kSlots);
  ASSERT_FALSE(ring && s.resident);
  if (!ring && (!s.resident || s.minimal_pool_bytes == 2 * largest)) {  // resident: either layout's minimum
    ASSERT_EQ(s.minimal_pool_bytes, 2 * largest);
  } else {  // within two largest blobs + 1 MB, at least 1.5 of them, whole mapping units
    ASSERT_EQ(s.minimal_pool_bytes % kRingGranularity, 0);
    ASSERT_LE(s.minimal_pool_bytes, std::max(2 * largest + 1000000, align_up(2 * largest, kRingGranularity)));
    ASSERT_GE(2 * s.minimal_pool_bytes, 3 * largest);
  }
  const int64_t eff_budget = budget == 0 ? s.minimal_pool_bytes : budget;
  ASSERT_LE(s.pool_bytes, std::max(eff_budget, total));
  if (budget != 0) {
    ASSERT_EQ(s.resident, budget >= total);
  }
  ASSERT_EQ(s.blob_pool_offset.size(), plan.weights.size());
  ASSERT_EQ(s.blob_last_unit.size(), plan.weights.size());
  ASSERT_EQ(s.unit_waits.size(), s.units.size());

  // Units tile the host store, in order, each at most one chunk.
  int64_t pos = 0;
  for (size_t u = 0; u < s.units.size(); ++u) {
    const TransferUnit& t = s.units[u];
    ASSERT_EQ(t.index, int(u));
    ASSERT_EQ(t.host_offset, pos);
    ASSERT_GT(t.bytes, 0);
    ASSERT_LE(t.bytes, chunk);
    ASSERT_EQ(t.bytes % 256, 0);
    pos += t.bytes;
    ASSERT_LT(off[size_t(t.first_blob)], t.host_offset + t.bytes);
    ASSERT_GT(off[size_t(t.first_blob)] + plan.weights[size_t(t.first_blob)].bytes, t.host_offset);
    ASSERT_LT(off[size_t(t.last_blob)], t.host_offset + t.bytes);
    ASSERT_GE(off[size_t(t.last_blob)] + plan.weights[size_t(t.last_blob)].bytes, t.host_offset + t.bytes);
    ASSERT_EQ(t.first_layer, plan.weights[size_t(t.first_blob)].layer);
    ASSERT_LE(t.pool_offset + t.bytes, s.address_span());
  }
  ASSERT_EQ(pos, total);
  for (size_t b = 0; b < plan.weights.size(); ++b) {
    const TransferUnit& t = s.units[size_t(s.blob_last_unit[b])];
    const int64_t last_byte = off[b] + plan.weights[b].bytes - 1;
    ASSERT_TRUE(t.host_offset <= last_byte && last_byte < t.host_offset + t.bytes) << "blob " << b;
    ASSERT_LE(s.blob_pool_offset[b] + plan.weights[b].bytes, s.address_span());
  }

  if (s.resident) {
    EXPECT_EQ(s.pool_bytes, total);
    EXPECT_EQ(s.slots, 0);
    EXPECT_EQ(s.streamed_bytes(), 0);
    for (size_t b = 0; b < plan.weights.size(); ++b) EXPECT_EQ(s.blob_pool_offset[b], off[b]);
    for (const auto& w : s.unit_waits) EXPECT_TRUE(w.empty());
    ASSERT_EQ(s.order.size(), plan.steps.size());
    for (size_t i = 0; i < s.order.size(); ++i) {
      EXPECT_EQ(s.order[i].kind, StreamAction::Kind::kLayer);
      EXPECT_EQ(s.order[i].index, int(i));
    }
    return;
  }

  EXPECT_EQ(s.streamed_bytes(), total);
  if (ring) {
    // Ring: the budget in whole mapping units; byte x at x % P; a unit overwriting bytes
    // of earlier blobs waits for the reader of the last of them, which runs before
    // every layer that needs the unit.
    const int64_t p = s.pool_bytes;
    ASSERT_EQ(p, eff_budget / kRingGranularity * kRingGranularity);
    ASSERT_GE(p, s.minimal_pool_bytes);
    ASSERT_LT(p, total);
    ASSERT_EQ(s.slots, 0);
    ASSERT_TRUE(s.groups.empty());
    for (size_t b = 0; b < plan.weights.size(); ++b) ASSERT_EQ(s.blob_pool_offset[b], off[b] % p);
    for (const TransferUnit& t : s.units) {
      ASSERT_EQ(t.pool_offset, t.host_offset % p);
      ASSERT_LE(t.bytes, p - largest);
      const int64_t overwritten_end = t.host_offset + t.bytes - p;
      if (overwritten_end <= 0) {
        ASSERT_TRUE(s.unit_waits[size_t(t.index)].empty()) << "unit " << t.index;
        continue;
      }
      size_t holder = 0;  // the blob holding byte overwritten_end - 1
      while (off[holder] + plan.weights[holder].bytes < overwritten_end) ++holder;
      ASSERT_EQ(s.unit_waits[size_t(t.index)], std::vector<int>{plan.weights[holder].layer}) << "unit " << t.index;
      ASSERT_LT(plan.weights[holder].layer, t.first_layer) << "unit " << t.index;
      ASSERT_GT(prof.queue_depth(t.bytes), 0);
    }
  } else {
  // Slots: K slots, groups packed greedily, group g in slot g % K.
  const int k = int(eff_budget / largest);
  ASSERT_EQ(s.slots, k);
  ASSERT_GE(k, 2);
  ASSERT_EQ(s.pool_bytes, int64_t(k) * largest);
  ASSERT_LT(k, int(s.groups.size()));
  int next_blob = 0;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const WeightGroup& gr = s.groups[g];
    ASSERT_EQ(gr.first_blob, next_blob);
    ASSERT_GE(gr.last_blob, gr.first_blob);
    ASSERT_EQ(gr.host_offset, off[size_t(gr.first_blob)]);
    ASSERT_EQ(gr.bytes, off[size_t(gr.last_blob)] + plan.weights[size_t(gr.last_blob)].bytes - gr.host_offset);
    ASSERT_LE(gr.bytes, s.slot_bytes);
    if (g + 1 < s.groups.size()) {  // greedy: the next blob did not fit
      ASSERT_GT(gr.bytes + plan.weights[size_t(gr.last_blob) + 1].bytes, s.slot_bytes);
    }
    ASSERT_EQ(gr.slot, int(g % size_t(k)));
    if (g > 0) {
      ASSERT_NE(gr.slot, s.groups[g - 1].slot);  // consecutive groups never share a slot
    }
    ASSERT_EQ(gr.last_layer, plan.weights[size_t(gr.last_blob)].layer);
    for (int b = gr.first_blob; b <= gr.last_blob; ++b)
      ASSERT_EQ(s.blob_pool_offset[size_t(b)], int64_t(gr.slot) * s.slot_bytes + off[size_t(b)] - gr.host_offset);
    next_blob = gr.last_blob + 1;
  }
  ASSERT_EQ(next_blob, int(plan.weights.size()));
  for (const TransferUnit& t : s.units) {
    const WeightGroup& gr = s.groups[size_t(t.group)];
    ASSERT_GE(t.host_offset, gr.host_offset);
    ASSERT_LE(t.host_offset + t.bytes, gr.host_offset + gr.bytes);
    ASSERT_EQ(t.pool_offset, int64_t(gr.slot) * s.slot_bytes + t.host_offset - gr.host_offset);
    if (t.group < k) {
      ASSERT_TRUE(s.unit_waits[size_t(t.index)].empty());
    } else {
      ASSERT_EQ(s.unit_waits[size_t(t.index)], std::vector<int>{s.groups[size_t(t.group - k)].last_layer});
    }
    ASSERT_GT(prof.queue_depth(t.bytes), 0);
  }
  }

  // Host order: every unit and layer once; layers in order; a layer after the units
  // it needs; a copy after the layers it waits on; at most max_copies_ahead ahead.
  std::vector<int> unit_pos(s.units.size(), -1), layer_pos(plan.steps.size(), -1);
  int next_unit = 0, next_layer = 0;
  for (size_t i = 0; i < s.order.size(); ++i) {
    const StreamAction& a = s.order[i];
    if (a.kind == StreamAction::Kind::kCopy) {
      ASSERT_EQ(a.index, next_unit++);  // unit order
      unit_pos[size_t(a.index)] = int(i);
      for (int w : s.unit_waits[size_t(a.index)]) ASSERT_GE(layer_pos[size_t(w)], 0) << "unit " << a.index;
    } else {
      ASSERT_EQ(a.index, next_layer++);
      layer_pos[size_t(a.index)] = int(i);
      const int w = plan.steps[size_t(a.index)].weight;
      int need = -1;
      for (int l = 0; l <= a.index; ++l)
        if (plan.steps[size_t(l)].weight >= 0)
          need = std::max(need, s.blob_last_unit[size_t(plan.steps[size_t(l)].weight)]);
      if (w >= 0) {
        ASSERT_GE(unit_pos[size_t(s.blob_last_unit[size_t(w)])], 0) << "layer " << a.index;
      }
      ASSERT_LE(next_unit - 1 - need, s.max_copies_ahead) << "layer " << a.index;
    }
  }
  ASSERT_EQ(next_unit, int(s.units.size()));
  ASSERT_EQ(next_layer, int(plan.steps.size()));
}

}  // namespace dlr::test
