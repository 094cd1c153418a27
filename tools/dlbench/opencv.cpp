// --opencv: OpenCV DNN (CPU backend) timed on the same input as dlrun's rows (measure.h).
#include "tools/dlbench/measure.h"

#ifdef DLR_HAVE_OPENCV
#include <chrono>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

#include "tools/dlbench/stats.h"

namespace dlr::tools {

Expected<nlohmann::json> measure_opencv(const Args& a, const std::string& weights, int size,
                                        const std::vector<float>& input) {
  using Clock = std::chrono::steady_clock;
  cv::dnn::Net net;
  try {
    net = cv::dnn::readNetFromDarknet(a.cfg, weights);
  } catch (const cv::Exception& ex) {
    return Status(StatusCode::kInternal, std::string("OpenCV could not read the network: ") + ex.what());
  }
  net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  const int dims[4] = {1, 3, size, size};
  cv::Mat blob(4, dims, CV_32F, const_cast<float*>(input.data()));
  const std::vector<std::string> outs = net.getUnconnectedOutLayersNames();
  std::vector<cv::Mat> results;
  std::vector<double> times;
  for (int i = 0; i < a.warmup + a.iters; ++i) {
    const auto t0 = Clock::now();
    net.setInput(blob);
    net.forward(results, outs);
    if (i >= a.warmup) times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const Stats s = stats_of(times);
  nlohmann::json j;
  j["config"] = "opencv-dnn/cpu/fp32/b1";
  j["device"] = "cpu";
  j["mode"] = "opencv";
  j["precision"] = "fp32";
  j["batch"] = 1;
  j["size"] = size;
  j["iters"] = a.iters;
  j["network"] = stats_json(s);
  j["end_to_end"] = stats_json(s);
  j["opencv_version"] = CV_VERSION;
  j["opencv_threads"] = cv::getNumThreads();
  return j;
}

}  // namespace dlr::tools
#endif
