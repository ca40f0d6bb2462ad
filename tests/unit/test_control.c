/* The on-demand control protocol (src/inject/control.c): requests parsed exactly,
 * formatted ones read back, malformed and oversized ones refused with one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"

static bool parse(const char *line, ft__ctl_req *r, char *why) {
  return ft__ctl_parse(line, strlen(line), r, why, 256);
}

static void test_parses_requests(void **state) {
  (void)state;
  ft__ctl_req r;
  char why[256];
  assert_true(parse("FTCTL/1 info\n", &r, why));
  assert_int_equal(r.cmd, FT__CTL_INFO);
  assert_true(parse("FTCTL/1 capture ms=5000", &r, why));
  assert_int_equal(r.cmd, FT__CTL_CAPTURE);
  assert_int_equal(r.duration_ms, 5000);
  assert_int_equal(r.steps, 0);
  assert_string_equal(r.out, "");
  /* hex text: "Step" and "/t/a b-%n.json" */
  assert_true(parse("FTCTL/1 capture steps=3 range=53746570 out=2f742f6120622d256e2e6a736f6e\n", &r, why));
  assert_int_equal(r.steps, 3);
  assert_string_equal(r.range, "Step");
  assert_string_equal(r.out, "/t/a b-%n.json");
}

static void test_refuses_malformed(void **state) {
  (void)state;
  static const struct {
    const char *line, *why;
  } bad[] = {
      {"", "not a FTCTL/1 request"},
      {"FTCTL/10 info", "not a FTCTL/1 request"},
      {"FTCTL/1", "no command"},
      {"FTCTL/1 reboot", "unknown command"},
      {"FTCTL/1 info ms=5", "unexpected argument"},
      {"FTCTL/1 capture", "a capture takes either ms= or steps="},
      {"FTCTL/1 capture ms=5 steps=2 range=41", "a capture takes either ms= or steps="},
      {"FTCTL/1 capture steps=2", "a capture by steps needs range="},
      {"FTCTL/1 capture ms=0", "bad or repeated argument 'ms'"},
      {"FTCTL/1 capture ms=86400001", "bad or repeated argument 'ms'"},
      {"FTCTL/1 capture ms=18446744073709551616", "bad or repeated argument 'ms'"},
      {"FTCTL/1 capture ms=5 ms=6", "bad or repeated argument 'ms'"},
      {"FTCTL/1 capture ms=-5", "bad or repeated argument 'ms'"},
      {"FTCTL/1 capture steps=2 range=4", "bad or repeated argument 'range'"},    /* odd length */
      {"FTCTL/1 capture steps=2 range=4G", "bad or repeated argument 'range'"},   /* not hex */
      {"FTCTL/1 capture steps=2 range=4100", "bad or repeated argument 'range'"}, /* a NUL byte */
      {"FTCTL/1 capture steps=2 range=41 range=42", "bad or repeated argument 'range'"},
      {"FTCTL/1 capture ms=5 colour=blue", "bad or repeated argument 'colour'"},
      {"FTCTL/1 capture ms=5 Colour\n=blue", "bad argument"}, /* never a line break in the reason */
      {"FTCTL/1 capture ms=5 range=41", "range= goes with steps="},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ft__ctl_req r;
    char why[256] = "";
    assert_false(parse(bad[i].line, &r, why));
    if (strcmp(why, bad[i].why)) fail_msg("'%s': '%s', want '%s'", bad[i].line, why, bad[i].why);
  }
  /* a range name longer than its field, and a request over the limit */
  char *long_line = malloc(FT__CTL_MAX_REQUEST + 16);
  assert_non_null(long_line);
  int n = sprintf(long_line, "FTCTL/1 capture steps=1 range=");
  for (int i = 0; i < 256; i++) n += sprintf(long_line + n, "41");
  ft__ctl_req r;
  char why[256];
  assert_false(parse(long_line, &r, why));
  assert_string_equal(why, "bad or repeated argument 'range'");
  memset(long_line, 'x', FT__CTL_MAX_REQUEST + 8);
  long_line[FT__CTL_MAX_REQUEST + 8] = '\0';
  assert_false(parse(long_line, &r, why));
  assert_string_equal(why, "request longer than 8192 bytes");
  free(long_line);
}

static void test_format_round_trip(void **state) {
  (void)state;
  ft__ctl_req in = {.cmd = FT__CTL_CAPTURE, .steps = 7}, out;
  snprintf(in.range, sizeof in.range, "ProfilerStep#");
  snprintf(in.out, sizeof in.out, "/tmp/x y\n\x01\xff-%%n.json.gz");
  char line[FT__CTL_MAX_REQUEST], why[256];
  size_t n = ft__ctl_format(&in, line, sizeof line);
  assert_int_equal(n, strlen(line));
  assert_int_equal(line[n - 1], '\n');
  assert_true(ft__ctl_parse(line, n, &out, why, sizeof why));
  assert_int_equal(out.cmd, FT__CTL_CAPTURE);
  assert_int_equal(out.steps, 7);
  assert_string_equal(out.range, in.range);
  assert_string_equal(out.out, in.out);
  ft__ctl_req d = {.cmd = FT__CTL_CAPTURE, .duration_ms = 1500};
  assert_int_equal(ft__ctl_format(&d, line, sizeof line), strlen("FTCTL/1 capture ms=1500\n"));
  assert_string_equal(line, "FTCTL/1 capture ms=1500\n");
  assert_int_equal(ft__ctl_format(&d, line, 10), 0); /* does not fit */
}

static void test_directory_rules(void **state) {
  (void)state;
  char tmpl[] = "/tmp/ft-ctl-XXXXXX", dir[4096], why[4200], path[4200];
  assert_non_null(mkdtemp(tmpl));
  snprintf(path, sizeof path, "%s/ctl", tmpl);
  setenv("FLAGTRACE_CONTROL_DIR", path, 1);
  assert_false(ft__ctl_dir(dir, sizeof dir, false, why, sizeof why)); /* none yet, not made */
  assert_true(ft__ctl_dir(dir, sizeof dir, true, why, sizeof why));
  assert_string_equal(dir, path);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  chmod(path, 0750);
  assert_false(ft__ctl_dir(dir, sizeof dir, true, why, sizeof why));
  char want[4400];
  snprintf(want, sizeof want, "the control directory %s is open to others (mode 750; it must be 0700)", path);
  assert_string_equal(why, want);
  rmdir(path);
  /* a link of ours to our own 0700 directory is followed: the sockets go in the target */
  char real[4096], sub[4300];
  assert_non_null(realpath(tmpl, real));
  assert_int_equal(symlink(tmpl, path), 0);
  assert_true(ft__ctl_dir(dir, sizeof dir, true, why, sizeof why));
  assert_string_equal(dir, real);
  /* its target is checked as the directory itself would be */
  snprintf(sub, sizeof sub, "%s/open", tmpl);
  assert_int_equal(mkdir(sub, 0700), 0);
  chmod(sub, 0755);
  unlink(path);
  assert_int_equal(symlink(sub, path), 0);
  assert_false(ft__ctl_dir(dir, sizeof dir, true, why, sizeof why));
  snprintf(want, sizeof want, "the control directory %s/open is open to others (mode 755; it must be 0700)", real);
  assert_string_equal(why, want);
  rmdir(sub);
  assert_false(ft__ctl_dir(dir, sizeof dir, false, why, sizeof why)); /* dangling */
  snprintf(want, sizeof want,
           "the control directory %s is a symbolic link to nothing usable: No such file or directory", path);
  assert_string_equal(why, want);
  unlink(path);
  /* a file is no directory */
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
  assert_false(ft__ctl_dir(dir, sizeof dir, false, why, sizeof why));
  snprintf(want, sizeof want, "the control directory %s is not a directory", path);
  assert_string_equal(why, want);
  unlink(path);
  /* too long for any socket under it: refused before a process could start */
  char lng[200];
  memset(lng, 'd', sizeof lng - 1);
  lng[sizeof lng - 1] = '\0';
  memcpy(lng, "/tmp/", 5);
  setenv("FLAGTRACE_CONTROL_DIR", lng, 1);
  assert_false(ft__ctl_dir(dir, sizeof dir, false, why, sizeof why));
  snprintf(want, sizeof want,
           "the control directory %s is too long for a socket path (199 bytes; at most 90): set "
           "FLAGTRACE_CONTROL_DIR to a shorter one",
           lng);
  assert_string_equal(why, want);
  rmdir(tmpl);
  unsetenv("FLAGTRACE_CONTROL_DIR");
}

static void test_output_patterns(void **state) {
  (void)state;
  /* out= is checked in the process too: a client other than flagtrace capture sends anything */
  static const struct {
    const char *text, *why;
  } bad[] = {
      {"t-%n.json", "out= is not an absolute path (the client sends it resolved)"},
      {"/t/x.json", "out= needs %n (the capture number)"},
      {"/t/x-%%n.json", "out= needs %n (the capture number)"},
      {"/t/x-%n-%d.json", "out= has an unknown escape (valid: %p %h %r %n %%)"},
      {"/t/x-%n.json%", "out= has an unknown escape (valid: %p %h %r %n %%)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ft__ctl_req in = {.cmd = FT__CTL_CAPTURE, .duration_ms = 5}, r;
    snprintf(in.out, sizeof in.out, "%s", bad[i].text);
    char line[FT__CTL_MAX_REQUEST], why[256] = "";
    assert_true(ft__ctl_format(&in, line, sizeof line) > 0);
    assert_false(parse(line, &r, why));
    if (strcmp(why, bad[i].why)) fail_msg("'%s': '%s', want '%s'", bad[i].text, why, bad[i].why);
  }
  ft__ctl_req r;
  char why[256];
  /* "/proc/self/fd/%n" is a valid pattern: the process refuses the path it names */
  assert_true(parse("FTCTL/1 capture ms=5 out=2f70726f632f73656c662f66642f256e\n", &r, why));
  assert_string_equal(r.out, "/proc/self/fd/%n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parses_requests),   cmocka_unit_test(test_refuses_malformed),
      cmocka_unit_test(test_format_round_trip), cmocka_unit_test(test_directory_rules),
      cmocka_unit_test(test_output_patterns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
