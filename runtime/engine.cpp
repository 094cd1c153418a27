#include "runtime/engine.h"

namespace dlr {

Status check_images(const ExecutionPlan& plan, const ImageU8* images, int n) {
  if (n < 1 || n > plan.options.batch)
    return invalid_argument("got " + std::to_string(n) + " images for a batch of " +
                            std::to_string(plan.options.batch));
  if (plan.input_shape.c != 3)
    return unsupported("images need a 3-channel network (this cfg has channels=" + std::to_string(plan.input_shape.c) +
                       ")");
  for (int i = 0; i < n; ++i)
    if (!images[i].data || images[i].width < 1 || images[i].height < 1 || images[i].channels != 3)
      return invalid_argument("image " + std::to_string(i) + " is empty or not 3-channel");
  return Status();
}

}  // namespace dlr
