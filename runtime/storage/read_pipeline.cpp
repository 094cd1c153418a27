#include "runtime/storage/read_pipeline.h"

#include <algorithm>
#include <cstdio>
#include <system_error>

#include "runtime/storage/crc32c.h"

namespace dlr {

namespace {

// The end (one past) of the request that starts at segment `first` of unit u.
size_t request_end(const ReadUnit& u, size_t first) {
  size_t end = first + 1;
  while (end < u.segments.size() && u.segments[end].joins_previous) ++end;
  return end;
}

// Segments read by one request must follow each other in the file and in staging.
Status check_joined(const ReadPlan& plan, const BlobFile& file) {
  for (const ReadUnit& u : plan.units)
    for (size_t k = 0; k < u.segments.size(); ++k) {
      const ReadSegment& s = u.segments[k];
      if (!s.joins_previous) continue;
      if (k == 0)
        return invalid_argument("read plan: read " + std::to_string(u.index) +
                                " starts with a segment joining a previous one");
      const ReadSegment& a = u.segments[k - 1];
      const int64_t a_end = file.offsets[size_t(a.blob)] + a.blob_offset + a.bytes;
      if (file.offsets[size_t(s.blob)] + s.blob_offset != a_end || s.staging_offset != a.staging_offset + a.bytes)
        return invalid_argument(file.path + ": blob " + std::to_string(s.blob) + " does not follow blob " +
                                std::to_string(a.blob) + " in the file as the read plan expects (prepare it again)");
    }
  return Status();
}

Status aborted() { return internal_error("read pipeline: inference aborted"); }

}  // namespace

Expected<std::unique_ptr<ReadPipeline>> ReadPipeline::open(const ReadPlan& plan, const BlobFile& file, char* staging,
                                                           ReaderKind kind, DeviceWait device_wait,
                                                           bool read_ahead, const ThreadPlacement& threads,
                                                           bool cache_hits) {
  if (read_ahead && !plan.two_stage && !(device_wait.ready && device_wait.wait))
    return invalid_argument("read pipeline: read ahead of copies needs a device wait (three stages)");
  if (bool(device_wait.ready) != bool(device_wait.wait))
    return invalid_argument("read pipeline: a device wait needs both ready and wait");
  if (staging == nullptr || reinterpret_cast<uintptr_t>(staging) % kReadAlign != 0)
    return invalid_argument("read pipeline: the staging area must be 4096-aligned");
  std::unique_ptr<ReadPipeline> p(new ReadPipeline());
  p->m_plan = &plan;
  p->m_staging = staging;
  p->m_device = std::move(device_wait);
  for (const ReadUnit& u : plan.units)
    for (const ReadSegment& s : u.segments) {
      if (s.blob < 0 || size_t(s.blob) >= file.offsets.size())
        return invalid_argument(file.path + ": the prepared file has no blob " + std::to_string(s.blob));
      if (s.staging_offset < 0 || s.staging_offset + s.bytes > plan.staging_bytes)
        return internal_error("read pipeline: a read lands outside the staging area");
    }
  p->m_file_offset = file.offsets;
  p->m_overwrites.resize(plan.units.size());
  for (size_t u = 0; u < plan.units.size(); ++u)
    p->m_overwrites[u] = latest_overlapping(plan.units, int(u), plan.units[u]);
  DLR_RETURN_IF_ERROR(check_joined(plan, file));
  p->m_crc_expected = file.crc32c;
  if (!p->m_crc_expected.empty() && p->m_crc_expected.size() != file.offsets.size())
    return invalid_argument(file.path + ": " + std::to_string(file.crc32c.size()) + " checksums for " +
                            std::to_string(file.offsets.size()) + " blobs");
  p->m_blob_bytes.assign(file.offsets.size(), 0);
  for (const ReadUnit& u : plan.units)
    for (const ReadSegment& s : u.segments)
      p->m_blob_bytes[size_t(s.blob)] = std::max(p->m_blob_bytes[size_t(s.blob)], s.blob_offset + s.bytes);
  p->m_crc.assign(file.offsets.size(), 0);
  p->m_crc_done.assign(file.offsets.size(), 0);
  p->m_path = file.path;
  p->m_kind = kind;
  p->m_threads = threads;
  p->m_cache_hits = cache_hits;
  DLR_ASSIGN_OR_RETURN(p->m_reader,
                       BlockReader::open(file.path, kind, plan.queue_depth, /*direct=*/true, threads, cache_hits));
  p->m_reader_kind = p->m_reader->kind();
  const int waits = plan.two_stage ? int(plan.layer_releases.size()) : int(plan.units.size());
  for (const ReadUnit& u : plan.units)
    if (read_ahead && u.index < plan.read_ahead_units && plan.wait_prev(u) >= waits)
      return internal_error("read pipeline: read unit " + std::to_string(u.index) + " waits for " +
                            (plan.two_stage ? "layer " : "copy ") + std::to_string(plan.wait_prev(u)) +
                            ", which the plan does not have");
  p->m_read_ahead = read_ahead && plan.read_ahead_units > 0;
  p->m_timings.resize(plan.units.size());
  p->m_submitted.resize(plan.units.size());
  p->m_landed.resize(plan.units.size());
  p->m_tickets.resize(plan.units.size());
  for (size_t u = 0; u < plan.units.size(); ++u) p->m_tickets[u].assign(plan.units[u].segments.size(), -1);
  try {
    p->m_thread = start_placed_thread("dlr-reader", threads, [q = p.get()] { q->thread_main(); });
  } catch (const std::system_error& e) {
    return internal_error(std::string("read pipeline: cannot start the reader thread: ") + e.what());
  }
  return p;
}

ReadPipeline::~ReadPipeline() {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_quit = true;
    m_abort = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) m_thread.join();
}

ReaderKind ReadPipeline::reader_kind() const { return m_reader_kind; }

int ReadPipeline::start() {
  int gen = 0;
  {
    std::lock_guard<std::mutex> lock(m_mu);
    gen = ++m_generation;
    m_progress = -1;
    m_abort = false;
    m_t0 = std::chrono::steady_clock::now();
  }
  m_cv.notify_all();
  return gen;
}

int ReadPipeline::started() const {
  std::lock_guard<std::mutex> lock(m_mu);
  return m_generation;
}

// The device's words (DeviceWait::landed), reader thread only: a release store, so that
// device work that sees the value also sees the unit's bytes in staging.
void ReadPipeline::set_landed(int unit, int value) {
  if (m_device.landed) __atomic_store_n(&m_device.landed[unit], int32_t(value), __ATOMIC_RELEASE);
}

// Inference `gen` failed or was aborted, its reads drained: device work waiting on its
// words may go on (over whatever staging holds; the inference reports the error).
void ReadPipeline::release_landed(int gen) {
  if (!m_device.landed) return;
  for (size_t u = 0; u < m_plan->units.size(); ++u)
    if (__atomic_load_n(&m_device.landed[u], __ATOMIC_RELAXED) < gen) set_landed(int(u), gen);
}

// A read ahead of `gen` was given up, its reads drained: its units are read again after
// start(), so device work of `gen` must not find them landed before then.
void ReadPipeline::take_back_landed(int gen) {
  if (!m_device.landed) return;
  for (size_t u = 0; u < m_plan->units.size(); ++u)
    if (__atomic_load_n(&m_device.landed[u], __ATOMIC_RELAXED) >= gen) set_landed(int(u), gen - 1);
}

Status ReadPipeline::wait_unit(int u) {
  std::unique_lock<std::mutex> lock(m_mu);
  const int gen = m_generation;
  m_cv.wait(lock, [&] { return m_error_gen == gen || m_done_gen >= gen || (m_read_gen == gen && m_published >= u); });
  if (m_error_gen == gen) return m_error;
  if (m_done_gen < gen && m_published < u) return internal_error("read pipeline: read unit " + std::to_string(u) + " never landed");
  return Status();
}

void ReadPipeline::progress(int index) {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_progress = std::max(m_progress, index);
  }
  m_cv.notify_all();
}

void ReadPipeline::abort() {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_abort = true;
  }
  m_cv.notify_all();
}

Status ReadPipeline::finish() {
  std::unique_lock<std::mutex> lock(m_mu);
  const int gen = m_generation;
  m_cv.wait(lock, [&] { return m_done_gen >= gen; });
  return m_error_gen == gen ? m_error : Status();
}

// Whether the reader may begin inference `gen` before its start(): the previous one was
// started, its reads are over without error, it was not aborted, and no read ahead of
// `gen` was cancelled.
bool ReadPipeline::may_read_ahead(int gen) const {
  return m_read_ahead && gen >= 2 && m_generation == gen - 1 && m_done_gen == gen - 1 && m_error_gen != gen - 1 &&
         !m_abort && m_no_ahead_gen != gen;
}

void ReadPipeline::thread_main() {
  int gen = 1;  // the inference to read next
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(m_mu);
      m_cv.wait(lock, [&] { return m_quit || m_generation >= gen || may_read_ahead(gen); });
      if (m_quit) return;
      m_read_gen = gen;
      m_published = -1;
    }
    // A failed read is sticky in a BlockReader: after a failed inference the reader is
    // dropped and the next inference opens a fresh one (the file may have been repaired),
    // so a failed detect leaves the session usable.
    Status st;
    bool cancelled = false;
    if (!m_reader) {
      Expected<std::unique_ptr<BlockReader>> again =
          BlockReader::open(m_path, m_kind, m_plan->queue_depth, /*direct=*/true, m_threads, m_cache_hits);
      if (again.ok()) m_reader = std::move(again).value();
      else st = again.status();
    }
    int64_t cached = 0;
    if (m_reader) {
      const int64_t cached_before = m_reader->bytes_cached();
      st = read_inference(gen, &cancelled);
      const Status drained = m_reader->wait_all();  // no read may still write into staging
      if (st.ok() && !drained.ok()) st = drained;
      cached = m_reader->bytes_cached() - cached_before;
      if (!st.ok()) m_reader.reset();  // waits for (or cancels) whatever is still in flight
    }
    {
      std::unique_lock<std::mutex> lock(m_mu);
      if (cancelled && st.ok()) {
        // A read ahead given up (the current inference was aborted): read `gen` after its start().
        take_back_landed(gen);
        m_no_ahead_gen = gen;
        m_read_gen = 0;
        m_published = -1;
      } else {
        if (!st.ok()) {
          m_error = st;
          m_error_gen = gen;
          release_landed(gen);
        }
        // Every read of `gen` may have been read ahead: its timings are taken on its own
        // clock (m_t0 of its start()), and it is done only once started.
        m_cv.wait(lock, [&] { return m_quit || m_generation >= gen; });
        if (m_quit) return;
        const auto ms = [&](std::chrono::steady_clock::time_point t) {
          return std::chrono::duration<double, std::milli>(t - m_t0).count();
        };
        m_cached_bytes = cached;
        if (st.ok())
          for (const ReadUnit& u : m_plan->units)
            m_timings[size_t(u.index)] = ReadTiming{u.index, u.first_layer, u.bytes, ms(m_submitted[size_t(u.index)]),
                                                    ms(m_landed[size_t(u.index)])};
        m_done_gen = gen;
        ++gen;
      }
    }
    m_cv.notify_all();
  }
}

// m_mu held. Unit u of inference `gen`: whether it may be read now.
ReadPipeline::Gate ReadPipeline::gate_state(int gen, const ReadUnit& u) const {
  if (m_quit) return Gate::kStop;
  if (m_generation >= gen) {  // started: the plan's own wait (and the device's, below)
    if (m_abort) return Gate::kStop;
    const int need = m_plan->wait(u);
    return need < 0 || m_progress >= need ? Gate::kPass : Gate::kWait;
  }
  // Ahead: the previous inference (m_generation == gen - 1) still runs or has finished.
  if (m_abort) return Gate::kCancel;
  if (u.index >= m_plan->read_ahead_units) return Gate::kWait;  // until start()
  const int prev = m_plan->wait_prev(u);
  return prev < 0 || m_progress >= prev ? Gate::kPass : Gate::kWait;
}

// Whether unit u may be read now. Staging still in use is waited for only when nothing
// is in flight (otherwise the caller lands the oldest unit first, which the engine
// may need in order to make the progress this unit waits for).
Status ReadPipeline::gate(int gen, const ReadUnit& u, bool in_flight, bool* passed, bool* cancelled) {
  *passed = false;
  bool started = false;
  {
    std::unique_lock<std::mutex> lock(m_mu);
    Gate g = gate_state(gen, u);
    if (g == Gate::kWait && in_flight) return Status();
    if (g == Gate::kWait) {
      m_cv.wait(lock, [&] { return (g = gate_state(gen, u)) != Gate::kWait; });
    }
    if (g == Gate::kStop) return aborted();
    if (g == Gate::kCancel) {
      *cancelled = true;
      return Status();
    }
    started = m_generation >= gen;
  }
  // Started: this inference's wait; ahead: the previous inference's, whose event the
  // engine recorded before its progress passed it (and records again only after this
  // read has landed: the copy or layer that reuses it needs a later read).
  const int need = started ? m_plan->wait(u) : m_plan->wait_prev(u);
  if (m_device.ready && need >= 0) {
    if (in_flight && !m_device.ready(need)) return Status();
    if (!in_flight) DLR_RETURN_IF_ERROR(m_device.wait(need));
  }
  *passed = true;
  return Status();
}

// Chains the CRC32C of the unit's own bytes within staging [staging_lo, staging_lo +
// bytes) of segment s into its blob's running checksum; a blob whose bytes are all in
// compares it with the prepared file's header. Checked in order (Cursor): units are
// published in order and cover each blob's bytes in order, once.
Status ReadPipeline::check_range(const ReadUnit& u, const ReadSegment& s, int64_t staging_lo, int64_t bytes) {
  if (m_crc_expected.empty()) return Status();
  const int64_t own_lo = u.own_offset, own_hi = u.own_offset + u.own_bytes;
  const int64_t lo = std::max(own_lo, staging_lo), hi = std::min(own_hi, staging_lo + bytes);
  if (lo >= hi) return Status();
  const size_t b = size_t(s.blob);
  const int64_t blob_lo = s.blob_offset + (lo - s.staging_offset);
  if (blob_lo != m_crc_done[b])
    return internal_error("read pipeline: blob " + std::to_string(b) + " bytes out of order (" + std::to_string(blob_lo) +
                          " after " + std::to_string(m_crc_done[b]) + ")");
  m_crc[b] = crc32c(m_staging + lo, size_t(hi - lo), m_crc[b]);
  m_crc_done[b] += hi - lo;
  if (m_crc_done[b] == m_blob_bytes[b] && m_crc[b] != m_crc_expected[b]) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), ": blob %zu at offset %lld, %lld bytes: CRC32C %08x, the header says %08x", b,
                  static_cast<long long>(m_file_offset[b]), static_cast<long long>(m_blob_bytes[b]), m_crc[b],
                  m_crc_expected[b]);
    return parse_error(m_path + buf + " (the file changed or is corrupt: prepare it again)");
  }
  return Status();
}

// Whether bytes have landed that are not checked yet.
bool ReadPipeline::unchecked(const Cursor& c) {
  return c.check_unit < c.land_unit || (c.check_unit == c.land_unit && c.check_seg < c.land_seg);
}

// Checks up to kCheckSliceBytes of the oldest landed bytes not checked yet.
Status ReadPipeline::check_next(Cursor* c) {
  const ReadUnit& u = m_plan->units[size_t(c->check_unit)];
  if (size_t(c->check_seg) < u.segments.size()) {
    const ReadSegment& s = u.segments[size_t(c->check_seg)];
    const int64_t n = std::min(kCheckSliceBytes, s.bytes - c->check_off);
    DLR_RETURN_IF_ERROR(check_range(u, s, s.staging_offset + c->check_off, n));
    c->check_off += n;
    if (c->check_off < s.bytes) return Status();
    c->check_off = 0;
    ++c->check_seg;
  }
  if (size_t(c->check_seg) == u.segments.size()) {
    ++c->check_unit;
    c->check_seg = 0;
  }
  return Status();
}

// Checks every unit up to `unit` (landed: its staging is about to be read into again).
Status ReadPipeline::check_through(Cursor* c, int unit) {
  while (c->check_unit <= unit) {
    if (!unchecked(*c))
      return internal_error("read pipeline: read unit " + std::to_string(unit) +
                            "'s staging is needed again before it landed");
    DLR_RETURN_IF_ERROR(check_next(c));
  }
  return Status();
}

// Reads the units of inference `gen` in order, request by request: the queue is refilled
// one request at a time as the oldest one lands, across unit boundaries, so that
// queue_depth requests stay in flight while staging allows (a unit's gate passes once,
// before its first segment). Units are published in order once all their segments have
// landed; their bytes are checked after, a slice at a time whenever nothing can be
// submitted and the oldest request has not landed yet, and before a unit overwrites
// their staging. The inference's reads are over once every byte is checked.
Status ReadPipeline::read_inference(int gen, bool* cancelled) {
  const int n = int(m_plan->units.size());
  std::fill(m_crc.begin(), m_crc.end(), 0u);
  std::fill(m_crc_done.begin(), m_crc_done.end(), int64_t(0));
  Cursor c;
  while (c.land_unit < n) {
    bool submitted = false;
    DLR_RETURN_IF_ERROR(submit_next(gen, &c, cancelled, &submitted));
    if (submitted) continue;
    const bool in_flight = !(c.land_unit == c.submit_unit && c.land_seg == c.submit_seg);
    bool landed = true, unit_done = false;
    if (unchecked(c)) {
      // A request that has landed comes first (its slot is refilled, its unit published);
      // else the oldest unchecked bytes are checked.
      if (in_flight) DLR_RETURN_IF_ERROR(land_next(&c, 0, &landed, &unit_done));
      if (!in_flight || !landed) {
        DLR_RETURN_IF_ERROR(check_next(&c));
        continue;
      }
    } else {
      if (!in_flight) return Status();  // cancelled, nothing in flight
      // Land the oldest request in flight (gated: or look at the gate again after kGatePollUs).
      DLR_RETURN_IF_ERROR(land_next(&c, c.gated ? kGatePollUs : -1, &landed, &unit_done));
    }
    if (unit_done) DLR_RETURN_IF_ERROR(publish(gen, &c));
  }
  while (unchecked(c)) DLR_RETURN_IF_ERROR(check_next(&c));
  return Status();
}

// Submits the next request (the next segment and those joining it) if the queue has room
// and its unit may be read now.
Status ReadPipeline::submit_next(int gen, Cursor* c, bool* cancelled, bool* submitted) {
  *submitted = false;
  c->gated = false;
  const int n = int(m_plan->units.size());
  if (c->submit_unit >= n || c->in_flight >= m_plan->queue_depth || *cancelled) return Status();
  const size_t ui = size_t(c->submit_unit);
  const ReadUnit& u = m_plan->units[ui];
  if (c->submit_seg == 0) {  // the unit's first segment: its gate
    const bool pending = c->in_flight > 0 || c->land_unit < c->submit_unit || unchecked(*c);
    bool passed = false;
    DLR_RETURN_IF_ERROR(gate(gen, u, pending, &passed, cancelled));
    c->gated = !passed && pending && !*cancelled;
    if (!passed) return Status();
    DLR_RETURN_IF_ERROR(check_through(c, m_overwrites[ui]));
    m_submitted[ui] = std::chrono::steady_clock::now();
  }
  if (size_t(c->submit_seg) < u.segments.size()) {
    const size_t first = size_t(c->submit_seg), end = request_end(u, first);
    const ReadSegment& s = u.segments[first];
    ReadRequest r;
    r.file_offset = m_file_offset[size_t(s.blob)] + s.blob_offset;
    r.bytes = 0;
    for (size_t k = first; k < end; ++k) r.bytes += u.segments[k].bytes;
    r.dst = m_staging + s.staging_offset;
    DLR_ASSIGN_OR_RETURN(m_tickets[ui][first], m_reader->submit(r));
    ++c->in_flight;
    c->submit_seg = int(end);
  }
  if (size_t(c->submit_seg) == u.segments.size()) {
    ++c->submit_unit;
    c->submit_seg = 0;
  }
  *submitted = true;
  return Status();
}

// Waits for the oldest request submitted (for timeout_us at most when >= 0: *landed
// false when it is still in flight then). Requests complete in any order; they are
// landed in order. *unit_done: every segment of its unit is in.
Status ReadPipeline::land_next(Cursor* c, int64_t timeout_us, bool* landed, bool* unit_done) {
  *landed = true;
  *unit_done = false;
  const size_t ui = size_t(c->land_unit);
  const ReadUnit& u = m_plan->units[ui];
  if (size_t(c->land_seg) < u.segments.size()) {
    const size_t first = size_t(c->land_seg);
    if (timeout_us >= 0) {
      DLR_ASSIGN_OR_RETURN(*landed, m_reader->wait_for(m_tickets[ui][first], timeout_us));
      if (!*landed) return Status();
    } else {
      DLR_RETURN_IF_ERROR(m_reader->wait(m_tickets[ui][first]));
    }
    --c->in_flight;
    c->land_seg = int(request_end(u, first));
  }
  *unit_done = size_t(c->land_seg) == u.segments.size();
  return Status();
}

// Every segment of the oldest unit has landed: announce it (the device's word, then
// wait_unit()) and go on with the next.
Status ReadPipeline::publish(int gen, Cursor* c) {
  const int u = c->land_unit;
  m_landed[size_t(u)] = std::chrono::steady_clock::now();
  set_landed(u, gen);  // before wait_unit() can return it
  {
    std::lock_guard<std::mutex> lock(m_mu);
    if (m_quit || (m_generation == gen && m_abort)) return aborted();
    m_published = u;
  }
  m_cv.notify_all();
  ++c->land_unit;
  c->land_seg = 0;
  return Status();
}

}  // namespace dlr
