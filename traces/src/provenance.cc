#include "dcpsim/traces/provenance.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <utility>

#include "dcpsim/version.h"

namespace dcpsim::traces {
namespace {

// The command line of this process, as the kernel recorded it; empty where /proc is not available.
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::string::size_type begin = 0;
  while (begin < raw.size()) {
    auto end = raw.find('\0', begin);
    if (end == std::string::npos) end = raw.size();
    argv.emplace_back(raw, begin, end - begin);
    begin = end + 1;
  }
  return argv;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return {};
  return name;
}

}  // namespace

void fill_provenance(v1::Header& header, std::vector<std::string> argv) {
  header.set_tool_version(kVersion);
  header.set_git_sha(kGitSha);
  if (argv.empty()) argv = own_command_line();
  header.clear_argv();
  for (auto& a : argv) header.add_argv(std::move(a));
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  header.set_created_unix_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
  header.set_host_name(host_name());
}

v1::Header make_header(v1::Source source, std::vector<std::string> argv) {
  v1::Header header;
  header.set_source(source);
  fill_provenance(header, std::move(argv));
  return header;
}

}  // namespace dcpsim::traces
