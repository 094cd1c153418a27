// The JSON value form of a CopyProfile, for code that embeds a profile in a larger
// JSON document (the compiled model's JSON, tests). Private to runtime/ and tests:
// public headers keep the JSON library out of applications (copy_profile.h has the
// text form).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/streaming/copy_profile.h"

namespace dlr {

nlohmann::json copy_profile_to_json(const CopyProfile& p);
// Every field checked; errors are one line naming `what` and the field.
Expected<CopyProfile> copy_profile_from_json(const nlohmann::json& j, const std::string& what);

}  // namespace dlr
