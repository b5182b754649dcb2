/* bench/runner/suite_leak.c: the hook of the leak suite (security study,
 * issue 8).
 *
 * The study measures how much a loop learns about a co-located loop by
 * timing its own tasks, per inter-loop policy, as bits per observation window
 * for its two scenarios (s1, s2). Its code registers itself here with
 * rb_leak_register(); until it does, the suite produces no figure at all and
 * says so on the terminal, in results.json ("unavailable") and in report.md.
 * Nothing here estimates a number.
 */
#include "bench/runner/suites.h"

static rb_leak_fn leak_fn;

void rb_leak_register(rb_leak_fn fn) { leak_fn = fn; }

void rb_suite_leak(rb_ctx *ctx) {
  if (leak_fn == NULL) {
    rb_unavailable_add(ctx, "leak",
                       "the security study (issue 8) has not plugged its "
                       "measurement in yet (rb_leak_register); no "
                       "leak.<policy>.s1/s2_bits_per_window figures this run");
    return;
  }
  leak_fn(ctx);
}
