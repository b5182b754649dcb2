// tests/model/diff.h: one differential run (model vs library) and the
// shrinker that turns a diverging program into a minimal reproduction.
#ifndef PTSCHED_TESTS_MODEL_DIFF_H
#define PTSCHED_TESTS_MODEL_DIFF_H

#include <string>

#include "tests/model/model.h"
#include "tests/model/program.h"

namespace ptsfuzz {

struct DiffResult {
  bool differ = false;
  uint64_t ops = 0;
  std::vector<std::string> model, lib;
};

DiffResult RunBoth(const Program &p);

// Deletes actions (any depth) while the program still diverges; returns the
// smallest program found and a report: the listing and both traces from the
// first difference.
Program Shrink(const Program &p);
std::string Report(const Program &p);

}  // namespace ptsfuzz

#endif  // PTSCHED_TESTS_MODEL_DIFF_H
