// ReadPipeline: the read stage of weights from storage. A reader thread follows a
// ReadPlan (runtime/streaming/read_plan.h) once per inference: it reads each unit's
// segments from the prepared file (BlockReader, direct I/O, up to queue_depth requests
// in flight) into the staging area, and publishes units in order as they land. The
// engine's thread consumes them (copy or kernel) and reports its progress, which
// frees staging for later reads. Every blob's bytes are checked against the prepared
// file's CRC32C as they land (a corrupt or changed file fails the inference).
//
// Threads: start(), wait_unit(), progress() and finish() are called by ONE engine
// thread; the reader thread is internal. The staging area is owned by the engine and
// must outlive the pipeline. Nothing is allocated per inference.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/engine.h"  // ReadTiming
#include "runtime/storage/block_reader.h"
#include "runtime/streaming/read_plan.h"
#include "runtime/weight_source.h"

namespace dlr {

class ReadPipeline {
 public:
  // Called by the reader thread before read unit u whose staging bytes are still in
  // use once the engine's progress has reached the unit's wait (ReadUnit::wait_unit
  // or wait_layer): `ready` answers without blocking whether the device is done with
  // them; `wait` blocks until it is. Empty: progress alone suffices (CPU).
  struct DeviceWait {
    std::function<bool(const ReadUnit&)> ready;
    std::function<Status(const ReadUnit&)> wait;
  };

  // `staging` holds plan.staging_bytes (4096-aligned). `file` gives every blob's offset.
  static Expected<std::unique_ptr<ReadPipeline>> open(const ReadPlan& plan, const BlobFile& file, char* staging,
                                                      ReaderKind kind, DeviceWait device_wait);
  ~ReadPipeline();
  ReadPipeline(const ReadPipeline&) = delete;
  ReadPipeline& operator=(const ReadPipeline&) = delete;

  // Starts the reads of one inference (the previous one must be finished).
  void start();
  // Blocks until read unit u has landed in staging. An error of the reader (one line
  // naming the file and offset) is returned here and by finish().
  Status wait_unit(int u);
  // The engine's progress: three stages, the highest copy unit enqueued (its copy_done
  // event recorded); two stages, the highest layer finished (CPU) or whose done event
  // is recorded (GPU). Monotonic within an inference.
  void progress(int index);
  // Waits until the reader is done with this inference (every read landed or, after
  // an error or abort(), every read in flight drained). Returns the first error.
  Status finish();
  // The engine gave up on this inference: the reader stops at its next unit.
  void abort();

  const std::vector<ReadTiming>& timings() const { return m_timings; }  // valid after finish()
  ReaderKind reader_kind() const;

 private:
  ReadPipeline() = default;
  void thread_main();
  Status read_inference();
  Status gate(const ReadUnit& u, bool in_flight, bool* passed);
  Status check_unit(const ReadUnit& u);

  const ReadPlan* m_plan = nullptr;
  std::vector<int64_t> m_file_offset;
  // Checksums (BlobFile::crc32c): per blob, expected, running over this inference, bytes in.
  std::vector<uint32_t> m_crc_expected;
  std::vector<int64_t> m_blob_bytes;
  std::vector<uint32_t> m_crc;
  std::vector<int64_t> m_crc_done;
  char* m_staging = nullptr;
  std::unique_ptr<BlockReader> m_reader;  // reopened after a failed inference (errors are sticky in it)
  std::string m_path;
  ReaderKind m_kind = ReaderKind::kAuto;
  ReaderKind m_reader_kind = ReaderKind::kAuto;  // the backend in use
  DeviceWait m_device;

  std::thread m_thread;
  std::mutex m_mu;
  std::condition_variable m_cv;
  bool m_quit = false;
  bool m_running = false;     // an inference's reads are under way
  int m_generation = 0;       // start() count
  bool m_abort = false;
  int m_published = -1;       // highest unit landed (in order)
  int m_progress = -1;
  Status m_error;
  std::vector<ReadTiming> m_timings;
  std::vector<std::vector<int64_t>> m_tickets;  // per unit, per segment: the reader's ticket
  std::chrono::steady_clock::time_point m_t0;
};

}  // namespace dlr
