#include "tools/dlrun/result_writer.h"

#include <cstdio>
#include <filesystem>

#include "tools/common/draw.h"

namespace dlr::tools {

std::string indexed_name(const std::string& base, int64_t index) {
  if (index == 0) return base;
  const size_t dot = base.find_last_of('.');
  const size_t slash = base.find_last_of('/');
  const std::string suffix = "_" + std::to_string(index);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return base + suffix;
  return base.substr(0, dot) + suffix + base.substr(dot);
}

Status ResultWriter::open() {
  if (!m_args.out.empty() && !can_write_image(m_args.out))
    return invalid_argument("--out " + m_args.out +
                            ": cannot write an image with this name (use an extension OpenCV writes: .jpg, .png, "
                            ".bmp, .ppm, ...)");
  if (!m_args.out_video.empty()) DLR_RETURN_IF_ERROR(VideoWriter::check_name(m_args.out_video));
  if (!m_args.labels_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(m_args.labels_dir, ec))
      return io_error("--labels-dir " + m_args.labels_dir + ": not a directory");
  }
  if (!m_args.darknet_json.empty()) DLR_RETURN_IF_ERROR(m_darknet.open(m_args.darknet_json));
  if (!m_args.coco_json.empty()) DLR_RETURN_IF_ERROR(m_coco.open(m_args.coco_json));
  return Status();
}

Status ResultWriter::write(const Frame& frame, const std::vector<Detection>& dets, double infer_ms) {
  ++m_frames;
  const LoadedImage& img = frame.image;
  if (m_args.json) {
    nlohmann::json j = detections_json(frame.name, img.width, img.height, dets, m_names);
    if (frame.kind != InputKind::kImage) j["frame"] = frame.index;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s: Predicted in %f milli-seconds.\n", frame.name.c_str(), infer_ms);
    std::fputs(format_darknet(dets, m_names, img.width, img.height, m_args.ext_output).c_str(), stdout);
  }
  if (std::fflush(stdout) != 0) return io_error("standard output: write failed");

  if (m_darknet.is_open()) DLR_RETURN_IF_ERROR(m_darknet.append(darknet_frame_json(m_frames, frame.name, dets, m_names)));
  if (m_coco.is_open()) {
    const long long id = frame.kind == InputKind::kImage ? coco_image_id(frame.path, m_frames) : m_frames;
    DLR_RETURN_IF_ERROR(m_coco.append(coco_results(id, dets, m_classes, img.width, img.height)));
  }
  if (frame.kind == InputKind::kImage) {
    if (m_args.save_labels)
      DLR_RETURN_IF_ERROR(write_text_file(label_path(frame.path, m_args.labels_dir), yolo_labels(dets)));
    if (!m_args.out.empty())
      DLR_RETURN_IF_ERROR(save_annotated(indexed_name(m_args.out, m_images), img, dets, m_names));
    ++m_images;
  }
  if (!m_args.out_video.empty()) {
    if (!m_video) {
      DLR_ASSIGN_OR_RETURN(m_video, VideoWriter::open(m_args.out_video, img.width, img.height, m_video_fps));
    }
    DLR_ASSIGN_OR_RETURN(LoadedImage annotated, annotate_image(img, dets, m_names));
    DLR_RETURN_IF_ERROR(m_video->write(annotated));
  }
  return Status();
}

Status ResultWriter::close() {
  Status st = m_darknet.close();
  Status st2 = m_coco.close();
  Status st3 = m_video ? m_video->close() : Status();
  if (!st.ok()) return st;
  if (!st2.ok()) return st2;
  return st3;
}

}  // namespace dlr::tools
