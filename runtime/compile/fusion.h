// Plan passes that merge steps (docs/architecture.md, "Fused steps").
#pragma once

#include "runtime/compile/plan.h"

namespace dlr {

// Folds every shortcut that only adds one view to the output of the conv step just
// before it into that conv (Step::residual): the shortcut step becomes a no-op that
// names the conv (Step::folded_into). A shortcut is folded when
//  - the conv before it is whole (not a slice), reads one input, does not accumulate,
//    and its output is the shortcut's first input and output, a whole buffer (the
//    in-place merge of the planner put them there);
//  - the shortcut adds exactly one `from` view of the output's shape, dtype and layout,
//    in another buffer, written before the conv runs.
// The result of every element is the unfolded one's: act(conv + bias) is rounded to the
// buffer's dtype before the add, as the conv's store did. Buffers, offsets and weights
// are unchanged. Returns how many shortcuts were folded. A no-op unless
// plan->options.fold_shortcuts.
int fold_shortcuts(ExecutionPlan* plan);

}  // namespace dlr
