// What every op's entry point receives for one step of a plan, on either backend
// (cpu::OpCall and cuda::OpCall add what only their backend has). The engines fill
// it from a Step; the kernel file of a kind unpacks it (kernels/op_params.h DLR_OPS).
#pragma once

#include <utility>
#include <variant>

#include "kernels/op_params.h"
#include "kernels/tensor_view.h"

namespace dlr {

struct OpStep {
  int layer = 0;                      // for messages
  const LayerParams* params = nullptr;
  const TensorView* in = nullptr;     // the step's inputs (route: none, it copies)
  int n_in = 0;
  TensorView out;
  const std::pair<TensorView, TensorView>* copies = nullptr;  // route: (src, dst) channel copies
  int n_copies = 0;
  // conv, an input-channel slice (runtime/compile/slicing.h): (src, dst) channel copies
  // before the op, and whether it adds into `out` instead of overwriting it.
  const std::pair<TensorView, TensorView>* packs = nullptr;
  int n_packs = 0;
  bool accumulate = false;
  // conv: a shortcut folded into it (runtime/compile/fusion.h): after act(conv + bias),
  // rounded to out's dtype, out = residual_act(out + *residual); null: none. *residual has
  // out's shape, dtype and layout and does not overlap it.
  const TensorView* residual = nullptr;
  Activation residual_act = Activation::kLinear;

  template <class P>
  const P& p() const { return std::get<P>(*params); }
};

}  // namespace dlr
