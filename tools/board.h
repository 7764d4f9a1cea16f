// `runnel board`: one self-contained HTML report of a log directory's event
// files, for machines without TensorBoard (TensorFlow issue 14).
//
//   ASSIGN_OR_RETURN(BoardData data, ReadBoard("/tmp/logs"));
//   RETURN_IF_ERROR(WriteBoardFile("report.html", BoardHtml(data)));
//
// The report holds, per run of the log directory (FindEventRuns):
//   - a header: the runs, their event files (events, bytes read) and the
//     damage the reader met (Note [Damaged event files]), the points purged
//     as orphaned data (Note [Orphaned data]), and what the report leaves
//     out;
//   - a chart per scalar tag: x = step, one raw (faint) and one smoothed
//     curve per run in a colour of its own, a legend, axes with tick labels,
//     and a smoothing slider doing TensorBoard's debiased exponential moving
//     average;
//   - per histogram tag and run, TensorBoard's "offset" view: one ridge per
//     recorded step, older steps behind;
//   - per image tag and run, the latest images (PNG, JPEG or GIF) with their
//     steps;
//   - the other tags (audio, tensors) listed by name.
// Caps (BoardOptions) keep a huge log directory's report usable.
//
// Note [Untrusted board data]. Tags, run names, file names and damage
// messages come from files anyone can write. The page's HTML is fixed
// text; the data travels as one JSON document in a <script
// type="application/json"> element, with every '<', '>' and '&' written as
// \u003c / \u003e / \u0026 (so "</script>" or "<!--" in a tag cannot end the
// element) and all non-ASCII as \uXXXX escapes of the decoded UTF-8 (an
// invalid byte becomes U+FFFD). The page's script reads it with JSON.parse
// and writes text only through textContent and SVG attributes, never
// innerHTML; an image's MIME type is chosen here from its magic bytes, and
// its bytes travel as base64. A Content-Security-Policy meta element allows
// no network at all (default-src 'none'; images only from data: URIs).
//
// Note [Board in the browser]. When the script is done it sets <body
// data-status="ok" data-curves=N data-ridges=M data-images=K> (N the SVG
// paths of the scalar charts), and window.onerror counts errors into
// data-errors, so a headless browser's --dump-dom shows whether the page
// worked (tools/board_browser_test.sh). Each scalar chart is <section
// class="chart scalar" data-tag=...> whose <svg> holds exactly two <path>
// elements per shown run having the tag (class "raw" and "smoothed"; every
// run is shown until its checkbox is cleared); axes and grid are <line>s.
//
// Memory: ReadBoard holds every scalar and histogram value of the log
// directory (the caps apply when the page is made, after the purges), of
// images only the latest max_images per tag and run, of audio and tensors
// none. Thread-safe: no shared state.
#ifndef RUNNEL_TOOLS_BOARD_H_
#define RUNNEL_TOOLS_BOARD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"
#include "runnel/io/event_reader.h"

namespace runnel {

struct BoardOptions {
  // Per scalar tag and run: the first, the last and evenly spaced points
  // between them.
  int64_t max_scalar_points = 1000;
  // Per histogram tag and run: evenly spaced steps, the last included.
  int64_t max_histogram_steps = 50;
  // Per image tag and run: the latest ones.
  int64_t max_images = 10;
  // An image larger than this is listed, not embedded.
  int64_t max_image_bytes = 4 << 20;
};

// One event file of a run, as read.
struct BoardFile {
  std::string path;
  Status status;  // Not OK when the file could not be opened or read.
  EventFileReport report;
};

// One run, as read: its files and its tags after the purges.
struct BoardRun {
  EventRun run;
  std::vector<BoardFile> files;
  EventAccumulator acc;
};

struct BoardData {
  std::string logdir;
  BoardOptions options;
  std::vector<BoardRun> runs;
};

// Reads every run under `logdir` (a directory or one event file). A damaged
// or unreadable event file is not an error: it is reported in its
// BoardFile. Errors: those of FindEventRuns (NotFound when nothing is at
// `logdir`), and NotFound when it holds no event files.
StatusOr<BoardData> ReadBoard(const std::string& logdir,
                              const BoardOptions& options = {});

// The report's HTML: one file, nothing fetched from elsewhere.
std::string BoardHtml(const BoardData& data);

// Checks that `out_path` can be written before a long read: InvalidArgument
// if it is empty, holds a NUL or is a directory; NotFound if its directory
// does not exist; PermissionDenied if that directory is not writable.
Status CheckBoardOutput(const std::string& out_path);

// Writes `html` to `out_path` through a temporary file beside it, renamed
// into place (a browser never sees half a report). Unavailable / DataLoss,
// naming `out_path`, when it cannot be written.
Status WriteBoardFile(const std::string& out_path, absl::string_view html);

// CheckBoardOutput, ReadBoard, BoardHtml, WriteBoardFile.
Status WriteBoard(const std::string& logdir, const std::string& out_path,
                  const BoardOptions& options = {});

// --- Pieces, for tests -----------------------------------------------------

// The indices of at most `max` of `n` items, evenly spaced, the first and
// the last included (all of them when n <= max).
std::vector<size_t> EvenSample(size_t n, size_t max);

// A histogram's buckets as TensorBoard's histogram plugin draws them:
// (left, right, count) with bucket i spanning (bucket_limit[i-1],
// bucket_limit[i]], and the end buckets' ±DBL_MAX edges (and any edge
// beyond the data) clamped to [min, max].
struct HistogramBucket {
  double left, right, count;
};
std::vector<HistogramBucket> HistogramBuckets(const HistogramProto& h);

}  // namespace runnel

#endif  // RUNNEL_TOOLS_BOARD_H_
