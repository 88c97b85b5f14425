#pragma once
// Which kernels this binary times into tables: a SHA-256 over the hw/ops/ files behind attention, the
// correction, pack and combine (each file's name and SHA-256, sorted; hw/CMakeLists.txt lists what is left
// out), taken when the build is configured (an edit there reconfigures). A calibrated profile records the
// hash of the kernels its tables and fit were measured on, so that a test (and `dcpsim validate`) can tell
// when the tree's kernels have moved on since.
#include <string_view>

namespace dcpsim::hw {

std::string_view kernel_sources_hash();

}  // namespace dcpsim::hw
