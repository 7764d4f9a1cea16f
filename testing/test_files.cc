#include "testing/test_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>

#include "runnel/base/env.h"

namespace runnel {
namespace {

// Removes the directories MakeTempDir made when the test program ends.
class TempDirs : public ::testing::Environment {
 public:
  static std::vector<std::string>& dirs() {
    static auto* d = new std::vector<std::string>;
    return *d;
  }
  void TearDown() override {
    std::error_code ec;
    for (const std::string& d : dirs()) std::filesystem::remove_all(d, ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kTempDirs =
    ::testing::AddGlobalTestEnvironment(new TempDirs);

}  // namespace

std::string MakeTempDir() {
  const ::testing::TestInfo* test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string tmpl = ::testing::TempDir();
  tmpl += test != nullptr
              ? std::string(test->test_suite_name()) + "." + test->name()
              : std::string("runnel_test");
  std::replace(tmpl.begin() + ::testing::TempDir().size(), tmpl.end(), '/',
               '_');  // Parameterized test names hold '/'.
  tmpl += "_XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr) << tmpl;
  TempDirs::dirs().push_back(tmpl);
  return tmpl;
}

std::string ReadFile(const std::string& path) {
  std::string s;
  EXPECT_TRUE(ReadFileToString(path, &s).ok()) << path;
  return s;
}

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace runnel
