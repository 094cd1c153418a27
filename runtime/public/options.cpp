// dlrun::set_option() and dlrun::option_names() (dlrun/options.h), over the options
// table (runtime/public/options_map.cpp).
#include "dlrun/options.h"

#include "runtime/public/convert.h"
#include "runtime/public/options_map.h"

namespace dlrun {

Status set_option(Options& options, const std::string& name, const std::string& value) {
  const Result<bool> r = detail::guarded<bool>("dlrun::set_option", [&]() -> Result<bool> {
    const dlr::Status st = detail::set_public_option(&options, name, value);
    if (!st.ok()) return detail::to_error(st);
    return true;
  });
  if (!r.ok()) return r.error();
  return Status();
}

const std::vector<std::string>& option_names() { return detail::public_option_names(); }

bool option_is_text(const std::string& name) { return detail::public_option_is_text(name); }

}  // namespace dlrun
