// CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), the checksum of
// every blob and of the header of a prepared weight file (prepared_file.h).
//
// Convention (the common one, iSCSI / ext4 / RFC 3720): pre- and post-inverted, so
// crc32c("123456789") == 0xE3069283, and chaining works by passing the previous
// result as the seed: crc32c(b, nb, crc32c(a, na)) == crc32c(a then b, na + nb).
// A streaming reader can therefore check a blob read in several pieces, in order.
//
// Implementation: the SSE4.2 crc32 instruction on x86-64 CPUs that have it (checked
// at run time), else the ARMv8 CRC32C instructions when compiled for them, else a
// table (slicing by 8). No library: the binaries travel to machines that have none
// (ISA-L's crc32_iscsi computes the same function, ~crc32_iscsi(p, n, ~seed), but
// Debian ships it only as a shared library).
// Thread-safe; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlr {

uint32_t crc32c(const void* data, size_t bytes, uint32_t seed = 0);

// The portable table version (the reference the hardware path is tested against).
uint32_t crc32c_portable(const void* data, size_t bytes, uint32_t seed = 0);

// "sse4.2", "armv8-crc" or "table": which implementation crc32c() uses here.
const char* crc32c_implementation();

// Every implementation this build and CPU can run (for tests and benchmarks; crc32c()
// picks the fastest): "table" always; on x86-64 with SSE4.2 "sse4.2-1x" (one chain of
// 8-byte crc32 instructions) and "sse4.2" (three chains over 12 KiB blocks, joined by
// multiplication mod P; what crc32c() uses); "armv8-crc" where compiled for it. Each
// computes the same function as crc32c().
struct Crc32cImpl {
  const char* name;
  uint32_t (*fn)(const void* data, size_t bytes, uint32_t seed);
};
std::vector<Crc32cImpl> crc32c_implementations();

}  // namespace dlr
