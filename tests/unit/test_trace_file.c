/* Unit tests: the output-file policy (out_file.c: special files never replaced, modes, sets) and visible escapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
    ft__ofile tf;
    char err[256] = "";
    size_t n = round == 1 ? big : 5; /* a large one replaced by a small one, and back */
    memset(fill, 'b' + round, n);
    assert_int_equal(ft__ofile_open(&tf, path, "", err, sizeof err), FT_OK);
    assert_int_equal(ft__ofile_write(&tf, fill, n), 0);
    assert_int_equal(ft__ofile_commit(&tf, err, sizeof err), FT_OK);
    ft__ofile_discard(&tf);
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

static void write_file(const char *path, const char *text, mode_t mode) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  assert_int_equal(chmod(path, mode), 0);
}

static void assert_file(const char *path, const char *text) {
  size_t len;
  char *got = ft_test_read_file(path, &len);
  assert_non_null(got);
  assert_int_equal(len, strlen(text));
  assert_memory_equal(got, text, len);
  free(got);
}

static void put(ft__ofile *f, const char *path, const char *text) {
  char err[256] = "";
  if (ft__ofile_open(f, path, "", err, sizeof err)) fail_msg("open %s: %s", path, err);
  assert_int_equal(ft__ofile_write(f, text, strlen(text)), 0);
}

/* A new file gets 0666 less the umask; a replaced one keeps its mode. */
static void test_modes(void **state) {
  (void)state;
  mode_t old = umask(027);
  ft__ofile f;
  char err[256];
  put(&f, in_dir("new"), "n");
  assert_int_equal(ft__ofile_commit(&f, err, sizeof err), FT_OK);
  ft__ofile_discard(&f);
  struct stat st;
  assert_int_equal(stat(in_dir("new"), &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  write_file(in_dir("kept"), "old", 0604); /* bits the umask would clear */
  put(&f, in_dir("kept"), "new");
  assert_int_equal(ft__ofile_commit(&f, err, sizeof err), FT_OK);
  ft__ofile_discard(&f);
  assert_int_equal(stat(in_dir("kept"), &st), 0);
  assert_int_equal(st.st_mode & 0777, 0604);
  assert_file(in_dir("kept"), "new");
  umask(old);
  assert_int_equal(entries(), 2);
  unlink(in_dir("new"));
  unlink(in_dir("kept"));
}

/* A set is renamed only when every file can be: one target that turned into a
 * directory while the set was written leaves every file as it was. */
static void test_set_all_or_nothing(void **state) {
  (void)state;
  ft__ofile a, b, c;
  ft__ofile *set[] = {&a, &b, &c};
  char err[256] = "";
  write_file(in_dir("c.csv"), "old", 0644);
  put(&a, in_dir("a.csv"), "A");
  put(&b, in_dir("b.csv"), "B");
  put(&c, in_dir("c.csv"), "C");
  assert_int_equal(mkdir(in_dir("b.csv"), 0700), 0);
  assert_int_equal(ft__ofile_commit_set(set, 3, err, sizeof err), FT_EIO);
  assert_non_null(strstr(err, "b.csv': it stopped being a regular file"));
  for (int i = 0; i < 3; i++) ft__ofile_discard(set[i]);
  assert_int_equal(access(in_dir("a.csv"), F_OK), -1);
  assert_file(in_dir("c.csv"), "old");
  assert_int_equal(entries(), 2); /* b's directory and c: no temporary file */
  rmdir(in_dir("b.csv"));
  put(&a, in_dir("a.csv"), "A");
  put(&b, in_dir("b.csv"), "B");
  put(&c, in_dir("c.csv"), "C");
  assert_int_equal(ft__ofile_commit_set(set, 3, err, sizeof err), FT_OK);
  for (int i = 0; i < 3; i++) ft__ofile_discard(set[i]);
  assert_file(in_dir("a.csv"), "A");
  assert_file(in_dir("b.csv"), "B");
  assert_file(in_dir("c.csv"), "C");
  assert_int_equal(entries(), 3);
  for (const char *const *n = (const char *const[]){"a.csv", "b.csv", "c.csv", NULL}; *n; n++) unlink(in_dir(*n));
}

/* /dev/fd/N and /proc/self/fd/N are the descriptor itself: written in place, at
 * its offset, nothing created or renamed. */
static void test_descriptor_names(void **state) {
  (void)state;
  int p[2];
  assert_int_equal(pipe(p), 0);
  char path[64], err[256];
  for (int k = 0; k < 2; k++) {
    snprintf(path, sizeof path, k ? "/proc/self/fd/%d" : "/dev/fd/%d", p[1]);
    bool replaces = true;
    assert_int_equal(ft__ofile_check(path, "", &replaces, err, sizeof err), FT_OK);
    assert_false(replaces);
    assert_true(ft__ofile_is_stream(path));
    ft__ofile f;
    put(&f, path, k ? "two" : "one");
    assert_int_equal(ft__ofile_commit(&f, err, sizeof err), FT_OK);
    ft__ofile_discard(&f);
  }
  close(p[1]); /* ours was a duplicate: this is the last writer */
  char buf[16] = "";
  assert_int_equal(read(p[0], buf, sizeof buf - 1), 6);
  assert_string_equal(buf, "onetwo");
  close(p[0]);
  snprintf(path, sizeof path, "/dev/fd/%d", p[0]); /* closed now */
  bool replaces;
  assert_int_equal(ft__ofile_check(path, "", &replaces, err, sizeof err), FT_EIO);
  assert_non_null(strstr(err, "Bad file descriptor"));
  assert_int_equal(entries(), 0);
}

/* What a write would do, told without writing: replaces only for a regular file. */
static void test_check(void **state) {
  (void)state;
  char err[256];
  bool replaces = true;
  assert_int_equal(ft__ofile_check(in_dir("absent"), "", &replaces, err, sizeof err), FT_OK);
  assert_false(replaces);
  write_file(in_dir("file"), "x", 0644);
  assert_int_equal(ft__ofile_check(in_dir("file"), "", &replaces, err, sizeof err), FT_OK);
  assert_true(replaces);
  assert_int_equal(symlink("file", in_dir("link")), 0);
  assert_int_equal(ft__ofile_check(in_dir("link"), "", &replaces, err, sizeof err), FT_OK);
  assert_true(replaces);
  assert_int_equal(ft__ofile_check("/dev/null", "", &replaces, err, sizeof err), FT_OK);
  assert_false(replaces);
  assert_false(ft__ofile_is_stream(in_dir("file")));
  assert_true(ft__ofile_is_stream("/dev/null"));
  assert_int_equal(symlink("gone", in_dir("dangling")), 0);
  assert_int_equal(ft__ofile_check(in_dir("dangling"), "trace file ", &replaces, err, sizeof err), FT_EIO);
  assert_non_null(strstr(err, "cannot write trace file '"));
  assert_non_null(strstr(err, "dangling': it is a symbolic link to a missing file"));
  assert_int_equal(ft__ofile_check(dir, "", &replaces, err, sizeof err), FT_EIO);
  assert_non_null(strstr(err, "': a directory"));
  assert_int_equal(ft__ofile_check("", "", &replaces, err, sizeof err), FT_EIO);
  assert_int_equal(ft__ofile_check(in_dir("no/such/dir"), "", &replaces, err, sizeof err), FT_EIO);
  assert_non_null(strstr(err, "cannot create '"));
  assert_non_null(strstr(err, "No such file or directory"));
  /* a name with a newline and an ESC: the message stays one visible line */
  assert_int_equal(ft__ofile_check(in_dir("a\nb\x1b[2J/x"), "", &replaces, err, sizeof err), FT_EIO);
  assert_non_null(strstr(err, "a\\nb\\x1b[2J/x'"));
  assert_false(ft__visible_changes(err));
  for (const char *const *n = (const char *const[]){"dangling", "link", "file", NULL}; *n; n++) unlink(in_dir(*n));
  assert_int_equal(entries(), 0);
}

static void test_visible(void **state) {
  (void)state;
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"plain name<float>(int*)", "plain name<float>(int*)"},
      {"k\x1b[2J\x1b]0;pwn\x07", "k\\x1b[2J\\x1b]0;pwn\\x07"},
      {"a\nb\rc\td", "a\\nb\\rc\\td"},
      {"del\x7f", "del\\x7f"},
      {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"}, /* UTF-8 kept */
      {"csi\xc2\x9b"
       "2J nel\xc2\x85",
       "csi\\u009b2J nel\\u0085"},                                             /* C1 controls */
      {"\xff\xfe", "\\xff\\xfe"},                                              /* not UTF-8 */
      {"cut\xe2\x82", "cut\\xe2\\x82"},                                        /* a cut character */
      {"over\xc0\xaf long\xe0\x80\xaf", "over\\xc0\\xaf long\\xe0\\x80\\xaf"}, /* overlong forms */
      {"sur\xed\xa0\x80", "sur\\xed\\xa0\\x80"},                               /* a surrogate */
      {"big\xf4\x90\x80\x80", "big\\xf4\\x90\\x80\\x80"},                      /* past U+10FFFF */
      {"back\\slash", "back\\slash"},
  };
  char buf[128];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n = ft__visible(buf, sizeof buf, cases[i].in);
    assert_string_equal(buf, cases[i].out);
    assert_int_equal(n, strlen(cases[i].out));
    assert_int_equal(ft__visible_changes(cases[i].in), strcmp(cases[i].in, cases[i].out) != 0);
  }
  /* a short buffer: the length still told, the text cut between escapes, never inside one */
  assert_int_equal(ft__visible(buf, 6,
                               "ab\x1b"
                               "cd"),
                   8);
  assert_string_equal(buf, "ab");
  assert_int_equal(ft__visible(buf, 7,
                               "ab\x1b"
                               "cd"),
                   8);
  assert_string_equal(buf, "ab\\x1b");
  assert_int_equal(ft__visible(buf, 4, "\xc3\xa9\xc3\xa9"), 4);
  assert_string_equal(buf, "\xc3\xa9"); /* a character kept whole */
  assert_int_equal(ft__visible(NULL, 0, "a\n"), 3);
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
      cmocka_unit_test(test_modes),
      cmocka_unit_test(test_set_all_or_nothing),
      cmocka_unit_test(test_descriptor_names),
      cmocka_unit_test(test_check),
      cmocka_unit_test(test_visible),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(dir);
  return rc;
}
