// Help, errors and README that stay true: every flag the README's examples use exists in that command's
// --help; every strategy and element type is listed where a flag's help lists them, and an error for a bad
// value lists the same ones; the README's strategy paragraph names every strategy and the engines' flag.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/error.h"
#include "dcpsim/models/types.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class HelpDocs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcpsim_help_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Runs dcpsim with `args`; returns the exit status, stdout in out_, stderr in err_.
  int run(const std::string& args) {
    const fs::path exe = fs::path(DCPSIM_BINARY_DIR) / "analysis" / "dcpsim";
    const std::string cmd = "cd " + dir_.string() + " && " + exe.string() + " " + args + " >" +
                            (dir_ / "stdout").string() + " 2>" + (dir_ / "stderr").string();
    const int status = std::system(cmd.c_str());
    out_ = read(dir_ / "stdout");
    err_ = read(dir_ / "stderr");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // The help text of one flag: from its line in `help` to the next line that starts a flag.
  static std::string flag_help(const std::string& help, const std::string& flag) {
    const std::regex start("\n\\s+" + flag + "[ ,=]");
    std::smatch m;
    if (!std::regex_search(help, m, start)) return {};
    const std::size_t begin = m.position(0) + 1;
    const std::size_t next = help.find("\n  -", begin + 1);
    return help.substr(begin, next == std::string::npos ? std::string::npos : next - begin);
  }
  fs::path dir_;
  std::string out_, err_;
};

#ifdef DCPSIM_WITH_SIMGRID
TEST_F(HelpDocs, StrategyAndDtypeListsAgreeWithWhatIsAccepted) {
  std::map<std::string, std::pair<std::string, std::string>> dtype_help;  // command -> kv, out help
  for (const char* cmd : {"simulate", "scan", "replay"}) {
    ASSERT_EQ(run(std::string(cmd) + " --help"), 0) << cmd;
    const std::string help = out_;
    const std::string strategy = flag_help(help, "--strategy");
    ASSERT_FALSE(strategy.empty()) << cmd;
    for (const auto s : dcpsim::models::all_strategies())
      EXPECT_THAT(strategy, HasSubstr(std::string(dcpsim::models::to_string(s)))) << cmd;
    EXPECT_THAT(strategy, HasSubstr("ag_rs")) << cmd;  // the engines' names
    EXPECT_THAT(strategy, HasSubstr("fi_a2a")) << cmd;
    dtype_help[cmd] = {flag_help(help, "--kv-dtype"), flag_help(help, "--out-dtype")};
    const std::string launch = flag_help(help, "--launch");
    EXPECT_THAT(launch, ::testing::Not(HasSubstr("..")))  // launch modes take no ranges
        << cmd << ": " << launch;
  }
  // Every element type: a dtype flag's help lists it exactly when the flag accepts it.
  for (const auto t : dcpsim::models::all_dtypes()) {
    const std::string name(dcpsim::models::to_string(t));
    for (int k = 0; k < 2; ++k) {
      const std::string flag = k == 0 ? "--kv-dtype" : "--out-dtype";
      // What simulate, scan and replay accept: the scenario the flags make (to_scenario) validates.
      dcpsim::analysis::ScenarioFlags f;
      (k == 0 ? f.kv_dtype : f.out_dtype) = name;
      bool accepted = true;
      try {
        (void)dcpsim::analysis::to_scenario(f);
      } catch (const dcpsim::InputError&) {
        accepted = false;
      }
      for (const auto& [cmd, helps] : dtype_help) {
        const std::string& h = k == 0 ? helps.first : helps.second;
        EXPECT_EQ(std::regex_search(h, std::regex("\\b" + name + "\\b")), accepted)
            << cmd << " " << flag << " " << name
            << (accepted ? " is accepted but not listed: " : " is listed but refused: ") << h;
      }
    }
  }
  // The error for a bad value lists the types.
  EXPECT_EQ(run("simulate --kv-dtype int3"), 2);
  EXPECT_THAT(err_, HasSubstr("bf16"));
  EXPECT_EQ(run("simulate --strategy a2b"), 2);
  EXPECT_THAT(err_, HasSubstr("did you mean 'a2a'?"));
}

TEST_F(HelpDocs, EveryFlagTheReadmeUsesExists) {
  const std::string readme = read(fs::path(DCPSIM_SOURCE_DIR) / "README.md");
  // Each "dcpsim <command> ..." line of the README's code blocks (continuations joined).
  std::map<std::string, std::set<std::string>> used;
  std::istringstream in(readme);
  std::string line, command;
  bool block = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      block = !block;
      continue;
    }
    if (!block) continue;
    const auto at = line.find("dcpsim ");
    if (command.empty() && at != std::string::npos && (at == 0 || line.substr(0, at) == "$ "))
      command = line.substr(at);
    else if (!command.empty())
      command += " " + line;
    if (command.empty()) continue;
    if (!command.empty() && command.back() == '\\') {
      command.pop_back();
      continue;
    }
    std::istringstream words(command.substr(0, command.find('#')));
    std::string w, sub;
    words >> w >> sub;
    if (sub == "hw") {
      std::string hw_sub;
      words >> hw_sub;
      sub += " " + hw_sub;
    }
    while (words >> w)
      if (w.rfind("--", 0) == 0) used[sub].insert(w.substr(0, w.find('=')));
    command.clear();
  }
  ASSERT_GE(used.size(), 5u) << "the README's examples were not found";
  for (const auto& [sub, flags] : used) {
    ASSERT_EQ(run(sub + " --help"), 0) << sub << ": " << err_;
    for (const std::string& f : flags) EXPECT_THAT(out_, HasSubstr(f)) << "README uses " << sub << " " << f;
  }
}

TEST_F(HelpDocs, ReadmeNamesEveryStrategyAndTheEnginesFlag) {
  const std::string readme = read(fs::path(DCPSIM_SOURCE_DIR) / "README.md");
  const auto paragraph = readme.find("The merge strategies");
  ASSERT_NE(paragraph, std::string::npos);
  const std::string text = readme.substr(paragraph, readme.find("\n\n", paragraph) - paragraph);
  for (const auto s : dcpsim::models::all_strategies())
    EXPECT_THAT(text, HasSubstr("`" + std::string(dcpsim::models::to_string(s)) + "`"));
  EXPECT_THAT(text, HasSubstr("--dcp-comm-backend"));
  EXPECT_THAT(text, HasSubstr("--include-research"));
}

TEST_F(HelpDocs, UnknownFlagsAndCommandsGetASuggestion) {
  EXPECT_EQ(run("simulate --stratgey a2a"), 2);
  EXPECT_THAT(err_, HasSubstr("did you mean --strategy?"));
  EXPECT_EQ(run("scan --out x.csv --bathc 4"), 2);
  EXPECT_THAT(err_, HasSubstr("did you mean --batch?"));
  EXPECT_EQ(run("simulat"), 2);
  EXPECT_THAT(err_, HasSubstr("did you mean simulate?"));
  EXPECT_FALSE(fs::exists(dir_ / "x.csv"));
}
#endif

}  // namespace
