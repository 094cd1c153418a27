// Python bindings of the public API (<dlrun/dlrun.h>): module `dlrun`.
//
//   import dlrun, numpy as np
//   s = dlrun.Session("yolov4.cfg", "yolov4.weights", device="cpu", threads=2)
//   for d in s.detect(frame):            # frame: H x W x 3 uint8 (BGR unless order="rgb")
//       print(d.class_id, d.prob, d.box)  # box: (x, y, w, h) relative centre/size
//
// Every dlrun::Options field is a keyword argument of Session() with the same name;
// enums are strings ("cpu"/"cuda", "fp32"/"tf32"/"fp16", "preload"/"stream", ...).
//   rt = dlrun.Runtime(device="cuda", budget="40%")   # several networks, one budget
//   a = rt.open("yolov4.cfg", "yolov4.weights", precision="fp16")
//   b = rt.open("yolov4-tiny.cfg", "tiny.weights", weight=2.0, precision="fp16")
//
// Errors raise dlrun.Error (a RuntimeError) whose str() is the C++ Error::message
// and whose .code is the error code's name. detect() releases the GIL.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlrun/dlrun.h>

#include <map>
#include <string>
#include <type_traits>

namespace py = pybind11;

namespace {

struct ErrorException {
  dlrun::Error error;
};

PyObject* g_error_type = nullptr;

template <class T>
T unwrap(dlrun::Result<T>&& r) {
  if (!r.ok()) throw ErrorException{r.error()};
  return std::move(*r);
}

template <class E>
E parse_enum(const std::string& what, const std::string& text, const std::map<std::string, E>& names) {
  auto it = names.find(text);
  if (it != names.end()) return it->second;
  std::string expected;
  for (const auto& [k, v] : names) expected += (expected.empty() ? "" : ", ") + k;
  throw ErrorException{dlrun::Error{dlrun::ErrorCode::kInvalidArgument,
                                    what + " '" + text + "': expected one of " + expected}};
}

// A keyword's value as the text dlrun::set_option reads: str as it is, bool as
// true/false, an integer (int, numpy's) and float in decimal except for a text option (dlrun::option_is_text:
// a budget of 64 is no size, and a CPU list is written as text); anything else is an error naming the keyword.
std::string option_text(const std::string& key, const py::handle v) {
  const std::string type = py::str(v.get_type().attr("__name__"));
  if (py::isinstance<py::str>(v)) return py::str(v);
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  // An integer: int, or any type with __index__ (numpy's integers).
  const bool integer = py::isinstance<py::int_>(v) || (!py::isinstance<py::float_>(v) && PyIndex_Check(v.ptr()));
  if ((integer || py::isinstance<py::float_>(v)) && dlrun::option_is_text(key))
    throw ErrorException{dlrun::Error{dlrun::ErrorCode::kInvalidArgument,
                                      key + ": expected a str, got " + type + " (a size needs its unit: '64MiB'; a CPU list is text: '2,3')"}};
  if (integer) return py::repr(py::int_(py::reinterpret_borrow<py::object>(v)));
  if (py::isinstance<py::float_>(v)) return py::repr(py::float_(py::reinterpret_borrow<py::object>(v)));
  throw ErrorException{dlrun::Error{dlrun::ErrorCode::kInvalidArgument,
                                    key + ": expected a str, int, float or bool, got " + type}};
}

// Options from keyword arguments: every field of dlrun::Options by name, through
// dlrun::set_option (its errors name the keyword); an unknown name is an error.
dlrun::Options options_from(const py::kwargs& kw) {
  dlrun::Options o;
  for (const auto& item : kw) {
    const std::string k = py::str(item.first);
    const dlrun::Status st = dlrun::set_option(o, k, option_text(k, item.second));
    if (!st.ok()) throw ErrorException{st.error()};
  }
  return o;
}

// A view of an H x W x 3 uint8 array (any row stride; pixels contiguous within a row).
dlrun::ImageView view_of(const py::array& a, const std::string& order) {
  if (a.ndim() != 3 || a.shape(2) != 3 || !py::isinstance<py::array_t<uint8_t>>(a))
    throw ErrorException{dlrun::Error{dlrun::ErrorCode::kInvalidArgument,
                                      "image: expected an H x W x 3 uint8 array"}};
  if (a.strides(2) != 1 || a.strides(1) != 3)
    throw ErrorException{dlrun::Error{dlrun::ErrorCode::kInvalidArgument,
                                      "image: pixels must be contiguous within a row (numpy.ascontiguousarray)"}};
  dlrun::ImageView v;
  v.data = static_cast<const uint8_t*>(a.data());
  v.height = int(a.shape(0));
  v.width = int(a.shape(1));
  v.stride = int64_t(a.strides(0));
  v.order = parse_enum<dlrun::ImageView::Order>("order", order, {{"bgr", dlrun::ImageView::Order::kBGR},
                                                                 {"rgb", dlrun::ImageView::Order::kRGB}});
  return v;
}

py::dict report_dict(const dlrun::Report& r) {
  py::list layers, copies;
  for (const auto& l : r.layers) {
    py::dict d;
    d["layer"] = l.layer; d["type"] = l.type; d["start_ms"] = l.start_ms; d["ready_ms"] = l.ready_ms;
    d["end_ms"] = l.end_ms; d["kernel_ms"] = l.kernel_ms(); d["stall_ms"] = l.stall_ms();
    d["weight_bytes"] = l.weight_bytes;
    if (l.slice >= 0) d["slice"] = l.slice;
    layers.append(d);
  }
  for (const auto& c : r.copies) {
    py::dict d;
    d["unit"] = c.unit; d["first_layer"] = c.first_layer; d["bytes"] = c.bytes;
    d["start_ms"] = c.start_ms; d["end_ms"] = c.end_ms;
    if (c.next_inference) d["next_inference"] = true;  // a tail copy (docs/streaming.md)
    copies.append(d);
  }
  py::dict mem;
  mem["weights"] = r.memory.weights; mem["activations"] = r.memory.activations; mem["workspace"] = r.memory.workspace;
  mem["other"] = r.memory.other; mem["host_weights"] = r.memory.host_weights;
  py::dict out;
  out["preprocess_ms"] = r.preprocess_ms; out["network_ms"] = r.network_ms; out["postprocess_ms"] = r.postprocess_ms;
  out["threads"] = r.threads; out["layers"] = layers; out["copies"] = copies; out["memory"] = mem;
  return out;
}

// dlrun.Error, raised for every dlrun::Error (its .code the code's name).
void bind_error(py::module_& m) {
  py::object error = py::reinterpret_steal<py::object>(
      PyErr_NewException("dlrun.Error", PyExc_RuntimeError, nullptr));
  m.attr("Error") = error;
  g_error_type = error.ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ErrorException& e) {
      py::object type = py::reinterpret_borrow<py::object>(g_error_type);
      py::object inst = type(e.error.message);
      inst.attr("code") = dlrun::error_code_name(e.error.code);
      PyErr_SetObject(g_error_type, inst.ptr());
    }
  });
}

// Box and Detection (read-only).
void bind_detection_types(py::module_& m) {
  py::class_<dlrun::Box>(m, "Box")
      .def_readonly("x", &dlrun::Box::x).def_readonly("y", &dlrun::Box::y)
      .def_readonly("w", &dlrun::Box::w).def_readonly("h", &dlrun::Box::h)
      .def("__iter__", [](const dlrun::Box& b) { return py::iter(py::make_tuple(b.x, b.y, b.w, b.h)); })
      .def("__repr__", [](const dlrun::Box& b) {
        return "Box(x=" + std::to_string(b.x) + ", y=" + std::to_string(b.y) + ", w=" + std::to_string(b.w) +
               ", h=" + std::to_string(b.h) + ")";
      });
  py::class_<dlrun::Detection>(m, "Detection")
      .def_readonly("class_id", &dlrun::Detection::class_id)
      .def_readonly("prob", &dlrun::Detection::prob)
      .def_readonly("box", &dlrun::Detection::box)
      .def_property_readonly("others", [](const dlrun::Detection& d) {
        py::list l;
        for (const auto& o : d.others) l.append(py::make_tuple(o.class_id, o.prob));
        return l;
      })
      .def("__repr__", [](const dlrun::Detection& d) {
        return "Detection(class_id=" + std::to_string(d.class_id) + ", prob=" + std::to_string(d.prob) + ")";
      });
}

// The session's info() dict.
py::dict info_dict(const dlrun::NetworkInfo& n) {
  py::dict d;
  d["input_width"] = n.input_width; d["input_height"] = n.input_height; d["batch"] = n.batch;
  d["classes"] = n.classes; d["layers"] = n.layers; d["gflops"] = n.gflops; d["letterbox"] = n.letterbox;
  return d;
}

void bind_session(py::module_& m) {
  py::class_<dlrun::Session>(m, "Session")
      .def(py::init([](const std::string& cfg, const std::string& weights, const py::kwargs& kw) {
             const dlrun::Options o = options_from(kw);
             return unwrap(dlrun::Session::open(cfg, weights, o));
           }),
           py::arg("cfg"), py::arg("weights"),
           "Opens a network; keyword arguments are dlrun::Options fields (docs/library.md)")
      .def("detect",
           [](dlrun::Session& s, const py::array& image, const std::string& order) {
             const dlrun::ImageView v = view_of(image, order);
             dlrun::Result<std::vector<dlrun::Detection>> r = [&] {
               py::gil_scoped_release release;
               return s.detect(v);
             }();
             return unwrap(std::move(r));
           },
           py::arg("image"), py::arg("order") = "bgr", "H x W x 3 uint8 array -> list of Detection")
      .def("detect_batch",
           [](dlrun::Session& s, const std::vector<py::array>& images, const std::string& order) {
             std::vector<dlrun::ImageView> views;
             for (const auto& a : images) views.push_back(view_of(a, order));
             dlrun::Result<std::vector<std::vector<dlrun::Detection>>> r = [&] {
               py::gil_scoped_release release;
               return s.detect_batch(views);
             }();
             return unwrap(std::move(r));
           },
           py::arg("images"), py::arg("order") = "bgr")
      .def("report", [](const dlrun::Session& s) { return report_dict(s.last_report()); },
           "the last detect(): phase times, per-layer timing, copies, memory (a dict)")
      .def("info", [](const dlrun::Session& s) { return info_dict(s.info()); })
      .def("plan_text", &dlrun::Session::plan_text);
}

// The runtime's memory() dict.
py::dict memory_dict(const dlrun::RuntimeMemory& m) {
  py::list nets;
  for (const auto& n : m.networks) {
    py::dict d;
    d["name"] = n.name; d["weight_budget"] = n.weight_budget; d["resident"] = n.resident; d["pool"] = n.pool;
    d["shared_ring"] = n.shared_ring;
    d["streamed"] = n.streamed; d["prefetched"] = n.prefetched; d["activations"] = n.activations;
    d["workspace"] = n.workspace; d["other"] = n.other; d["host_weights"] = n.host_weights;
    d["predicted_ms"] = n.predicted_ms;
    nets.append(d);
  }
  py::dict d;
  d["budget"] = m.budget; d["activations"] = m.activations; d["workspace"] = m.workspace; d["weights"] = m.weights;
  d["other"] = m.other; d["host_weights"] = m.host_weights; d["total"] = m.total(); d["ring"] = m.ring; d["networks"] = nets;
  return d;
}

// A keyword's value as T; another type raises dlrun.Error naming the keyword and T's name.
template <class T>
T keyword_value(const std::string& key, const py::handle v, const char* expected) {
  const bool exact = std::is_same_v<T, bool>  ? py::isinstance<py::bool_>(v)
                     : std::is_same_v<T, int> ? py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v)
                                              : py::isinstance<py::str>(v);
  if (!exact)
    throw ErrorException{dlrun::Error{dlrun::ErrorCode::kInvalidArgument,
                                      key + ": expected " + expected + ", got " +
                                          std::string(py::str(v.get_type().attr("__name__")))}};
  return v.cast<T>();
}

// RuntimeOptions from Runtime()'s keywords (device defaults to "cuda"); an unknown
// keyword or a value of another type raises dlrun.Error naming it.
dlrun::RuntimeOptions runtime_options(const py::kwargs& kw) {
  dlrun::RuntimeOptions o;
  std::string device = "cuda", objective = "sum";
  for (const auto& item : kw) {
    const std::string k = py::str(item.first);
    const py::handle v = item.second;
    if (k == "device") device = keyword_value<std::string>(k, v, "a str");
    else if (k == "cuda_device") o.cuda_device = keyword_value<int>(k, v, "an int");
    else if (k == "budget") o.budget = keyword_value<std::string>(k, v, "a str such as 'all', '40%' or '2GiB'");
    else if (k == "copy_profile") o.copy_profile = keyword_value<std::string>(k, v, "a str");
    else if (k == "prefetch_next") o.prefetch_next = keyword_value<bool>(k, v, "a bool");
    else if (k == "objective") objective = keyword_value<std::string>(k, v, "a str");
    else if (k == "shared_ring") o.shared_ring = keyword_value<bool>(k, v, "a bool");
    else if (k == "prefetch_depth") o.prefetch_depth = keyword_value<int>(k, v, "an int");
    else
      throw ErrorException{dlrun::Error{dlrun::ErrorCode::kInvalidArgument, "unknown Runtime keyword '" + k + "'"}};
  }
  o.device = parse_enum<dlrun::Device>("device", device, {{"cpu", dlrun::Device::kCPU}, {"cuda", dlrun::Device::kCUDA}});
  o.objective = parse_enum<dlrun::SplitObjective>("objective", objective,
      {{"sum", dlrun::SplitObjective::kSum}, {"max-slowdown", dlrun::SplitObjective::kMaxSlowdown}});
  return o;
}

void bind_runtime(py::module_& m) {
  py::class_<dlrun::Runtime>(m, "Runtime")
      .def(py::init([](const py::kwargs& kw) { return unwrap(dlrun::Runtime::create(runtime_options(kw))); }),
           "Several networks on one device under one memory budget: keywords device (\"cuda\"), cuda_device, "
           "budget, copy_profile, prefetch_next, objective, shared_ring, prefetch_depth (dlrun::RuntimeOptions)")
      .def("open",
           [](dlrun::Runtime& rt, const std::string& cfg, const std::string& weights, double weight,
              const py::kwargs& kw) {
             const dlrun::Options o = options_from(kw);
             dlrun::Result<dlrun::Session> r = [&] {
               py::gil_scoped_release release;
               return rt.open(cfg, weights, o, weight);
             }();
             return unwrap(std::move(r));
           },
           py::arg("cfg"), py::arg("weights"), py::arg("weight") = 1.0,
           "Opens a network on the runtime -> Session; keyword arguments are dlrun::Options fields")
      .def("memory", [](const dlrun::Runtime& rt) { return memory_dict(rt.memory()); },
           "device memory by part, and per network (a dict)")
      .def("plan_text", &dlrun::Runtime::plan_text);
}

// read_names, and the library's log level and callback.
void bind_names_and_logs(py::module_& m) {
  m.def("read_names", [](const std::string& path) { return unwrap(dlrun::read_names(path)); });
  m.def("set_log_level", [](const std::string& level) {
    dlrun::set_log_level(parse_enum<dlrun::LogLevel>("log level", level,
        {{"trace", dlrun::LogLevel::kTrace}, {"debug", dlrun::LogLevel::kDebug}, {"info", dlrun::LogLevel::kInfo},
         {"warn", dlrun::LogLevel::kWarn}, {"error", dlrun::LogLevel::kError}, {"off", dlrun::LogLevel::kOff}}));
  });
  m.def("set_log_callback", [](py::object cb) {
    if (cb.is_none()) {
      dlrun::set_log_callback(nullptr);
      return;
    }
    static const char* kNames[] = {"trace", "debug", "info", "warn", "error", "off"};
    // The callback may run on a thread without the GIL (detect() releases it).
    auto holder = std::make_shared<py::object>(cb);
    dlrun::set_log_callback([holder](dlrun::LogLevel l, const std::string& msg) {
      py::gil_scoped_acquire gil;
      try {
        (*holder)(kNames[int(l)], msg);
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("dlrun log callback");
      }
    });
  }, py::arg("callback"), "callback(level: str, message: str), or None for stderr");
}

}  // namespace

PYBIND11_MODULE(dlrun, m) {
  m.doc() = "dlrun: Darknet YOLO inference with demand layering (docs/library.md)";
  m.attr("__version__") = dlrun::version();
  m.def("apply_thread_options",
        [](const py::kwargs& kw) {
          const dlrun::Status st = dlrun::apply_thread_options(options_from(kw));
          if (!st.ok()) throw ErrorException{st.error()};
        },
        "places the calling thread as the keywords thread_priority and cpu_affinity ask (docs/library.md)");
  m.def("has_cuda", &dlrun::has_cuda, "whether this dlrun has the CUDA backend");
  m.def("option_names", &dlrun::option_names, "the keywords of Session() and Runtime.open() (dlrun::Options fields)");
  bind_error(m);
  bind_detection_types(m);
  bind_session(m);
  bind_runtime(m);
  bind_names_and_logs(m);
}
