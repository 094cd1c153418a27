#include "tools/dlrun/show_window.h"

#include <dlfcn.h>

#include <cstdlib>

#ifdef DLR_HAVE_OPENCV
#include "tools/common/media.h"
#endif

namespace dlr::tools {
#ifdef DLR_HAVE_OPENCV
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

// highgui's functions of the media table, or the error that there are none.
Expected<const GuiOps*> gui() {
  DLR_ASSIGN_OR_RETURN(const MediaOps* m, media());
  if (m->gui == nullptr) return unsupported("--show needs OpenCV's highgui, and this dlrun was built without it");
  return m->gui;
}

}  // namespace
#endif

Status ShowWindows::check_display() {
#ifndef DLR_HAVE_OPENCV
  return unsupported("--show needs OpenCV's highgui, and this dlrun was built without it");
#else
  DLR_RETURN_IF_ERROR(gui().status());
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
#ifdef DLR_HAVE_OPENCV
  DLR_ASSIGN_OR_RETURN(const GuiOps* g, gui());
  m_opened[m] = true;
  return g->show(m_titles[m], annotated);
#else
  (void)m;
  (void)annotated;
  return unsupported("--show needs OpenCV's highgui");
#endif
}

Expected<bool> ShowWindows::wait() {
#ifdef DLR_HAVE_OPENCV
  DLR_ASSIGN_OR_RETURN(const GuiOps* g, gui());
  DLR_ASSIGN_OR_RETURN(const int key, g->wait_key(m_wait_ms));
  if (key == 27 || key == 'q' || key == 'Q') return false;
  for (size_t m = 0; m < m_titles.size(); ++m) {
    if (!m_opened[m]) continue;
    DLR_ASSIGN_OR_RETURN(const bool visible, g->visible(m_titles[m]));
    if (!visible) return false;
  }
  return true;
#else
  return unsupported("--show needs OpenCV's highgui");
#endif
}

void ShowWindows::close() {
#ifdef DLR_HAVE_OPENCV
  const MediaOps* m = media_if_loaded();
  if (m == nullptr || m->gui == nullptr) return;
  bool any = false;
  for (size_t i = 0; i < m_titles.size(); ++i) {
    if (!m_opened[i]) continue;
    any = true;
    m_opened[i] = false;
    m->gui->destroy(m_titles[i]);
  }
  if (any) (void)m->gui->wait_key(1);  // lets highgui process the close
#endif
}

}  // namespace dlr::tools
