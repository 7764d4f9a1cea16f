// Replays files through the harnesses without libFuzzer (the normal gcc
// build): `fuzz_replay <harness> <file or directory>...` runs every file
// (directories: every regular file in them, sorted) through that harness's
// LLVMFuzzerTestOneInput, renamed RunnelFuzz_<harness> by fuzz/CMakeLists.txt.
// A crash or sanitizer report fails the run; an empty or missing corpus
// directory is fine.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#define X(name) extern "C" int RunnelFuzz_##name(const uint8_t*, size_t);
RUNNEL_FUZZ_HARNESSES
#undef X

namespace {

using Harness = int (*)(const uint8_t*, size_t);

struct Entry {
  const char* name;
  Harness fn;
};

const Entry kHarnesses[] = {
#define X(name) {#name, RunnelFuzz_##name},
    RUNNEL_FUZZ_HARNESSES
#undef X
};

std::vector<std::string> Files(const std::string& arg) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  if (fs::is_directory(arg, ec)) {
    for (const auto& e : fs::directory_iterator(arg, ec)) {
      if (e.is_regular_file(ec)) out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
  } else if (fs::exists(arg, ec)) {
    out.push_back(arg);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Entry* harness = nullptr;
  for (const Entry& e : kHarnesses) {
    if (argc >= 2 && std::strcmp(argv[1], e.name) == 0) harness = &e;
  }
  if (harness == nullptr) {
    std::fprintf(stderr,
                 "usage: %s HARNESS FILE_OR_DIR...\nharnesses:", argv[0]);
    for (const Entry& e : kHarnesses) std::fprintf(stderr, " %s", e.name);
    std::fprintf(stderr, "\n");
    return 2;
  }
  int ran = 0;
  for (int i = 2; i < argc; ++i) {
    for (const std::string& path : Files(argv[i])) {
      std::ifstream f(path, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
      std::fprintf(stderr, "%s: %s (%zu bytes)\n", harness->name, path.c_str(),
                   bytes.size());
      harness->fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++ran;
    }
  }
  std::printf("%s: ran %d inputs\n", harness->name, ran);
  return 0;
}
