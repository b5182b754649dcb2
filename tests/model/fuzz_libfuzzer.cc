// tests/model/fuzz_libfuzzer.cc: the differential fuzzer as a libFuzzer
// target (clang -fsanitize=fuzzer; built and run by tools/fuzz.sh
// --libfuzzer SECONDS). The input bytes are the program (program.h); a
// divergence from the model prints the shrunk reproduction and aborts.
#include <cstdio>
#include <cstdlib>

#include "tests/model/diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // ISSUE 18: the library checkpoints microtasks only at the end of a task;
  // switch to kSpec when it lands (as kLibraryMode in fuzz_test.cc).
  const ptsmodel::CheckpointMode mode =
      getenv("PTS_FUZZ_SPEC") ? ptsmodel::CheckpointMode::kSpec
                              : ptsmodel::CheckpointMode::kEndOfTaskOnlyIssue18;
  ptsfuzz::Program p = ptsfuzz::Generate(data, size);
  if (ptsfuzz::RunBoth(p, mode).differ) {
    ptsfuzz::Program small = ptsfuzz::Shrink(p, mode);
    fprintf(stderr, "divergence from the model\n%s",
            ptsfuzz::Report(small, mode).c_str());
    abort();
  }
  return 0;
}
