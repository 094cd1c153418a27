#include "runtime/public/convert.h"

namespace dlrun {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kParseError: return "parse error";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIoError: return "i/o error";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kCudaError: return "CUDA error";
    case ErrorCode::kCudnnError: return "cuDNN error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown";
}

namespace detail {

Error to_error(const dlr::Status& s) {
  ErrorCode c = ErrorCode::kInternal;
  switch (s.code()) {
    case dlr::StatusCode::kOk: c = ErrorCode::kInternal; break;  // not an error: never converted
    case dlr::StatusCode::kInvalidArgument: c = ErrorCode::kInvalidArgument; break;
    case dlr::StatusCode::kParseError: c = ErrorCode::kParseError; break;
    case dlr::StatusCode::kUnsupported: c = ErrorCode::kUnsupported; break;
    case dlr::StatusCode::kIoError: c = ErrorCode::kIoError; break;
    case dlr::StatusCode::kOutOfMemory: c = ErrorCode::kOutOfMemory; break;
    case dlr::StatusCode::kCudaError: c = ErrorCode::kCudaError; break;
    case dlr::StatusCode::kCudnnError: c = ErrorCode::kCudnnError; break;
    case dlr::StatusCode::kInternal: c = ErrorCode::kInternal; break;
  }
  return Error{c, s.message()};
}

dlr::ImageU8 to_internal(const ImageView& im) {
  dlr::ImageU8 v;
  v.data = im.data;
  v.width = im.width;
  v.height = im.height;
  v.channels = 3;
  v.row_stride = im.stride > 0 ? im.stride : int64_t(im.width) * 3;
  v.bgr = im.order == ImageView::Order::kBGR;
  return v;
}

std::vector<Detection> to_public(const std::vector<dlr::Detection>& dets) {
  std::vector<Detection> out;
  out.reserve(dets.size());
  for (const dlr::Detection& d : dets) {
    Detection p;
    p.class_id = d.class_id;
    p.prob = d.prob;
    p.box = Box{d.box.x, d.box.y, d.box.w, d.box.h};
    for (const auto& o : d.others) p.others.push_back(ClassProb{o.class_id, o.prob});
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace detail
}  // namespace dlrun
