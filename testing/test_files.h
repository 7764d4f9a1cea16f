// File helpers for tests that write files: temporary directories that are
// removed when the test program ends, whole-file reads and sorted directory
// listings that report failures through gtest.
#ifndef RUNNEL_TESTING_TEST_FILES_H_
#define RUNNEL_TESTING_TEST_FILES_H_

#include <string>
#include <vector>

namespace runnel {

// Creates a new, empty directory under ::testing::TempDir(), named after the
// running test (`<Suite>.<Test>_XXXXXX`), and returns its path. Every
// directory made this way is removed, with its contents, when the test
// program's global environments are torn down. A failure to create it is a
// test failure.
std::string MakeTempDir();

// The contents of the file at `path`; a test failure (and "") when it
// cannot be read.
std::string ReadFile(const std::string& path);

// The names (not paths) of the entries of `dir`, sorted.
std::vector<std::string> DirEntries(const std::string& dir);

}  // namespace runnel

#endif  // RUNNEL_TESTING_TEST_FILES_H_
