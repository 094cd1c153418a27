#include "tools/dlrun/result_writer.h"

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "tools/common/draw.h"

namespace dlr::tools {
namespace {

// `base` with `suffix` before its extension (at the end when it has none).
std::string with_suffix(const std::string& base, const std::string& suffix) {
  const size_t dot = base.find_last_of('.');
  const size_t slash = base.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return base + suffix;
  return base.substr(0, dot) + suffix + base.substr(dot);
}

}  // namespace

std::string indexed_name(const std::string& base, int64_t index) {
  return index == 0 ? base : with_suffix(base, "_" + std::to_string(index));
}

std::string model_file_name(const std::string& base, const std::string& model) {
  return model.empty() ? base : with_suffix(base, "_" + model);
}

struct ResultWriter::ModelFiles {
  JsonArrayFile darknet, coco;
  std::unique_ptr<VideoWriter> video;
};

ResultWriter::ResultWriter(const Args& args, const std::vector<std::string>& names, std::vector<ModelTag> models,
                           double video_fps)
    : m_args(args), m_names(names), m_models(std::move(models)), m_video_fps(video_fps) {}

ResultWriter::~ResultWriter() = default;

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
  m_files.clear();
  for (const ModelTag& m : m_models) {
    m_files.push_back(std::make_unique<ModelFiles>());
    ModelFiles& f = *m_files.back();
    if (!m_args.darknet_json.empty()) DLR_RETURN_IF_ERROR(f.darknet.open(model_file_name(m_args.darknet_json, m.name)));
    if (!m_args.coco_json.empty()) DLR_RETURN_IF_ERROR(f.coco.open(model_file_name(m_args.coco_json, m.name)));
  }
  return Status();
}

void ResultWriter::print_text(const Frame& frame, const std::vector<std::vector<Detection>>& dets,
                              const std::vector<double>& infer_ms) const {
  const LoadedImage& img = frame.image;
  for (size_t m = 0; m < m_models.size(); ++m) {
    const std::string tag = m_models[m].name.empty() ? std::string() : "[" + m_models[m].name + "] ";
    std::printf("%s%s: Predicted in %f milli-seconds.\n", tag.c_str(), frame.name.c_str(), infer_ms[m]);
    std::istringstream lines(format_darknet(dets[m], m_names, img.width, img.height, m_args.ext_output));
    for (std::string line; std::getline(lines, line);) std::printf("%s%s\n", tag.c_str(), line.c_str());
  }
}

void ResultWriter::print_json(const Frame& frame, const std::vector<std::vector<Detection>>& dets,
                              const std::vector<double>& infer_ms) const {
  const LoadedImage& img = frame.image;
  nlohmann::json j;
  if (m_models.size() == 1 && m_models[0].name.empty()) {
    j = detections_json(frame.name, img.width, img.height, dets[0], m_names);
  } else {
    j = detections_json(frame.name, img.width, img.height, {}, m_names);
    j.erase("detections");
    j["models"] = nlohmann::json::array();
    for (size_t m = 0; m < m_models.size(); ++m)
      j["models"].push_back(
          {{"model", m_models[m].name},
           {"infer_ms", infer_ms[m]},
           {"detections", detections_json(frame.name, img.width, img.height, dets[m], m_names)["detections"]}});
  }
  if (frame.kind != InputKind::kImage) j["frame"] = frame.index;
  std::printf("%s\n", j.dump().c_str());
}

Status ResultWriter::write(const Frame& frame, const std::vector<std::vector<Detection>>& dets,
                           const std::vector<double>& infer_ms) {
  ++m_frames;
  if (m_args.json) {
    print_json(frame, dets, infer_ms);
  } else {
    print_text(frame, dets, infer_ms);
  }
  if (std::fflush(stdout) != 0) return io_error("standard output: write failed");
  for (size_t m = 0; m < m_models.size(); ++m) DLR_RETURN_IF_ERROR(write_files(m, frame, dets[m]));
  if (frame.kind == InputKind::kImage) {
    // --save-labels is one file per image: dlrun refuses it with --model.
    if (m_args.save_labels)
      DLR_RETURN_IF_ERROR(write_text_file(label_path(frame.path, m_args.labels_dir), yolo_labels(dets[0])));
    ++m_images;
  }
  return Status();
}

Status ResultWriter::write_files(size_t m, const Frame& frame, const std::vector<Detection>& dets) {
  ModelFiles& f = *m_files[m];
  const std::string& model = m_models[m].name;
  const LoadedImage& img = frame.image;
  if (f.darknet.is_open()) DLR_RETURN_IF_ERROR(f.darknet.append(darknet_frame_json(m_frames, frame.name, dets, m_names)));
  if (f.coco.is_open()) {
    const long long id = frame.kind == InputKind::kImage ? coco_image_id(frame.path, m_frames) : m_frames;
    DLR_RETURN_IF_ERROR(f.coco.append(coco_results(id, dets, m_models[m].classes, img.width, img.height)));
  }
  if (frame.kind == InputKind::kImage && !m_args.out.empty())
    DLR_RETURN_IF_ERROR(
        save_annotated(indexed_name(model_file_name(m_args.out, model), m_images), img, dets, m_names));
  if (!m_args.out_video.empty()) {
    if (!f.video) {
      DLR_ASSIGN_OR_RETURN(f.video, VideoWriter::open(model_file_name(m_args.out_video, model), img.width, img.height,
                                                      m_video_fps));
    }
    DLR_ASSIGN_OR_RETURN(LoadedImage annotated, annotate_image(img, dets, m_names));
    DLR_RETURN_IF_ERROR(f.video->write(annotated));
  }
  return Status();
}

Status ResultWriter::close() {
  Status first;
  for (auto& f : m_files) {
    Status st = f->darknet.close();
    Status st2 = f->coco.close();
    Status st3 = f->video ? f->video->close() : Status();
    for (Status* s : {&st, &st2, &st3})
      if (first.ok() && !s->ok()) first = *s;
  }
  return first;
}

}  // namespace dlr::tools
