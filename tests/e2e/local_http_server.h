// A local HTTP server for stream tests: Python's http.server serving a folder on
// 127.0.0.1 at a free port (the server binds port 0 and writes the port to a file),
// stopped (SIGTERM, waited for) when the object goes. Mode kOnce serves each path
// once and answers 404 after that: a stream that is gone when it is opened again.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

extern char** environ;

namespace dlr::test {

class LocalHttpServer {
 public:
  enum class Mode { kServe, kOnce };

  // Serves `root`; `scratch` holds the script and the port file. port() is 0 when
  // the server did not start (python3 missing, or no port within 10 s).
  LocalHttpServer(const std::string& root, const std::string& scratch, Mode mode) {
    const std::string script = scratch + "/http_server.py";
    const std::string port_file = scratch + "/http_port.txt";
    std::remove(port_file.c_str());
    std::ofstream(script) << kScript;
    const std::string mode_text = mode == Mode::kOnce ? "once" : "serve";
    const char* argv[] = {"python3", script.c_str(), root.c_str(), port_file.c_str(), mode_text.c_str(), nullptr};
    if (::posix_spawnp(&m_pid, "python3", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) {
      m_pid = -1;
      return;
    }
    for (int i = 0; i < 200 && m_port == 0; ++i) {
      std::ifstream f(port_file);
      if (!(f >> m_port)) m_port = 0;
      if (m_port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~LocalHttpServer() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGTERM);
    int status = 0;
    ::waitpid(m_pid, &status, 0);
  }
  LocalHttpServer(const LocalHttpServer&) = delete;
  LocalHttpServer& operator=(const LocalHttpServer&) = delete;

  int port() const { return m_port; }
  // http://[userinfo@]127.0.0.1:PORT/name
  std::string url(const std::string& name, const std::string& userinfo = "") const {
    return "http://" + (userinfo.empty() ? std::string() : userinfo + "@") + "127.0.0.1:" + std::to_string(m_port) +
           "/" + name;
  }

 private:
  static constexpr const char* kScript = R"(import http.server, os, sys
root, port_file, mode = sys.argv[1:4]
served = set()
class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_message(self, *a):
        pass
    def do_GET(self):
        if mode == 'once':
            if self.path in served:
                self.send_error(404)
                return
            served.add(self.path)
        super().do_GET()
server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
with open(port_file + '.tmp', 'w') as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + '.tmp', port_file)
server.serve_forever()
)";
  pid_t m_pid = -1;
  int m_port = 0;
};

}  // namespace dlr::test
