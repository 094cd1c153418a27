// dlrun::set_option() and dlrun::option_names() (dlrun/options.h), over the options
// table (runtime/public/options_map.cpp).
#include "dlrun/options.h"

#include "runtime/public/convert.h"
#include "runtime/public/options_map.h"

namespace dlrun {

Status set_option(Options& options, const std::string& name, const std::string& value) {
  return detail::guarded_status("dlrun::set_option",
                                [&] { return detail::set_public_option(&options, name, value); });
}

const std::vector<std::string>& option_names() { return detail::public_option_names(); }

bool option_is_text(const std::string& name) { return detail::public_option_is_text(name); }

}  // namespace dlrun
