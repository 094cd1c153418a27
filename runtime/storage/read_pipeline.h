// ReadPipeline: the read stage of weights from storage. A reader thread follows a
// ReadPlan (runtime/streaming/read_plan.h) once per inference: it reads each unit's
// segments from the prepared file (BlockReader, direct I/O, up to queue_depth requests
// in flight) into the staging area, and publishes units in order as they land. The
// engine's thread consumes them (copy or kernel) and reports its progress, which
// frees staging for later reads. Every blob's bytes are checked against the prepared
// file's CRC32C by the reader thread after their unit is published, while the engine
// uses them: the reader lands and resubmits requests first and checks in the time it
// would otherwise wait. A unit's bytes are checked before any read overwrites its
// staging and before the inference's reads are over, so a corrupt or changed file fails
// the inference (finish() returns the error; the device or the CPU may have computed
// with the bad bytes, but the inference returns no result).
//
// Read ahead (open's `read_ahead`): once an inference's reads have all landed without
// error, the reader goes on with the next inference's units [0, plan.read_ahead_units),
// each once the current inference's progress has passed the unit's wait_layer_prev (two
// stages) or wait_unit_prev (three stages) and, with a DeviceWait, the device is done
// with it, i.e. while the current inference still computes. The rest of the next
// inference is read after its start(). Same staging, same checks; bytes read ahead
// belong to the next inference (a read or CRC error found ahead fails that one, not the
// current), and a file changed between two inferences may be seen by the second one's
// units read ahead (all of them, when the staging holds a whole inference's reads) only
// as it was before the change. An inference that fails or is aborted is not read ahead
// of. The engine must not start() an inference before the device is done with the
// previous one's staging (the units that overlap nothing earlier in their inference are
// then read without a device wait).
//
// Threads: start(), wait_unit(), progress(), finish() and abort() are called by ONE
// engine thread; the reader thread is internal. The staging area is owned by the
// engine and must outlive the pipeline (the destructor stops and joins the reader,
// draining its reads in flight). Nothing is allocated per inference.
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
#include "runtime/report.h"  // ReadTiming
#include "runtime/storage/block_reader.h"
#include "runtime/streaming/read_plan.h"
#include "runtime/weight_source.h"

namespace dlr {

class ReadPipeline {
 public:
  // Called by the reader thread before a read whose staging bytes are still in use once
  // the engine's progress has reached the read's wait: the copy (three stages) or the
  // layer (two stages) given by index, of this inference (ReadUnit::wait_unit or
  // wait_layer) or, reading ahead, of the previous one (wait_unit_prev or
  // wait_layer_prev). `ready` answers without blocking whether the device is done with
  // it; `wait` blocks until it is. Empty: progress alone suffices (CPU).
  //
  // `landed` (optional): one word per read unit in host memory that device work polls
  // instead of the engine's thread waiting in wait_unit() (a CUDA graph replays a whole
  // inference: kernels/cuda/host_wait.h). The reader stores the inference's number (the
  // value start() returned) into word u with release order once unit u has landed (its
  // check may still be running; a failed check fails the inference). After an error in
  // an inference, or its abort, every word still below its number is set to it once the
  // reads in flight have drained, so that the device work waiting on them ends (the
  // inference reports the error; the staging then holds whatever was read). A read ahead
  // that is given up puts its words back to the inference before (the units are read
  // again after start()). Only the reader thread writes the words; they never decrease
  // below an inference that has started.
  struct DeviceWait {
    std::function<bool(int index)> ready;
    std::function<Status(int index)> wait;
    int32_t* landed = nullptr;
  };

  // `staging` holds plan.staging_bytes (4096-aligned). `file` gives every blob's offset.
  // `read_ahead`: read the next inference's first units early (above); a three-stage plan
  // needs a DeviceWait for it. `threads`: the placement of the reader thread
  // ("dlr-reader") and of the block reader's workers (thread_placement.h). `cache_hits`:
  // bytes the page cache holds are read from it, the rest direct (BlockReader::open).
  static Expected<std::unique_ptr<ReadPipeline>> open(const ReadPlan& plan, const BlobFile& file, char* staging,
                                                      ReaderKind kind, DeviceWait device_wait,
                                                      bool read_ahead = false, const ThreadPlacement& threads = {},
                                                      bool cache_hits = false);
  ~ReadPipeline();
  ReadPipeline(const ReadPipeline&) = delete;
  ReadPipeline& operator=(const ReadPipeline&) = delete;

  // Starts the reads of one inference (the previous one must be finished) and returns
  // its number: 1, 2, ... (the value written into DeviceWait::landed).
  int start();
  // The number start() returned last (0 before the first start()).
  int started() const;
  // Blocks until read unit u of this inference has landed in staging. An error of the
  // reader (one line naming the file and offset) is returned here and by finish(); a
  // failed check of u's bytes may be found after this returned (finish() returns it).
  Status wait_unit(int u);
  // The engine's progress: three stages, the highest copy unit enqueued (its copy_done
  // event recorded); two stages, the highest layer finished (CPU) or whose done event
  // is recorded (GPU). Monotonic within an inference. A layer is reported only after
  // wait_unit() of the read it needs has returned.
  void progress(int index);
  // Waits until the reader is done with this inference (every read landed or, after
  // an error or abort(), every read in flight drained). Returns this inference's first
  // error. With read ahead the reader may then go on with the next inference's first units.
  Status finish();
  // The engine gave up on this inference: the reader stops at its next unit.
  void abort();

  // This inference's reads, valid after finish() until the next start(); ms from
  // start(), negative for units read ahead (before start()).
  const std::vector<ReadTiming>& timings() const { return m_timings; }
  // Of this inference's reads (valid as timings()), the bytes read from the page cache.
  int64_t cached_bytes() const { return m_cached_bytes; }
  ReaderKind reader_kind() const;
  bool read_ahead() const { return m_read_ahead; }

 private:
  enum class Gate { kWait, kPass, kStop, kCancel };
  ReadPipeline() = default;
  void thread_main();
  bool may_read_ahead(int gen) const;  // m_mu held
  Gate gate_state(int gen, const ReadUnit& u) const;  // m_mu held
  // read_inference's position: the next segment to submit, to land and to check (unit,
  // segment; check_off bytes into it), and the requests in flight. Checks trail landing.
  struct Cursor {
    int submit_unit = 0, submit_seg = 0;
    int land_unit = 0, land_seg = 0;
    int check_unit = 0, check_seg = 0;
    int64_t check_off = 0;
    int64_t in_flight = 0;
    // The next unit's gate did not pass while requests were in flight (its staging
    // still in use): the oldest request is then waited for in slices of kGatePollUs,
    // the gate checked again between them, so that staging coming free is read into
    // at once rather than when that request lands.
    bool gated = false;
  };
  static constexpr int64_t kGatePollUs = 20;
  // The most bytes checked before the reader looks at its requests and gates again.
  static constexpr int64_t kCheckSliceBytes = int64_t(256) << 10;
  Status read_inference(int gen, bool* cancelled);
  Status submit_next(int gen, Cursor* c, bool* cancelled, bool* submitted);
  // Lands the oldest request; timeout_us < 0 waits for it, else *landed says whether it did.
  Status land_next(Cursor* c, int64_t timeout_us, bool* landed, bool* unit_done);
  Status publish(int gen, Cursor* c);
  Status gate(int gen, const ReadUnit& u, bool in_flight, bool* passed, bool* cancelled);
  static bool unchecked(const Cursor& c);
  Status check_next(Cursor* c);
  Status check_through(Cursor* c, int unit);
  Status check_range(const ReadUnit& u, const ReadSegment& s, int64_t staging_lo, int64_t bytes);
  void set_landed(int unit, int value);
  void release_landed(int gen);
  void take_back_landed(int gen);

  const ReadPlan* m_plan = nullptr;
  std::vector<int64_t> m_file_offset;
  // Per unit: the latest earlier unit of its inference whose staging it overwrites (-1
  // none); that unit's bytes are checked before this one is read.
  std::vector<int> m_overwrites;
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
  ThreadPlacement m_threads;
  DeviceWait m_device;
  bool m_read_ahead = false;
  bool m_cache_hits = false;

  // Reader thread only: per unit, when its first request was submitted and its last landed.
  std::vector<std::chrono::steady_clock::time_point> m_submitted, m_landed;
  // Per unit, per segment: the ticket of the request the segment starts (unused for joined ones).
  std::vector<std::vector<int64_t>> m_tickets;

  std::thread m_thread;
  mutable std::mutex m_mu;
  std::condition_variable m_cv;
  // Under m_mu. Inferences are numbered 1, 2, ... by start() (m_generation); the reader
  // reads inference m_read_gen (at most m_generation + 1: ahead), m_done_gen is the last
  // one whose reads are over (landed, failed or drained).
  bool m_quit = false;
  int m_generation = 0;
  int m_read_gen = 0;
  int m_done_gen = 0;
  int m_no_ahead_gen = 0;     // a read ahead of this inference was cancelled: read it after start()
  bool m_abort = false;       // abort() of inference m_generation
  int m_published = -1;       // highest unit of m_read_gen landed (in order)
  int m_progress = -1;        // of inference m_generation
  Status m_error;             // the first error of inference m_error_gen
  int m_error_gen = 0;
  std::chrono::steady_clock::time_point m_t0;  // start() of m_generation
  std::vector<ReadTiming> m_timings;           // of m_done_gen, filled by the reader when it is done
  int64_t m_cached_bytes = 0;                  // of m_done_gen, likewise
};

}  // namespace dlr
