// Network streams and GStreamer pipelines as inputs: how an input argument is
// recognised as one, the name it is shown under (credentials hidden), and the
// reconnect settings of a live stream. No OpenCV here (video.h opens them).
//
//   rtsp://cam.local/live, http://host/clip.avi   a URL: scheme "://" (any scheme of
//                                                  letters, digits, + - .), opened
//                                                  with OpenCV's FFmpeg backend
//   videotestsrc ! videoconvert ! appsink          a GStreamer pipeline: holds " ! ",
//                                                  opened with OpenCV's GStreamer backend
#pragma once

#include <csignal>
#include <string>

namespace dlr::tools {

enum class StreamBackend { kFFmpeg, kGStreamer };

bool is_stream_url(const std::string& arg);          // "scheme://..." (scheme: a letter, then letters, digits, + - .)
bool is_gstreamer_pipeline(const std::string& arg);  // holds " ! "
bool is_stream_input(const std::string& arg);        // either of the above
// The backend a stream input is opened with: kGStreamer for a pipeline, else kFFmpeg.
StreamBackend stream_backend(const std::string& arg);
const char* backend_name(StreamBackend b);  // "FFmpeg", "GStreamer"

// `text` with every credential it holds replaced by "***": the user:password of a
// URL ("rtsp://***@cam/live"), anywhere in the text (a pipeline's location=...),
// and the value of a pipeline property named user-id, user-pw, proxy-id, proxy-pw
// or password. What messages and results call a stream; the text as given is what
// is opened.
std::string hide_credentials(const std::string& text);

// A live stream that stops delivering frames (the FFmpeg backend's read fails or
// times out) is opened again up to `reconnect` times, `delay_s` seconds apart,
// before its input ends; frames flowing again give it `reconnect` attempts anew.
// Defaults: dlrun --reconnect and --reconnect-delay.
struct ReconnectOptions {
  int reconnect = 3;
  double delay_s = 2.0;
  const volatile std::sig_atomic_t* stop = nullptr;  // set (Ctrl-C): no more waiting nor attempts
};

}  // namespace dlr::tools
