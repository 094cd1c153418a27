#include "tools/dlrun/show_window.h"

#include <dlfcn.h>

#include <cstdlib>

#ifdef DLR_HAVE_HIGHGUI
#include <opencv2/core.hpp>
#include <opencv2/highgui.hpp>
#endif

namespace dlr::tools {
namespace {

constexpr const char* kNoDisplay = "--show: no display: ";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Connects to the X display `name` through libxcb (what highgui's Qt backend uses):
// 1 it accepts, 0 it refuses, -1 libxcb is not there to ask.
int x_display_accepts(const std::string& name) {
  void* xcb = ::dlopen("libxcb.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!xcb) return -1;
  using Connect = void* (*)(const char*, int*);
  using HasError = int (*)(void*);
  using Disconnect = void (*)(void*);
  auto connect = reinterpret_cast<Connect>(::dlsym(xcb, "xcb_connect"));
  auto has_error = reinterpret_cast<HasError>(::dlsym(xcb, "xcb_connection_has_error"));
  auto disconnect = reinterpret_cast<Disconnect>(::dlsym(xcb, "xcb_disconnect"));
  int accepts = -1;
  if (connect && has_error && disconnect) {
    void* c = connect(name.c_str(), nullptr);
    accepts = c && has_error(c) == 0 ? 1 : 0;
    if (c) disconnect(c);  // an xcb connection in error is freed by xcb_disconnect too
  }
  ::dlclose(xcb);
  return accepts;
}

}  // namespace

Status ShowWindows::check_display() {
#ifndef DLR_HAVE_HIGHGUI
  return unsupported("--show needs OpenCV's highgui, and this dlrun was built without it");
#else
  const std::string display = env("DISPLAY");
  if (display.empty())
    return unsupported(std::string(kNoDisplay) + "DISPLAY is not set" +
                       (env("WAYLAND_DISPLAY").empty() ? "" : " (Wayland: the window needs XWayland's DISPLAY)") +
                       "; run on a desktop or under Xvfb, or leave --show out");
  if (x_display_accepts(display) == 0)
    return unsupported(std::string(kNoDisplay) + "the X display " + display +
                       " does not accept a connection; run on a desktop or under Xvfb, or leave --show out");
  return Status();
#endif
}

ShowWindows::ShowWindows(std::vector<std::string> titles, int wait_ms)
    : m_titles(std::move(titles)), m_opened(m_titles.size(), false), m_wait_ms(wait_ms) {}

ShowWindows::~ShowWindows() { close(); }

Status ShowWindows::show(size_t m, const LoadedImage& annotated) {
#ifdef DLR_HAVE_HIGHGUI
  try {
    if (!m_opened[m]) {
      cv::namedWindow(m_titles[m], cv::WINDOW_AUTOSIZE | cv::WINDOW_KEEPRATIO | cv::WINDOW_GUI_NORMAL);
      m_opened[m] = true;
    }
    const cv::Mat img(annotated.height, annotated.width, CV_8UC3, const_cast<uint8_t*>(annotated.pixels.data()));
    cv::imshow(m_titles[m], img);
  } catch (const cv::Exception& e) {
    return unsupported("--show: cannot show the window " + m_titles[m] + " (" + e.msg + ")");
  }
  return Status();
#else
  (void)m;
  (void)annotated;
  return unsupported("--show needs OpenCV's highgui");
#endif
}

Expected<bool> ShowWindows::wait() {
#ifdef DLR_HAVE_HIGHGUI
  try {
    const int key = cv::waitKey(m_wait_ms);
    if (key == 27 || key == 'q' || key == 'Q') return false;
    for (size_t m = 0; m < m_titles.size(); ++m)
      if (m_opened[m] && cv::getWindowProperty(m_titles[m], cv::WND_PROP_VISIBLE) < 1) return false;
  } catch (const cv::Exception& e) {
    return unsupported("--show: the window failed (" + e.msg + ")");
  }
  return true;
#else
  return unsupported("--show needs OpenCV's highgui");
#endif
}

void ShowWindows::close() {
#ifdef DLR_HAVE_HIGHGUI
  bool any = false;
  for (size_t m = 0; m < m_titles.size(); ++m) {
    if (!m_opened[m]) continue;
    any = true;
    m_opened[m] = false;
    try {
      cv::destroyWindow(m_titles[m]);
    } catch (const cv::Exception&) {
      // the window is gone already (closed by the user)
    }
  }
  if (any) {
    try {
      cv::waitKey(1);  // lets highgui process the close
    } catch (const cv::Exception&) {
    }
  }
#endif
}

}  // namespace dlr::tools
