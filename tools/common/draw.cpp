// draw.h and save_annotated (tool_support.h): through media() where built with OpenCV
// (the drawing is tools/common/opencv/draw_opencv.cpp's), else "built without OpenCV".
#include "tools/common/draw.h"

#ifdef DLR_HAVE_OPENCV
#include "tools/common/media.h"
#endif

namespace dlr::tools {

bool can_write_image(const std::string& path) {
#ifdef DLR_HAVE_OPENCV
  Expected<const MediaOps*> m = media();
  return m.ok() && (*m)->can_write_image(path);
#else
  (void)path;
  return false;
#endif
}

Expected<LoadedImage> annotate_image(const LoadedImage& image, const std::vector<Detection>& dets,
                                     const std::vector<std::string>& names) {
#ifdef DLR_HAVE_OPENCV
  DLR_ASSIGN_OR_RETURN(const MediaOps* m, media());
  return m->annotate_image(image, dets, names);
#else
  (void)image;
  (void)dets;
  (void)names;
  return unsupported("drawing detections needs OpenCV, and this dlrun was built without it");
#endif
}

Status save_annotated(const std::string& path, const LoadedImage& image, const std::vector<Detection>& dets,
                      const std::vector<std::string>& names) {
#ifdef DLR_HAVE_OPENCV
  DLR_ASSIGN_OR_RETURN(const MediaOps* m, media());
  DLR_ASSIGN_OR_RETURN(LoadedImage out, m->annotate_image(image, dets, names));
  return m->write_image(path, out);  // checks the name's extension first
#else
  (void)image;
  (void)dets;
  (void)names;
  return unsupported(path + ": --out needs OpenCV, and this dlrun was built without it");
#endif
}

}  // namespace dlr::tools
