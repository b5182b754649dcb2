// tests/model/fuzz_libfuzzer.cc: the differential fuzzer as a libFuzzer
// target (clang -fsanitize=fuzzer; built and run by tools/fuzz.sh
// --libfuzzer SECONDS). The input bytes are the program (program.h); a
// divergence from the model prints the shrunk reproduction and aborts.
#include <cstdio>
#include <cstdlib>

#include "tests/model/diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ptsfuzz::Program p = ptsfuzz::Generate(data, size);
  if (ptsfuzz::RunBoth(p).differ) {
    ptsfuzz::Program small = ptsfuzz::Shrink(p);
    fprintf(stderr, "divergence from the model\n%s",
            ptsfuzz::Report(small).c_str());
    abort();
  }
  return 0;
}
