// The one place where the public dlrun::Options become the runtime's
// dlr::SessionOptions (and the public enums the internal ones).
#pragma once

#include <string>
#include <vector>

#include "dlrun/options.h"
#include "runtime/options.h"

namespace dlrun::detail {

// Every public field mapped (the PUBLIC rows of runtime/options_table.h); text fields
// parsed (an error names the field). Range checks are validate_options()'s, at open.
dlr::Expected<dlr::SessionOptions> to_session_options(const Options& o);
// Sets the public field `key` from text (dlrun::set_option); errors name the field.
dlr::Status set_public_option(Options* o, const std::string& key, const std::string& text);
// The public fields' names, in the table's order.
const std::vector<std::string>& public_option_names();
// Whether the public field `key` is a std::string (false for an unknown key).
bool public_option_is_text(const std::string& key);

}  // namespace dlrun::detail
