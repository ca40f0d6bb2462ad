/* Build tool: renders flagtrace(1) and one flagtrace-CMD(1) per command from the CLI's own
 * --help texts, plus the sections each page keeps beside the code (src/cli/man/PAGE.roff). */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sections a page has, in order; every page has each (a default when nothing says more). */
static const char *const sections[] = {"NAME",        "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT",
                                       "EXIT STATUS", "FILES",    "EXAMPLES",    "NOTES",   "SEE ALSO"};
enum { S_NAME, S_SYNOPSIS, S_DESCRIPTION, S_OPTIONS, S_ENVIRONMENT, S_EXIT, S_FILES, S_EXAMPLES, S_NOTES, S_SEE, S_N };

/* What a page says when neither its --help nor its .roff does: a new command's page is
 * complete from its first build, and says where to look. */
static const char *const defaults[S_N] = {
    [S_ENVIRONMENT] = "Those of\n.BR flagtrace (1).\n",
    [S_EXIT] =
        "0 on success; 1 when the output could not be written; 2 for a usage error or\n"
        "input that cannot be read (one line on stderr says which).\n",
    [S_FILES] = "Only those its arguments name.\n",
    [S_EXAMPLES] = "See the DESCRIPTION.\n",
};

typedef struct {
  char *text;
  size_t len, cap;
} buf;

static void put(buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2;
    b->text = realloc(b->text, b->cap);
    if (!b->text) exit(3);
  }
  memcpy(b->text + b->len, s, n);
  b->len += n;
  b->text[b->len] = 0;
}
static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

static const char *exe, *version, *date, *extras_dir, *out_dir;

static void die(const char *what, const char *detail) {
  fprintf(stderr, "gen_man: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

/* `EXE [CMD] --help`'s standard output. */
static char *help_of(const char *cmd) {
  char line[1024];
  snprintf(line, sizeof line, "'%s' %s --help", exe, cmd ? cmd : "");
  FILE *p = popen(line, "r");
  if (!p) die("cannot run", line);
  buf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, p)) > 0) put(&b, chunk, n);
  if (pclose(p) != 0 || !b.len) die("failed", line);
  return b.text;
}

/* Roff for a verbatim block: backslash and minus escaped, a leading . or ' made literal. */
static void roff_text(buf *out, const char *s, size_t n) {
  int bol = 1;
  for (size_t i = 0; i < n; i++) {
    if (bol && (s[i] == '.' || s[i] == '\'')) puts_(out, "\\&");
    if (s[i] == '\\') puts_(out, "\\e");
    else if (s[i] == '-') puts_(out, "\\-");
    else put(out, s + i, 1);
    bol = s[i] == '\n';
  }
}

/* The section a --help paragraph belongs to, and how much of its start (its heading)
 * the page leaves out because the section's title says it. */
static int classify(const char *p, size_t *strip) {
  static const struct {
    const char *head;
    int section;
  } heads[] = {{"usage: ", S_SYNOPSIS},    {"options:\n", S_OPTIONS}, {"environment:\n", S_ENVIRONMENT},
               {"exit status: ", S_EXIT},  {"example: ", S_EXAMPLES}, {"example:\n", S_EXAMPLES},
               {"examples:\n", S_EXAMPLES}};
  for (size_t i = 0; i < sizeof heads / sizeof *heads; i++)
    if (!strncmp(p, heads[i].head, strlen(heads[i].head))) {
      *strip = strlen(heads[i].head);
      return heads[i].section;
    }
  *strip = 0;
  return S_DESCRIPTION;
}

/* PAGE.roff's text under each ".SH TITLE" line, by section. */
static void read_extras(const char *page, buf extra[S_N]) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.roff", extras_dir, page);
  FILE *f = fopen(path, "r");
  if (!f) return; /* a page with nothing to add */
  char line[4096];
  int cur = -1;
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, ".\\\"", 3) && cur < 0) continue; /* the file's own comment */
    if (!strncmp(line, ".SH ", 4)) {
      char *t = line + 4;
      t[strcspn(t, "\n")] = 0;
      if (*t == '"') t++, t[strcspn(t, "\"")] = 0;
      cur = -1;
      for (int s = 0; s < S_N; s++)
        if (!strcmp(t, sections[s])) cur = s;
      if (cur < 0 || cur == S_NAME || cur == S_SYNOPSIS || cur == S_SEE) die("a section the page cannot add", line);
      continue;
    }
    if (cur < 0) die("text before the first .SH in", path);
    puts_(&extra[cur], line);
  }
  fclose(f);
}

/* One page: help is its --help text; see_also the other pages. */
static void page(const char *name, const char *cmd, const char *summary, const char *see_also) {
  char *help = help_of(cmd);
  buf body[S_N] = {{0}}, extra[S_N] = {{0}};
  read_extras(name, extra);
  /* each --help paragraph, verbatim, in the section its heading names; ".\" help N K"
   * before it says it is paragraph N with K characters of heading left out */
  int n = 0;
  for (char *p = help; *p; n++) {
    char *end = strstr(p, "\n\n");
    size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
    size_t strip;
    int s = classify(p, &strip);
    char mark[64];
    snprintf(mark, sizeof mark, ".\\\" help %d %zu\n.nf\n", n, strip);
    if (body[s].len) puts_(&body[s], ".PP\n"); /* a paragraph's blank line */
    puts_(&body[s], mark);
    roff_text(&body[s], p + strip, len - strip);
    puts_(&body[s], ".fi\n");
    p = end ? end + 2 : p + len;
  }
  char upper[128], path[4096];
  size_t i = 0;
  for (; name[i] && i + 1 < sizeof upper; i++)
    upper[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
  upper[i] = 0;
  buf out = {0};
  puts_(&out, ".\\\" ");
  puts_(&out, name);
  puts_(&out, "(1), generated by src/cli/man/gen_man.c from `flagtrace");
  if (cmd) puts_(&out, " "), puts_(&out, cmd);
  puts_(&out, " --help` and src/cli/man/");
  puts_(&out, name);
  puts_(&out, ".roff; do not edit\n");
  char th[512];
  snprintf(th, sizeof th, ".TH %s 1 \"%s\" \"flagtrace %s\" \"User Commands\"\n", upper, date, version);
  puts_(&out, th);
  puts_(&out, ".nh\n.ad l\n"); /* no hyphenation, ragged right: names and options stay whole */
  puts_(&out, ".SH NAME\n");
  puts_(&out, name);
  puts_(&out, " \\- ");
  roff_text(&out, summary, strlen(summary));
  puts_(&out, "\n");
  for (int s = S_SYNOPSIS; s < S_N; s++) {
    if (s == S_SEE) {
      puts_(&out, ".SH \"SEE ALSO\"\n");
      puts_(&out, see_also);
      continue;
    }
    if (!body[s].len && !extra[s].len && !defaults[s]) continue; /* DESCRIPTION always has --help's */
    snprintf(th, sizeof th, strchr(sections[s], ' ') ? ".SH \"%s\"\n" : ".SH %s\n", sections[s]);
    puts_(&out, th);
    if (body[s].len) puts_(&out, body[s].text);
    if (body[s].len && extra[s].len) puts_(&out, ".PP\n");
    if (extra[s].len) puts_(&out, extra[s].text);
    if (!body[s].len && !extra[s].len) puts_(&out, defaults[s]);
  }
  snprintf(path, sizeof path, "%s/%s.1", out_dir, name);
  FILE *f = fopen(path, "w");
  if (!f || fwrite(out.text, 1, out.len, f) != out.len || fclose(f)) die("cannot write", path);
  for (int s = 0; s < S_N; s++) free(body[s].text), free(extra[s].text);
  free(out.text);
  free(help);
}

int main(int argc, char **argv) {
  if (argc != 6) die("usage: gen_man FLAGTRACE_EXE VERSION DATE EXTRAS_DIR OUT_DIR", NULL);
  exe = argv[1], version = argv[2], date = argv[3], extras_dir = argv[4], out_dir = argv[5];
  char *main_help = help_of(NULL);
  /* the commands: the main --help's "commands:" lines, "  NAME ARGS...   SUMMARY" */
  char *block = strstr(main_help, "\ncommands:\n");
  if (!block) die("no commands: section in flagtrace --help", NULL);
  char names[16][32], summaries[16][256];
  int n = 0;
  for (char *l = block + 11; n < 16 && !strncmp(l, "  ", 2) && l[2] != ' '; n++) {
    char *eol = strchr(l, '\n'), *gap = NULL;
    size_t w = strcspn(l + 2, " \n");
    if (!eol || w >= sizeof names[n]) die("a commands: line that is not '  NAME ARGS   SUMMARY'", l);
    for (char *q = l + 2; q + 1 < eol; q++)
      if (q[0] == ' ' && q[1] == ' ') gap = q; /* the last run of spaces: the summary follows */
    if (!gap) die("a commands: line without a summary", l);
    while (*gap == ' ') gap++;
    memcpy(names[n], l + 2, w), names[n][w] = 0;
    snprintf(summaries[n], sizeof summaries[n], "%.*s", (int)(eol - gap), gap);
    l = eol + 1;
  }
  if (!n) die("no commands listed in flagtrace --help", NULL);
  buf see = {0};
  for (int i = 0; i < n; i++) {
    puts_(&see, i ? ",\n" : "");
    puts_(&see, ".BR flagtrace\\-");
    puts_(&see, names[i]);
    puts_(&see, " (1)");
  }
  puts_(&see, "\n.PP\nhttps://ui.perfetto.dev and chrome://tracing open the traces.\n");
  page("flagtrace", NULL, "record and summarize GPU activity traces", see.text);
  for (int i = 0; i < n; i++) {
    buf others = {0};
    puts_(&others, ".BR flagtrace (1)");
    for (int j = 0; j < n; j++)
      if (j != i) puts_(&others, ",\n.BR flagtrace\\-"), puts_(&others, names[j]), puts_(&others, " (1)");
    puts_(&others, "\n");
    char name[64];
    snprintf(name, sizeof name, "flagtrace-%s", names[i]);
    page(name, names[i], summaries[i], others.text);
    free(others.text);
  }
  free(see.text);
  free(main_help);
  return 0;
}
