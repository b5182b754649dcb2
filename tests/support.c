/* tests/support.c: sanitizer defaults linked into every test binary.
 *
 * TSan suppressions live here, one per line, each with its reason. Policy: a
 * suppression names a function of concurrencykit (prefix ck_) only, never a
 * pts_ function and never a whole library, so none can hide a race in our
 * own code. There are none yet: our own atomics are C11 <stdatomic.h>, which
 * TSan understands.
 */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void) { return ""; }

/* Fail fast and loudly: a report ends the test with a non-zero status. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) {
  return "halt_on_error=1:second_deadlock_stack=1";
}

const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "detect_leaks=1:abort_on_error=0:strict_string_checks=1";
}

const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) {
  return "print_stacktrace=1:halt_on_error=1";
}
