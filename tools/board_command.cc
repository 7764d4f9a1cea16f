// `runnel board LOGDIR -o REPORT.html [--max_scalar_points N]
//               [--max_histogram_steps N] [--max_images N]`
//
// Writes one self-contained HTML report of the event files under LOGDIR
// (tools/board.h says what it holds); damage in the files is a warning on
// stderr and is listed in the report, as `runnel events` does.
#include "tools/board_command.h"

#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/board.h"

namespace runnel {
namespace {

int BoardUsage() {
  std::cerr << "usage: runnel board LOGDIR -o REPORT.html"
               " [--max_scalar_points N] [--max_histogram_steps N]"
               " [--max_images N]\n";
  return 2;
}

int BoardFail(const Status& s) {
  std::cerr << "runnel board: " << s << "\n";
  return 1;
}

void WarnAboutDamage(const BoardData& data) {
  for (const BoardRun& r : data.runs) {
    for (const BoardFile& f : r.files) {
      if (!f.status.ok()) {
        std::cerr << "runnel board: warning: " << f.status << "\n";
      }
      for (const EventFileDamage& d : f.report.damage) {
        std::cerr << "runnel board: warning: " << d.status.message() << "\n";
      }
      const int64_t more =
          f.report.num_damaged - static_cast<int64_t>(f.report.damage.size());
      if (more > 0) {
        std::cerr << "runnel board: warning: " << f.path << ": " << more
                  << " more damaged records\n";
      }
    }
  }
}

}  // namespace

int BoardCommand(const std::vector<std::string>& args) {
  std::string logdir, out;
  BoardOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    int64_t* cap = a == "--max_scalar_points"     ? &options.max_scalar_points
                   : a == "--max_histogram_steps" ? &options.max_histogram_steps
                   : a == "--max_images"          ? &options.max_images
                                                  : nullptr;
    if ((a == "-o" || a == "--output") && i + 1 < args.size()) {
      out = args[++i];
    } else if (cap != nullptr && i + 1 < args.size()) {
      if (!absl::SimpleAtoi(args[++i], cap) || *cap < 1) {
        std::cerr << "runnel board: " << a << " wants a positive integer, not '"
                  << args[i] << "'\n";
        return BoardUsage();
      }
    } else if (logdir.empty() && !a.empty() && a[0] != '-') {
      logdir = a;
    } else {
      std::cerr << "runnel board: unexpected argument '" << a << "'\n";
      return BoardUsage();
    }
  }
  if (logdir.empty() || out.empty()) return BoardUsage();

  if (Status s = CheckBoardOutput(out); !s.ok()) return BoardFail(s);
  auto data = ReadBoard(logdir, options);
  if (!data.ok()) return BoardFail(data.status());
  WarnAboutDamage(*data);
  const std::string html = BoardHtml(*data);
  if (Status s = WriteBoardFile(out, html); !s.ok()) return BoardFail(s);

  size_t tags = 0;
  for (const BoardRun& r : data->runs) tags += r.acc.tags().size();
  int64_t purged = 0;
  for (const BoardRun& r : data->runs) purged += r.acc.num_purged();
  std::cout << "wrote " << out << " (" << html.size()
            << " bytes): " << data->runs.size() << " run(s), " << tags
            << " run tag(s)"
            << (purged > 0
                    ? absl::StrCat(", ", purged, " orphaned points purged")
                    : "")
            << "\n";
  return 0;
}

}  // namespace runnel
