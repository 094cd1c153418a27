#include "tools/common/frames.h"

namespace dlr::tools {
namespace {

Expected<std::unique_ptr<VideoReader>> open_item(const InputItem& it) {
  if (it.kind == InputKind::kCamera) return VideoReader::open_camera(it.camera);
  return VideoReader::open_file(it.path);
}

}  // namespace

Status FrameReader::probe() {
  m_total = 0;
  for (const InputItem& it : m_items) {
    if (it.kind == InputKind::kImage) {
      if (m_total >= 0) ++m_total;
      continue;
    }
    DLR_ASSIGN_OR_RETURN(std::unique_ptr<VideoReader> v, open_item(it));
    if (m_fps == 0) m_fps = v->fps();
    if (it.kind == InputKind::kCamera || v->frame_count() < 0)
      m_total = -1;
    else if (m_total >= 0)
      m_total += v->frame_count();
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

Expected<bool> FrameReader::next_frame(Frame* f) {
  for (;;) {
    if (m_video) {
      DLR_ASSIGN_OR_RETURN(bool got, m_video->read(&f->image));
      if (got) {
        const InputItem& it = m_items[size_t(m_video_item)];
        f->kind = it.kind;
        f->path = it.path;
        f->index = m_video_frame++;
        f->name = it.path + "#" + std::to_string(f->index);
        f->input = m_video_item;
        return true;
      }
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
    DLR_ASSIGN_OR_RETURN(m_video, open_item(it));
    m_video_item = item;
    m_video_frame = 0;
  }
}

}  // namespace dlr::tools
