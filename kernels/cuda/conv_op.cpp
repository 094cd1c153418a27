// The [convolutional] op of the CUDA backend: a step runs as a conv over a
// concatenation's parts (ConcatConv), a 3xTF32 conv (Tf32x3Conv), one cuDNN graph
// (FusedConv) or cuDNN's conv with its epilogue pass (CudnnConv), with the channel copies
// a sliced step needs around it.
#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_3xtf32.h"
#include "kernels/cuda/conv_concat.h"
#include "kernels/cuda/conv_graph.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {

// Entry point of [convolutional] (cuda_ops.h OpCall): the layer's prepared CudnnConv.
Status run_conv(const OpCall& call) {
  // An input-channel slice that reads a packed copy of its channels: that copy first.
  for (int i = 0; i < call.n_packs; ++i)
    DLR_RETURN_IF_ERROR(copy_channels(call.packs[i].first, call.packs[i].second, call.stream));
  if (call.n_in > 1) {
    if (call.concat == nullptr || call.cublas == nullptr)
      return internal_error("conv over " + std::to_string(call.n_in) + " inputs without its GEMMs");
    DLR_RETURN_IF_ERROR(call.concat->run(call.cublas, call.in, call.n_in, call.weights, call.bias, call.out, call.stream));
  } else if (call.x3 != nullptr) {
    DLR_RETURN_IF_ERROR(call.x3->run(call.cudnn, call.cublas, call.in[0], static_cast<const float*>(call.weights), call.bias,
                                     call.out, call.workspace, call.workspace_bytes, call.stream,
                                     ConvResidual{call.residual, call.residual_act}));
  } else if (call.fused != nullptr) {
    DLR_RETURN_IF_ERROR(call.fused->run(call.cudnn, call.in[0], call.weights, call.bias, call.residual, call.out,
                                        call.workspace, call.workspace_bytes, call.stream));
  } else {
    if (call.conv == nullptr) return internal_error("conv step without its prepared convolution");
    DLR_RETURN_IF_ERROR(call.conv->run(call.cudnn, call.in[0], call.weights, call.bias, call.out, call.workspace,
                                       call.workspace_bytes, call.stream, ConvResidual{call.residual, call.residual_act}));
  }
  // A slice of a conv that wrote a packed scratch: into its channels of the layer's output.
  for (int i = 0; i < call.n_copies; ++i)
    DLR_RETURN_IF_ERROR(copy_channels(call.copies[i].first, call.copies[i].second, call.stream));
  return Status();
}

}  // namespace dlr::cuda
