/* Unit tests: writing a trace never replaces a special file (FIFO, symlink, directory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "test_support.h"

static char dir[64];

static ft_session *stopped_session(void) {
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  assert_int_equal(ft_range_push(s, "work", NULL), FT_OK);
  assert_int_equal(ft_range_pop(s), FT_OK);
  assert_int_equal(ft_session_stop(s), FT_OK);
  return s;
}

static char *in_dir(const char *name) {
  static char path[4][256];
  static int k;
  char *p = path[k++ % 4];
  snprintf(p, 256, "%s/%s", dir, name);
  return p;
}

/* Files in the directory: no temporary file may be left behind. */
static int entries(void) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void assert_trace(const char *text, size_t len) {
  char err[256];
  yajl_val doc = ft_test_parse_json(text, len, err, sizeof err);
  if (!doc) fail_msg("not a trace: %s", err);
  assert_non_null(ft_test_find_x(doc, "user_annotation", "work", 0));
  yajl_tree_free(doc);
}

/* A large file replaced (its last reference closed on a helper thread): the new
 * bytes, nothing else left in the directory, and again, repeatedly. */
static void test_large_file_replaced(void **state) {
  (void)state;
  size_t big = 6u << 20;
  char *fill = malloc(big);
  assert_non_null(fill);
  memset(fill, 'a', big);
  const char *path = in_dir("big.json");
  FILE *f = fopen(path, "w");
  assert_int_equal(fwrite(fill, 1, big, f), big);
  fclose(f);
  for (int round = 0; round < 3; round++) {
    ft__trace_file tf;
    char err[256] = "";
    size_t n = round == 1 ? big : 5; /* a large one replaced by a small one, and back */
    memset(fill, 'b' + round, n);
    assert_int_equal(ft__trace_file_open(&tf, path, err, sizeof err), FT_OK);
    assert_int_equal(ft__trace_file_write(&tf, fill, n), 0);
    assert_int_equal(ft__trace_file_commit(&tf, path, err, sizeof err), FT_OK);
    ft__trace_file_discard(&tf);
    size_t len;
    char *got = ft_test_read_file(path, &len);
    assert_non_null(got);
    assert_int_equal(len, n);
    assert_memory_equal(got, fill, n);
    free(got);
    assert_int_equal(entries(), 1);
  }
  unlink(path);
  free(fill);
}

static void test_symlink_is_followed_and_kept(void **state) {
  (void)state;
  ft_session *s = stopped_session();
  FILE *f = fopen(in_dir("real.json"), "w");
  fputs("old", f);
  fclose(f);
  chmod(in_dir("real.json"), 0600);
  assert_int_equal(symlink("real.json", in_dir("link.json")), 0);
  assert_int_equal(ft_session_write(s, in_dir("link.json")), FT_OK);
  struct stat st;
  assert_int_equal(lstat(in_dir("link.json"), &st), 0);
  assert_true(S_ISLNK(st.st_mode)); /* the link stays a link ... */
  char target[64] = "";
  assert_int_equal(readlink(in_dir("link.json"), target, sizeof target - 1), 9);
  assert_string_equal(target, "real.json");
  size_t len;
  char *text = ft_test_read_file(in_dir("real.json"), &len); /* ... and its target got the trace */
  assert_trace(text, len);
  free(text);
  assert_int_equal(stat(in_dir("real.json"), &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600); /* the replaced file keeps its permissions */
  assert_int_equal(entries(), 2);
  /* a dangling link: refused in one line, left as it is, nothing created */
  assert_int_equal(symlink("missing.json", in_dir("dangling.json")), 0);
  assert_int_equal(ft_session_write(s, in_dir("dangling.json")), FT_EIO);
  assert_non_null(strstr(ft_session_last_error(s), "symbolic link to a missing file"));
  assert_null(strchr(ft_session_last_error(s), '\n'));
  assert_int_equal(lstat(in_dir("dangling.json"), &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  assert_int_equal(entries(), 3);
  unlink(in_dir("dangling.json"));
  unlink(in_dir("link.json"));
  unlink(in_dir("real.json"));
  ft_session_destroy(s);
}

struct reader {
  const char *path;
  char *text;
  size_t len;
};

static void *read_fifo(void *arg) {
  struct reader *r = arg;
  FILE *f = fopen(r->path, "r"); /* blocks until the writer opens it */
  size_t cap = 1 << 16;
  r->text = malloc(cap);
  for (size_t n; f && (n = fread(r->text + r->len, 1, cap - r->len, f)) > 0;) {
    r->len += n;
    if (r->len == cap) r->text = realloc(r->text, cap *= 2);
  }
  if (f) fclose(f);
  return NULL;
}

static void test_fifo_is_written_through(void **state) {
  (void)state;
  ft_session *s = stopped_session();
  for (int via_link = 0; via_link < 2; via_link++) {
    const char *fifo = in_dir("pipe.json");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *path = fifo;
    if (via_link) {
      assert_int_equal(symlink("pipe.json", in_dir("pipe-link.json")), 0);
      path = in_dir("pipe-link.json");
    }
    struct reader r = {.path = fifo};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, read_fifo, &r), 0);
    /* the write fails (no reader yet) until the thread has opened its end */
    ft_status st = FT_EIO;
    for (int i = 0; i < 2000 && st == FT_EIO; i++) {
      st = ft_session_write(s, path);
      if (st == FT_EIO) {
        assert_non_null(strstr(ft_session_last_error(s), "a FIFO with no reader"));
        usleep(1000);
      }
    }
    assert_int_equal(st, FT_OK);
    pthread_join(t, NULL);
    assert_non_null(r.text);
    assert_trace(r.text, r.len);
    free(r.text);
    struct stat sb;
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode)); /* still the FIFO, no temporary file beside it */
    assert_int_equal(entries(), 1 + via_link);
    if (via_link) {
      assert_int_equal(lstat(path, &sb), 0);
      assert_true(S_ISLNK(sb.st_mode));
      unlink(path);
    }
    unlink(fifo);
  }
  ft_session_destroy(s);
}

static void *open_and_close(void *arg) {
  FILE *f = fopen(arg, "r");
  if (f) fclose(f);
  return NULL;
}

/* A reader that goes away: FT_EIO with "Broken pipe", never SIGPIPE. */
static void test_fifo_reader_gone(void **state) {
  (void)state;
  ft_session *s;
  assert_int_equal(ft_session_create(&s, NULL), FT_OK);
  assert_int_equal(ft_session_start(s), FT_OK);
  for (int i = 0; i < 5000; i++) { /* far more than a pipe holds */
    assert_int_equal(ft_range_push(s, "a range name long enough to fill the pipe quickly", NULL), FT_OK);
    assert_int_equal(ft_range_pop(s), FT_OK);
  }
  assert_int_equal(ft_session_stop(s), FT_OK);
  const char *fifo = in_dir("gone.json");
  assert_int_equal(mkfifo(fifo, 0600), 0);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, open_and_close, (void *)fifo), 0);
  ft_status st = FT_EIO;
  for (int i = 0; i < 2000 && st == FT_EIO && strstr(ft_session_last_error(s), "Broken pipe") == NULL; i++) {
    st = ft_session_write(s, fifo);
    if (st == FT_EIO && strstr(ft_session_last_error(s), "no reader")) usleep(1000);
  }
  pthread_join(t, NULL);
  assert_int_equal(st, FT_EIO);
  assert_non_null(strstr(ft_session_last_error(s), "Broken pipe"));
  unlink(fifo);
  ft_session_destroy(s);
}

static void test_directory_is_refused(void **state) {
  (void)state;
  ft_session *s = stopped_session();
  assert_int_equal(mkdir(in_dir("sub"), 0700), 0);
  assert_int_equal(ft_session_write(s, in_dir("sub")), FT_EIO);
  assert_non_null(strstr(ft_session_last_error(s), "': a directory"));
  struct stat sb;
  assert_int_equal(lstat(in_dir("sub"), &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  assert_int_equal(entries(), 1);
  rmdir(in_dir("sub"));
  ft_session_destroy(s);
}

int main(void) {
  setenv("FLAGOS_TRACER_LIBRARY", "/nonexistent/libcupti.so", 1);
  snprintf(dir, sizeof dir, "/tmp/ft_file_XXXXXX");
  if (!mkdtemp(dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_large_file_replaced),
      cmocka_unit_test(test_symlink_is_followed_and_kept),
      cmocka_unit_test(test_fifo_is_written_through),
      cmocka_unit_test(test_fifo_reader_gone),
      cmocka_unit_test(test_directory_is_refused),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(dir);
  return rc;
}
