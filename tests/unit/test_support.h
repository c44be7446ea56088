// What the post-processor's unit tests share: reading files, the checked-in test data, a
// scratch directory, and running the built functracer-postproc binary with its output
// captured.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_text.h"

extern char** environ;

namespace ft::test {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The source tree: $FT_SOURCE_ROOT under meson test; run by hand from the build directory,
// __FILE__ is relative to it.
inline std::string source_root() {
  if (const char* root = std::getenv("FT_SOURCE_ROOT")) return root;
  std::string file = __FILE__;
  return file.substr(0, file.rfind("/tests/unit/"));
}

// A file of tests/unit/data/.
inline std::string data(const std::string& name) {
  return source_root() + "/tests/unit/data/" + name;
}

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "ft-unit-XXXXXX").string();
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string write(const std::string& name, const std::string& content) const {
    std::string p = file(name);
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

 private:
  std::string path_;
};

struct RunResult {
  int status = -1;  // exit status, or -1 if it did not exit normally
  std::string out;
  std::string err;
};

// Runs $FT_BUILD_ROOT/postproc/functracer-postproc (skipped outside meson test).
class PostprocBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* build = std::getenv("FT_BUILD_ROOT");
    if (build == nullptr) GTEST_SKIP() << "FT_BUILD_ROOT not set (run through meson test)";
    exe_ = std::string(build) + "/postproc/functracer-postproc";
    ASSERT_EQ(access(exe_.c_str(), X_OK), 0) << exe_ << " not built";
  }

  RunResult run(const std::vector<std::string>& args) {
    std::string out_path = tmp_.file("stdout-" + std::to_string(runs_));
    std::string err_path = tmp_.file("stderr-" + std::to_string(runs_++));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::vector<std::string> all = {exe_};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    RunResult result;
    int rc = posix_spawn(&pid, exe_.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0) << "cannot start " << exe_;
    if (rc != 0) return result;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) result.status = WEXITSTATUS(status);
    result.out = read_file(out_path);
    result.err = read_file(err_path);
    return result;
  }

  std::string exe_;
  TempDir tmp_;
  int runs_ = 0;
};

}  // namespace ft::test
