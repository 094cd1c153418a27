#include "tools/dlrun/result_writer.h"

#include <algorithm>
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

// Creates `dir` and its parents; the error names `flag value`.
Status create_folder(const std::string& flag, const std::string& value, const std::filesystem::path& dir) {
  std::error_code ec;
  if (dir.empty() || std::filesystem::is_directory(dir, ec)) return Status();
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    return io_error(flag + " " + value + ": cannot create the folder " + dir.string() +
                    (ec ? " (" + ec.message() + ")" : std::string(" (a file has its name)")));
  return Status();
}

}  // namespace

bool out_is_folder(const std::string& out) {
  std::error_code ec;
  return !out.empty() && (out.back() == '/' || std::filesystem::is_directory(out, ec));
}

Status create_output_folders(const Args& a) {
  const std::pair<const char*, const std::string*> files[] = {
      {"--out-video", &a.out_video},     {"--darknet-json", &a.darknet_json}, {"--coco-json", &a.coco_json},
      {"--report-file", &a.report_file}, {"--trace", &a.trace},               {"--save-plan", &a.save_plan}};
  for (const auto& [flag, value] : files)
    if (!value->empty()) DLR_RETURN_IF_ERROR(create_folder(flag, *value, std::filesystem::path(*value).parent_path()));
  if (!a.out.empty()) {
    const std::filesystem::path out(a.out);
    DLR_RETURN_IF_ERROR(create_folder("--out", a.out, out_is_folder(a.out) ? out : out.parent_path()));
  }
  if (!a.labels_dir.empty()) DLR_RETURN_IF_ERROR(create_folder("--labels-dir", a.labels_dir, a.labels_dir));
  return Status();
}

Status check_image_only_outputs(const Args& a, const std::vector<InputItem>& inputs) {
  for (const InputItem& it : inputs) {
    if (it.kind == InputKind::kImage) continue;
    const std::string what = it.path + " is a " +
                             (it.kind == InputKind::kCamera   ? "camera"
                              : it.kind == InputKind::kStream ? "stream"
                                                              : "video");
    if (!a.out.empty()) return invalid_argument("--out writes image inputs only, and " + what + " (use --out-video)");
    if (a.save_labels) return invalid_argument("--save-labels writes the labels of image inputs only, and " + what);
  }
  return Status();
}

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
    : m_args(args), m_names(names), m_labels(names), m_models(std::move(models)), m_video_fps(video_fps) {
  if (!m_names.empty()) return;
  int classes = 0;
  for (const ModelTag& m : m_models) classes = std::max(classes, m.classes);
  for (int c = 0; c < classes; ++c) m_labels.push_back("class " + std::to_string(c));
}

ResultWriter::~ResultWriter() = default;

Status ResultWriter::open() {
  if (!m_args.out.empty() && !out_is_folder(m_args.out) && !can_write_image(m_args.out))
    return invalid_argument("--out " + m_args.out +
                            ": cannot write an image with this name (use an extension OpenCV writes: .jpg, .png, "
                            ".bmp, .ppm, ..., or a folder: o/)");
  if (!m_args.out_video.empty()) DLR_RETURN_IF_ERROR(VideoWriter::check_name(m_args.out_video));
  m_files.clear();
  for (const ModelTag& m : m_models) {
    m_files.push_back(std::make_unique<ModelFiles>());
    ModelFiles& f = *m_files.back();
    if (!m_args.darknet_json.empty()) DLR_RETURN_IF_ERROR(f.darknet.open(model_file_name(m_args.darknet_json, m.name)));
    if (!m_args.coco_json.empty()) DLR_RETURN_IF_ERROR(f.coco.open(model_file_name(m_args.coco_json, m.name)));
  }
  if (m_args.show) {
    std::vector<std::string> titles;
    for (const ModelTag& m : m_models) titles.push_back(m.name.empty() ? "dlrun" : "dlrun [" + m.name + "]");
    m_show = std::make_unique<ShowWindows>(titles, m_args.show_wait_ms);
  }
  return Status();
}

void ResultWriter::print_text(const Frame& frame, const std::vector<std::vector<Detection>>& dets,
                              const std::vector<double>& infer_ms) const {
  const LoadedImage& img = frame.image;
  for (size_t m = 0; m < m_models.size(); ++m) {
    const std::string tag = m_models[m].name.empty() ? std::string() : "[" + m_models[m].name + "] ";
    std::printf("%s%s: Predicted in %f milli-seconds.\n", tag.c_str(), frame.name.c_str(), infer_ms[m]);
    std::istringstream lines(format_darknet(dets[m], m_labels, img.width, img.height, m_args.ext_output));
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
  if (m_show && !m_stop_requested) {  // once asked to stop, the rest of the batch is not shown
    DLR_ASSIGN_OR_RETURN(const bool go_on, m_show->wait());
    m_stop_requested = m_stop_requested || !go_on;
  }
  if (frame.kind == InputKind::kImage) {
    // --save-labels is one file per image: dlrun refuses it with --model.
    if (m_args.save_labels)
      DLR_RETURN_IF_ERROR(write_text_file(label_path(frame.path, m_args.labels_dir), yolo_labels(dets[0])));
    ++m_images;
  }
  return Status();
}

Status ResultWriter::write_failure(const std::string& path, const std::string& message) {
  if (!m_args.json) return Status();
  const nlohmann::json j = {{"image", path}, {"error", message}};
  std::printf("%s\n", j.dump().c_str());
  if (std::fflush(stdout) != 0) return io_error("standard output: write failed");
  return Status();
}

std::string ResultWriter::image_out_path(size_t m, const Frame& frame) {
  const std::string& model = m_models[m].name;
  if (!out_is_folder(m_args.out)) return indexed_name(model_file_name(m_args.out, model), m_images);
  const std::filesystem::path source = std::filesystem::path(frame.path).filename();
  const std::string name = model_file_name((std::filesystem::path(m_args.out) / source).string(), model);
  return indexed_name(name, m_out_names[name]++);
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
    DLR_RETURN_IF_ERROR(save_annotated(image_out_path(m, frame), img, dets, m_labels));
  const bool show = m_show && !m_stop_requested;
  if (m_args.out_video.empty() && !show) return Status();
  DLR_ASSIGN_OR_RETURN(const LoadedImage annotated, annotate_image(img, dets, m_labels));
  if (!m_args.out_video.empty()) {
    if (!f.video) {
      DLR_ASSIGN_OR_RETURN(f.video, VideoWriter::open(model_file_name(m_args.out_video, model), img.width, img.height,
                                                      m_video_fps));
    }
    DLR_RETURN_IF_ERROR(f.video->write(annotated));
  }
  if (show) DLR_RETURN_IF_ERROR(m_show->show(m, annotated));
  return Status();
}

Status ResultWriter::close() {
  if (m_show) m_show->close();
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
