// dlrun --show: each annotated frame in a window, one window per model (OpenCV
// highgui), as Darknet's `detector demo` shows its frames. After each frame the
// windows wait --show-wait milliseconds for a key (0: until a key is pressed); Esc or
// q, or a window closed, ends the run as the end of the inputs does. The windows
// close when the run ends.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "tools/common/tool_support.h"

namespace dlr::tools {

class ShowWindows {
 public:
  // Whether a window can be opened, before any work: an X display named by DISPLAY
  // that accepts a connection (highgui's Qt backend would abort the process
  // without one). The error is one line naming --show.
  static Status check_display();
  // Windows titled `titles` (one per model), opened with their first frame.
  ShowWindows(std::vector<std::string> titles, int wait_ms);
  ~ShowWindows();
  // Model m's annotated frame into its window.
  Status show(size_t m, const LoadedImage& annotated);
  // Waits for a key after a frame; false when the user asked to stop (Esc, q, or a
  // window closed).
  Expected<bool> wait();
  void close();  // the windows closed (also done by the destructor)

 private:
  std::vector<std::string> m_titles;
  std::vector<bool> m_opened;
  int m_wait_ms = 1;
};

}  // namespace dlr::tools
