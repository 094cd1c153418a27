// Fault injection for tests: every host allocation and file operation that can
// fail calls fault::hit("site") next to its real failure check; when a test has
// armed the N-th hit, that call returns true once and the site takes its error
// path as if the operation had failed, its message ending in
// " [fault injected at SITE]". Disarmed (always, outside tests): one relaxed
// atomic load per site, never inside an inference. Sites: file_read
// (read_text_file: cfg, images), weights_open, weights_mmap, host_alloc
// (HostBuffer::aligned), pinned_alloc (the CUDA engine's pinned weight store).
#pragma once

#include <cstdint>
#include <string>

namespace dlr::fault {

// Fail the nth hit (1-based) counted from now; n <= 0 disarms.
void arm(int64_t n);
inline void disarm() { arm(0); }
// Hits since the last arm() (only counted while armed).
int64_t count();
// True exactly once: at the armed hit.
bool hit(const char* site);
// " [fault injected at SITE]" for messages.
std::string tag(const char* site);

}  // namespace dlr::fault
