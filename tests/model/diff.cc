// tests/model/diff.cc: differential run and shrinking.
#include "tests/model/diff.h"

#include <cstdlib>
#include <functional>
#include <sstream>

#include "tests/model/lib_backend.h"

namespace ptsfuzz {

DiffResult RunBoth(const Program &p) {
  DiffResult d;
  {
    ptsmodel::Model m;
    RunResult r = Run(p, &m);
    d.model = r.trace;
    d.ops = r.ops;
  }
  {
    LibBackend lib;
    RunResult r = Run(p, &lib);
    d.lib = r.trace;
  }
  d.differ = FirstDifference(d.model, d.lib) >= 0;
  return d;
}

namespace {

// Every node as a path of indices, preorder.
void Paths(const std::vector<Action> &v, std::vector<size_t> &prefix,
           std::vector<std::vector<size_t>> &out) {
  for (size_t i = 0; i < v.size(); i++) {
    prefix.push_back(i);
    out.push_back(prefix);
    Paths(v[i].body, prefix, out);
    prefix.pop_back();
  }
}

bool Erase(std::vector<Action> &v, const std::vector<size_t> &path, size_t k) {
  if (path[k] >= v.size()) return false;
  if (k + 1 == path.size()) {
    v.erase(v.begin() + (long)path[k]);
    return true;
  }
  return Erase(v[path[k]].body, path, k + 1);
}

// Replaces the node at path by its body (hoists the children one level up).
bool Hoist(std::vector<Action> &v, const std::vector<size_t> &path, size_t k) {
  if (path[k] >= v.size()) return false;
  if (k + 1 == path.size()) {
    if (v[path[k]].body.empty()) return false;
    std::vector<Action> kids = v[path[k]].body;
    v.erase(v.begin() + (long)path[k]);
    v.insert(v.begin() + (long)path[k], kids.begin(), kids.end());
    return true;
  }
  return Hoist(v[path[k]].body, path, k + 1);
}

}  // namespace

Program Shrink(const Program &p) {
  Program best = p;
  bool progress = true;
  int rounds = 0;
  while (progress && rounds++ < 20) {
    progress = false;
    std::vector<std::vector<size_t>> paths;
    std::vector<size_t> prefix;
    Paths(best.top, prefix, paths);
    // Last first, so earlier paths stay valid after a deletion.
    for (size_t i = paths.size(); i-- > 0;) {
      for (int how = 0; how < 2; how++) {
        Program cand = best;
        bool ok = how == 0 ? Erase(cand.top, paths[i], 0)
                           : Hoist(cand.top, paths[i], 0);
        if (ok && RunBoth(cand).differ) {
          best = cand;
          progress = true;
          break;
        }
      }
    }
  }
  return best;
}

std::string Report(const Program &p) {
  DiffResult d = RunBoth(p);
  std::ostringstream o;
  o << "program (" << p.nodes() << " actions):\n" << p.str();
  long i = FirstDifference(d.model, d.lib);
  o << "first difference at trace line " << i << "\n";
  // PTS_FUZZ_VERBOSE: the whole traces.
  size_t from = getenv("PTS_FUZZ_VERBOSE") ? 0 : i > 3 ? (size_t)i - 3 : 0;
  o << "model:\n";
  for (size_t k = from; k < d.model.size() && k < (size_t)i + 6; k++)
    o << (k == (size_t)i ? " >> " : "    ") << d.model[k] << "\n";
  o << "library:\n";
  for (size_t k = from; k < d.lib.size() && k < (size_t)i + 6; k++)
    o << (k == (size_t)i ? " >> " : "    ") << d.lib[k] << "\n";
  return o.str();
}

}  // namespace ptsfuzz
