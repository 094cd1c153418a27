// The backends of this build (the CPU always; CUDA when built with it) behind one set
// of factories: a Session and a Runtime create their target, engine, shared memory and
// the device's early start-up here, and include no backend's own header. CUDA calls go
// through its table (device_backend.h): the first one loads it where it is a plugin.
#pragma once

#include <memory>
#include <string>

#include "runtime/compile/compiled_model.h"
#include "runtime/core/status.h"
#include "runtime/engine.h"
#include "runtime/multi/shared_memory.h"

namespace dlr {

class WeightSource;

// Where a device's early start-up went (host clock, ms; 0 where a part does not apply).
struct DeviceStartTiming {
  double context_ms = 0;  // CUDA: the helper thread's context creation
  double cudnn_ms = 0;    // CUDA: the helper thread's cudnnCreate, after the context
  double prime_ms = 0;    // CUDA: the helper thread's tiny convolution set-up, after that
  double waited_ms = 0;   // how long wait() blocked the caller
};

// A device's start-up begun early (CUDA: context and cuDNN handle made on a helper
// thread while the caller parses and compiles). The destructor joins the helper.
class DeviceStart {
 public:
  virtual ~DeviceStart() = default;
  // Joins (the first call) and returns what the helper reported (an error names the
  // call); later calls return the same without waiting.
  virtual Status wait() = 0;
  virtual DeviceStartTiming timing() const = 0;  // after wait()
  // The first compile is done: libraries `model` may need start loading beside the
  // device's start-up (CUDA: cuBLAS, cublas_loader.h), so the engine finds them loaded.
  // A hint: what it does not load, the engine loads when it needs it. Call at most once.
  virtual void load_for(const CompiledModel& model) { (void)model; }
};

// Starts `device` early; null where there is nothing to start (the CPU).
std::unique_ptr<DeviceStart> start_device(DeviceKind device, int index);

// The compile target of device `index` of `device`: the CPU, or a GPU with its copy
// profile `copy_profile` ("" for none: preload; "auto", a built-in name or a dlprobe JSON
// file; runtime/streaming/profile_select.h). A CUDA device in a build without CUDA is
// an error saying so.
Expected<Target> make_target(DeviceKind device, int index, const std::string& copy_profile);

// The engine that executes `model` on its target's device. `start`: an early start-up
// of the same device (its cuDNN handle is used), or null. Weights are prepared from
// `weights` (runtime/engine.h for the open sequence).
Expected<std::unique_ptr<Engine>> create_engine(const CompiledModel& model, WeightSource& weights,
                                                DeviceStart* start = nullptr);

// Free and total memory of device `index` of `device`, for memory reports (the CPU, or
// a build without CUDA: an error; callers report nothing then).
Status device_memory_info(DeviceKind device, int index, int64_t* free_bytes, int64_t* total_bytes);
// The device's one-line description for reports ("cpu"; a GPU's name, architecture,
// driver and cuDNN; "none" where the build has no such backend).
std::string device_description(DeviceKind device, int index);

// The memory a Runtime's models share on `device` (runtime/multi/shared_memory.h).
Expected<std::unique_ptr<SharedMemory>> make_shared_memory(DeviceKind device, int index);

// Lines for --version: the device's libraries as built and as loaded, and its first
// GPU ("" for the CPU; one line saying why where the backend is absent).
std::string device_versions(DeviceKind device);

}  // namespace dlr
