// host/main.cc: the ptsched-host program (docs/host.md). Reads the tenant
// scripts, runs them with ptsh::run() and prints each tenant's statistics;
// the exit status is 1 if any tenant had an uncaught error, 2 for a usage or
// start-up error.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "host/host.h"

namespace {

// The policies are the library's names (pts_policy_name), so the list
// grows with the library: quantized since 5.2.
int usage() {
  std::fprintf(stderr,
               "usage: ptsched-host [--threads N] [--pin-threads] [--policy P] [--json | --bench] [--preload F.js] a.js [b.js ...]\n"
               "  --pin-threads: bind pool thread i to the i-th CPU the process may use\n"
               "  P:");
  for (int k = 0; k < PTS_POLICY_COUNT && pts_policy_name(k) != nullptr; k++)
    std::fprintf(stderr, "%s %s", k ? "," : "", pts_policy_name(k));
  std::fprintf(stderr, " (default strict)\n");
  return 2;
}

bool read_file(const std::string &path, std::string *out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "ptsched-host: cannot read %s\n", path.c_str());
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

std::string base_name(const std::string &path) {
  size_t s = path.find_last_of('/');
  std::string b = s == std::string::npos ? path : path.substr(s + 1);
  if (b.size() > 3 && b.compare(b.size() - 3, 3, ".js") == 0) b.resize(b.size() - 3);
  return b;
}

void print_text(const std::vector<ptsh::Result> &rs) {
  std::printf("%-16s %6s %8s %8s %8s %8s %8s %10s %10s %10s %s\n", "tenant", "thread",
              "idle", "low", "fifo", "high", "input", "cpu_ms", "delay_p50", "delay_p99",
              "status");
  for (const auto &r : rs) {
    const pts_agent_stats &s = r.stats;
    std::printf("%-16s %6d %8llu %8llu %8llu %8llu %8llu %10.3f %9.1fus %9.1fus %s\n",
                r.name.c_str(), r.thread,
                (unsigned long long)s.tasks_run[PTS_CLASS_IDLE],
                (unsigned long long)s.tasks_run[PTS_CLASS_LOW],
                (unsigned long long)s.tasks_run[PTS_CLASS_FIFO],
                (unsigned long long)s.tasks_run[PTS_CLASS_HIGH],
                (unsigned long long)s.tasks_run[PTS_CLASS_INPUT], s.cpu_ns / 1e6,
                ptsh::delay_quantile(s, 0.5) / 1e3, ptsh::delay_quantile(s, 0.99) / 1e3,
                r.failed ? "FAILED" : "ok");
  }
}

std::string json_str(const std::string &s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

void print_json(const std::vector<ptsh::Result> &rs) {
  std::printf("{\"tenants\":[");
  for (size_t i = 0; i < rs.size(); i++) {
    const auto &r = rs[i];
    const pts_agent_stats &s = r.stats;
    std::printf("%s{\"name\":%s,\"thread\":%d,\"bound_cpu\":%d,\"failed\":%s,\"tasks\":{\"idle\":%llu,\"low\":%llu,"
                "\"fifo\":%llu,\"high\":%llu,\"input\":%llu},\"cpu_ns\":%llu,"
                "\"delay_p50_ns\":%llu,\"delay_p99_ns\":%llu}",
                i ? "," : "", json_str(r.name).c_str(), r.thread, r.cpu, r.failed ? "true" : "false",
                (unsigned long long)s.tasks_run[PTS_CLASS_IDLE],
                (unsigned long long)s.tasks_run[PTS_CLASS_LOW],
                (unsigned long long)s.tasks_run[PTS_CLASS_FIFO],
                (unsigned long long)s.tasks_run[PTS_CLASS_HIGH],
                (unsigned long long)s.tasks_run[PTS_CLASS_INPUT],
                (unsigned long long)s.cpu_ns,
                (unsigned long long)ptsh::delay_quantile(s, 0.5),
                (unsigned long long)ptsh::delay_quantile(s, 0.99));
  }
  std::printf("]}\n");
}

// --bench: one line for the whole run: wall time (start-up and teardown
// included), tasks run by every tenant (each one's setup and start tasks
// included), throughput, the agents' busy time, the worst tenant's
// start-delay p99; then the run's window (ptsh::Timing): run_ms from the
// scripts' start, every realm made, to idle, the pool threads' CPU time in
// it, and the setup and teardown around it.
void print_bench(const std::vector<ptsh::Result> &rs, double wall_ms, unsigned threads,
                 const ptsh::Timing &tm) {
  uint64_t tasks = 0, cpu = 0, p99 = 0;
  for (const auto &r : rs) {
    for (uint64_t n : r.stats.tasks_run) tasks += n;
    cpu += r.stats.cpu_ns;
    uint64_t q = ptsh::delay_quantile(r.stats, 0.99);
    if (q > p99) p99 = q;
  }
  std::printf("bench tenants=%zu threads=%u wall_ms=%.1f tasks=%llu tasks_per_s=%.0f cpu_ms=%.1f "
              "max_delay_p99_us=%.1f failed=%d run_ms=%.3f run_cpu_ms=%.3f setup_ms=%.1f "
              "teardown_ms=%.1f\n",
              rs.size(), threads, wall_ms, (unsigned long long)tasks,
              tasks / (wall_ms / 1e3), cpu / 1e6, p99 / 1e3,
              static_cast<int>(std::count_if(rs.begin(), rs.end(),
                                             [](const ptsh::Result &r) { return r.failed; })),
              tm.run_ns / 1e6, tm.run_cpu_ns / 1e6, tm.setup_ns / 1e6, tm.teardown_ns / 1e6);
}

}  // namespace

int main(int argc, char **argv) {
  ptsh::Options opts;
  bool json = false;
  bool bench = false;
  std::vector<ptsh::TenantSpec> specs;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      opts.threads = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--policy" && i + 1 < argc) {
      std::string p = argv[++i];
      int k = 0;
      while (k < PTS_POLICY_COUNT &&
             (pts_policy_name(k) == nullptr || p != pts_policy_name(k)))
        k++;
      if (k == PTS_POLICY_COUNT) return usage();
      opts.policy = static_cast<pts_policy>(k);
    } else if (a == "--preload" && i + 1 < argc) {
      std::string text;
      if (!read_file(argv[++i], &text)) return 2;
      opts.preload.emplace_back(argv[i], text);
    } else if (a == "--pin-threads") {
      opts.pin_threads = true;
    } else if (a == "--bench") {
      bench = true;
    } else if (a == "--json") {
      json = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return usage();
    } else {
      std::string text;
      if (!read_file(a, &text)) return 2;
      std::string name = base_name(a);
      int same = 0;
      for (const auto &s : specs) same += s.name == name || s.name.rfind(name + "#", 0) == 0;
      if (same) name += "#" + std::to_string(same + 1);
      specs.push_back({name, a, text});
    }
  }
  if (specs.empty()) return usage();
  if (!ptsh::init()) {
    std::fprintf(stderr, "ptsched-host: JS_Init failed\n");
    return 2;
  }
  std::vector<ptsh::Result> rs;
  timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ptsh::Timing tm;
  int rc = ptsh::run(opts, specs, &rs, &tm);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ptsh::shutdown();
  if (rc != 0) {
    std::fprintf(stderr, "ptsched-host: %s\n", pts_strerror(rc));
    return 2;
  }
  std::fflush(stdout);
  if (bench) {
    print_bench(rs, (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
                opts.threads, tm);
  } else if (json) {
    print_json(rs);
  } else {
    print_text(rs);
  }
  for (const auto &r : rs) {
    if (r.failed) return 1;
  }
  return 0;
}
