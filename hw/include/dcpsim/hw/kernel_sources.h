#pragma once
// Which kernels this binary runs: a SHA-256 over hw/ops/ (every file's name and SHA-256, sorted), taken when
// the build is configured (an edit there reconfigures). A calibrated profile records the hash of the kernels
// its tables and fit were measured on, so that a test (and `dcpsim validate`) can tell when the tree's
// kernels have moved on since.
#include <string_view>

namespace dcpsim::hw {

std::string_view kernel_sources_hash();

}  // namespace dcpsim::hw
