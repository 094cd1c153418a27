#include "tools/common/frames.h"

#include <chrono>
#include <cstdio>
#include <thread>

namespace dlr::tools {
namespace {

// A stream input that reconnects when it stops: a URL whose length is not known.
bool is_live(const InputItem& it, const VideoReader& v) {
  return it.kind == InputKind::kStream && stream_backend(it.source) == StreamBackend::kFFmpeg &&
         v.frame_count() < 0;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// An error's message without the "NAME: " it starts with.
std::string without_name(const Status& st, const std::string& name) {
  const std::string& m = st.message();
  return m.compare(0, name.size() + 2, name + ": ") == 0 ? m.substr(name.size() + 2) : m;
}

}  // namespace

Expected<std::unique_ptr<VideoReader>> FrameReader::open_item(int item) {
  if (auto p = m_probed.find(item); p != m_probed.end()) {
    std::unique_ptr<VideoReader> v = std::move(p->second);
    m_probed.erase(p);
    return v;
  }
  const InputItem& it = m_items[size_t(item)];
  if (it.kind == InputKind::kCamera) return VideoReader::open_camera(it.camera);
  if (it.kind == InputKind::kStream) return VideoReader::open_stream(it.source, it.path);
  return VideoReader::open_file(it.path);
}

Status FrameReader::probe() {
  m_total = 0;
  for (size_t i = 0; i < m_items.size(); ++i) {
    const InputItem& it = m_items[i];
    if (it.kind == InputKind::kImage) {
      if (m_total >= 0) ++m_total;
      continue;
    }
    DLR_ASSIGN_OR_RETURN(std::unique_ptr<VideoReader> v, open_item(int(i)));
    if (m_fps == 0) m_fps = v->fps();
    if (it.kind == InputKind::kCamera || v->frame_count() < 0)
      m_total = -1;
    else if (m_total >= 0)
      m_total += v->frame_count();
    if (it.kind == InputKind::kStream) m_probed[int(i)] = std::move(v);
  }
  return Status();
}

Expected<bool> FrameReader::next(Frame* f) {
  Expected<bool> r = next_frame(f);
  if (!r.ok()) {
    // The failing input is done with: the next call goes on with the one after it.
    m_failed_path = m_items[size_t(m_current)].path;
    m_video.reset();
  }
  return r;
}

bool FrameReader::reconnect(const std::string& why) {
  const InputItem& it = m_items[size_t(m_video_item)];
  const int n = m_reconnect.reconnect;
  const auto stopping = [&] { return m_reconnect.stop != nullptr && *m_reconnect.stop != 0; };
  std::string state = "the stream stopped after " + std::to_string(m_video_frame) + " frames" + why;
  while (m_attempts < n && !stopping()) {
    ++m_attempts;
    notice(it.path + ": " + state + "; reconnecting in " + seconds_text(m_reconnect.delay_s) + " s (attempt " +
           std::to_string(m_attempts) + " of " + std::to_string(n) + ")");
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(m_reconnect.delay_s);
    while (!stopping() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (stopping()) break;
    Expected<std::unique_ptr<VideoReader>> v = VideoReader::open_stream(it.source, it.path);
    if (v.ok()) {
      m_video = std::move(*v);
      return true;
    }
    state = "reconnect failed (" + without_name(v.status(), it.path) + ")";
  }
  if (!stopping())
    notice(it.path + ": " + state + "; the input ends after " + std::to_string(m_video_frame) + " frames (" +
           (n == 0 ? std::string("--reconnect 0")
                   : std::to_string(n) + " of " + std::to_string(n) + " reconnect attempts made") +
           ")");
  return false;
}

Expected<bool> FrameReader::next_frame(Frame* f) {
  for (;;) {
    if (m_video) {
      const InputItem& it = m_items[size_t(m_video_item)];
      const Expected<bool> got = m_video->read(&f->image);
      if (got.ok() && *got) {
        f->kind = it.kind;
        f->path = it.path;
        f->index = m_video_frame++;
        f->name = it.path + "#" + std::to_string(f->index);
        f->input = m_video_item;
        m_attempts = 0;  // frames flow: a later stop gets every attempt again
        return true;
      }
      if (m_video_frame > 0 && is_live(it, *m_video)) {
        m_video.reset();
        // Reconnected: read on; not: its input ends, on with the next.
        reconnect(got.ok() ? std::string() : " (" + without_name(got.status(), it.path) + ")");
        continue;
      }
      if (!got.ok()) return got.status();
      m_video.reset();
      if (m_video_frame == 0)
        return io_error(m_items[size_t(m_video_item)].path + ": no frame could be decoded");
    }
    if (m_next_item >= m_items.size()) return false;
    const int item = int(m_next_item++);
    m_current = item;
    const InputItem& it = m_items[size_t(item)];
    if (it.kind == InputKind::kImage) {
      DLR_ASSIGN_OR_RETURN(f->image, load_image(it.path));
      f->kind = it.kind;
      f->path = it.path;
      f->name = it.path;
      f->index = 0;
      f->input = item;
      return true;
    }
    DLR_ASSIGN_OR_RETURN(m_video, open_item(item));
    m_video_item = item;
    m_video_frame = 0;
    m_attempts = 0;
  }
}

}  // namespace dlr::tools
