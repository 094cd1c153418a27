// Conversions between the public dlrun types and the runtime's (one place).
#pragma once

#include <exception>
#include <new>
#include <string>
#include <vector>

#include "dlrun/result.h"
#include "dlrun/types.h"
#include "runtime/core/image.h"
#include "runtime/core/status.h"
#include "runtime/detect/detection.h"

namespace dlrun::detail {

Error to_error(const dlr::Status& s);
dlr::ImageU8 to_internal(const ImageView& im);
std::vector<Detection> to_public(const std::vector<dlr::Detection>& dets);

// Runs `body`; an exception (none should come: the runtime returns errors as values)
// becomes an Error naming `call`, so none crosses the public API.
template <class T, class F>
Result<T> guarded(const char* call, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Error{ErrorCode::kOutOfMemory, std::string(call) + ": out of host memory (std::bad_alloc)"};
  } catch (const std::exception& e) {
    return Error{ErrorCode::kInternal, std::string(call) + ": unexpected exception: " + e.what()};
  } catch (...) {
    return Error{ErrorCode::kInternal, std::string(call) + ": unexpected exception"};
  }
}

// guarded() of a body that returns the runtime's Status: its Error, or ok.
template <class F>
Status guarded_status(const char* call, F&& body) noexcept {
  const Result<bool> r = guarded<bool>(call, [&]() -> Result<bool> {
    const dlr::Status st = body();
    if (!st.ok()) return to_error(st);
    return true;
  });
  return r.ok() ? Status() : Status(r.error());
}

}  // namespace dlrun::detail
