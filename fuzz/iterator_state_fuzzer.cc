// IteratorState::Decode (runnel/framework/dataset.h) on fuzzed bytes: the
// bytes a checkpoint gives DecodeIteratorState. Decode must refuse what it
// cannot read (DataLoss) without crashing or allocating more than the input
// allows; what it accepts must encode back to bytes that decode to the same
// entries.
//
// Input: byte 0 is a mode; the rest are the encoded state. With mode bit 0
// set, the harness replaces the last 8 bytes by the state's checksum
// (IteratorState::AppendChecksum) first, so mutations get past the
// checksum to the parser behind it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runnel/base/logging.h"
#include "runnel/framework/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using runnel::IteratorState;
  if (size == 0) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) != 0 && bytes.size() >= 8) {
    bytes.resize(bytes.size() - 8);
    IteratorState::AppendChecksum(&bytes);
  }
  auto state = IteratorState::Decode(bytes);
  if (!state.ok()) {
    RUNNEL_CHECK(absl::IsDataLoss(state.status()));
    return 0;
  }
  const std::string again = (*state)->Encode();
  auto round = IteratorState::Decode(again);
  RUNNEL_CHECK(round.ok());
  RUNNEL_CHECK((*round)->size() == (*state)->size());
  RUNNEL_CHECK((*round)->Encode() == again);
  return 0;
}
