// dlrun public API: a session is one network opened for inference.
//
//   dlrun::Options o;                      // CPU, fp32; see options.h
//   auto s = dlrun::Session::open("yolov4.cfg", "yolov4.weights", o);
//   if (!s) { fprintf(stderr, "%s\n", s.error().message.c_str()); return 1; }
//   auto dets = s->detect(image);          // Result<std::vector<Detection>>
//
// open() checks the options, parses the cfg, checks the weights against it,
// compiles the model and allocates everything; detect() runs pre-processing, the
// network and Darknet's post-processing, allocating nothing in the network itself.
// A failed call leaves the session usable. Threads: one session is used by one
// thread at a time; several sessions may run on several threads at once (CPU
// threads are shared between them, Options::threads). Move-only.
// Sessions opened on a Runtime (runtime.h) share its device memory and budget.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dlrun/options.h"
#include "dlrun/result.h"
#include "dlrun/types.h"

namespace dlrun {

class Session {
 public:
  static Result<Session> open(const std::string& cfg_path, const std::string& weights_path,
                              const Options& options = {});
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // One image -> its detections. Needs Options::batch >= 1 (any batch works).
  Result<std::vector<Detection>> detect(const ImageView& image);
  // 1..batch images in one inference -> one detection list per image.
  Result<std::vector<std::vector<Detection>>> detect_batch(const std::vector<ImageView>& images);

  // What the last successful detect() did (timing, per layer, memory).
  Report last_report() const;
  NetworkInfo info() const;
  const Options& options() const;
  // The compiled model as text (dlrun --print-plan).
  std::string plan_text() const;

 private:
  friend class Runtime;
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

// Places the calling thread as options.thread_priority and options.cpu_affinity ask (the
// session places its own threads itself). Call it on the thread that runs detect(),
// before Session::open(): the threads open() starts (the CUDA driver's, the CPU
// backend's OpenMP team) inherit the placement. A CPU the process may not use is an
// error and changes nothing; a priority not permitted is one warning line (the log), not
// an error. normal and "" change nothing.
Status apply_thread_options(const Options& options);

// Class names, one a line (a Darknet .names file); the error names the file.
Result<std::vector<std::string>> read_names(const std::string& path);

}  // namespace dlrun
