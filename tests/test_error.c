/* test_error.c — the error idiom's helpers (include/curvsweep/error.h): a
 * message with context prepended, and "first error wins" for cleanups that
 * can fail: the first failure's code and message survive later failures
 * and later messages, a clean run stays CS_OK. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "curvsweep/error.h"

#include <string.h>

/* A step that fails with code and records its own message (0: succeeds,
 * leaving a message behind that is not an error). */
static int step(int code, const char *message) {
  if (!code) cs_error(CS_OK, "%s", message);
  return code ? cs_error(code, "%s", message) : CS_OK;
}

static void test_context(void **state) {
  (void)state;
  assert_int_equal(cs_error(CS_ERR_IO, "cannot write x"), CS_ERR_IO);
  assert_int_equal(cs_error_context(CS_ERR_IO, "while saving %s: ", "a.h5"), CS_ERR_IO);
  assert_string_equal(cs_error_message(), "while saving a.h5: cannot write x");
}

static void test_first_error_wins(void **state) {
  (void)state;
  cs_first_error first = {0};
  assert_int_equal(cs_first_error_note(&first, step(CS_OK, "fine")), CS_OK);
  assert_int_equal(cs_first_error_note(&first, step(CS_ERR_INPUT, "the spec is bad")), CS_ERR_INPUT);
  // later cleanups run and fail with other codes and messages: dropped
  assert_int_equal(cs_first_error_note(&first, step(CS_ERR_IO, "cannot close")), CS_ERR_INPUT);
  assert_int_equal(cs_first_error_note(&first, step(CS_ERR_MPI, "cannot release")), CS_ERR_INPUT);
  assert_string_equal(cs_error_message(), "cannot release");
  assert_string_equal(first.message, "the spec is bad");
  assert_int_equal(cs_first_error_end(&first), CS_ERR_INPUT);
  assert_string_equal(cs_error_message(), "the spec is bad");
}

static void test_first_error_of_a_cleanup(void **state) {
  (void)state;
  cs_first_error first = {0};
  cs_first_error_note(&first, step(CS_OK, "work done"));
  cs_first_error_note(&first, step(CS_ERR_IO, "cannot close the archive"));
  cs_first_error_note(&first, step(CS_OK, "released"));
  assert_int_equal(cs_first_error_end(&first), CS_ERR_IO);
  assert_string_equal(cs_error_message(), "cannot close the archive");
  cs_first_error clean = {0};
  cs_first_error_note(&clean, step(CS_OK, "a"));
  cs_first_error_note(&clean, step(CS_OK, "b"));
  assert_int_equal(cs_first_error_end(&clean), CS_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_context),
      cmocka_unit_test(test_first_error_wins),
      cmocka_unit_test(test_first_error_of_a_cleanup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
