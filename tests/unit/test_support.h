/* Helpers shared by the C tests: JSON validation with yajl, gunzip, trace rendering and lookups. */
#ifndef FT_TEST_SUPPORT_H
#define FT_TEST_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

/* Parses text with yajl (strict, UTF-8 validated). Returns the tree (caller frees
 * with yajl_tree_free) or NULL, with the parser's message in err. */
yajl_val ft_test_parse_json(const char *text, size_t len, char *err, size_t errlen);

/* Inflates gzip data; returns malloc'ed NUL-terminated text or NULL. */
char *ft_test_gunzip(const char *data, size_t len, size_t *out_len);

/* Reads a whole file; malloc'ed, NUL-terminated, or NULL. */
char *ft_test_read_file(const char *path, size_t *len);

/* xorshift64: a random number below n from *state (tests draw repeatable sequences) */
uint32_t ft_test_rand(uint64_t *state, uint32_t n);

/* Looks up obj[key] for a yajl object; NULL when absent. */
yajl_val ft_test_get(yajl_val obj, const char *key);

/* obj[key] as a string, "" when absent or not a string. */
const char *ft_test_str(yajl_val obj, const char *key);

/* The n-th complete event ("ph": "X") of category cat, and of that name unless
 * name is NULL; NULL when there is none. */
yajl_val ft_test_find_x(yajl_val doc, const char *cat, const char *name, int nth);

/* The n-th event of phase ph ("i", "C", ...) named name; NULL when there is none. */
yajl_val ft_test_find_ph(yajl_val doc, const char *ph, const char *name, int nth);

/* What one [memory] instant's args must be, key for key (docs/memory.md's format):
 * has_ext / has_stream say whether "External id" / "stream" are present. */
typedef struct ft_test_mem_want {
  long long device_type, device, addr, bytes, allocated, reserved, correlation;
  bool has_ext, has_stream;
  long long ext, stream;
  const char *kind, *op;
} ft_test_mem_want;
/* Fails unless e's args hold exactly want's keys and values (no pool here). */
void ft_test_memory_args(yajl_val e, const ft_test_mem_want *want);

struct ft_session;
/* Writes the stopped session into memory and parses it; fails the test on
 * invalid JSON. Free with yajl_tree_free. */
yajl_val ft_test_render(struct ft_session *s);

/* A started session whose device tracer is usable (the fake library named by
 * FLAGOS_TRACER_LIBRARY); fails the test with the reason otherwise. */
struct ft_session *ft_test_started(void);

/* Sleeps 3 ms: device records end microseconds after their launch, and the
 * capture window must close after them. */
void ft_test_settle(void);

/* The cross-backend contract, the C twin of tests/integration/test_profiler_contract.py,
 * run on a trace each vendor's fake produced. Rows: */
enum {
  FT_ROW_KERNEL,
  FT_ROW_RUNTIME,
  FT_ROW_FLOW,
  FT_ROW_LINKAGE,
  FT_ROW_METADATA,
  FT_ROW_MEMCPY,
  FT_ROW_MEMSET,
  FT_ROW_CBID,
  FT_ROW_COUNT
};
typedef struct ft_contract {
  const char *vendor;
  /* per row: NULL when asserted, else why this vendor's records cannot carry it */
  const char *why_not[FT_ROW_COUNT];
  const char *runtime_cat; /* e.g. "cuda_runtime" */
  const char *launch_name; /* a runtime row of this name launched the kernel */
  long long op;            /* the External id every device event carries */
  long long memcpy_bytes;  /* a gpu_memcpy of exactly these bytes */
  long long memset_bytes;  /* a gpu_memset of exactly these bytes */
} ft_contract;
/* Asserts every row not excused, prints each excuse, and fails when fewer than
 * four rows are asserted (a gate must never make the contract assert nothing). */
void ft_test_contract(yajl_val doc, const ft_contract *c);

/* Finishes a plain and a gzip writer fed the same writes, asserts the gzip one
 * inflates to the plain one's bytes, and frees both. */
struct ft__out;
void ft_test_gzip_matches_plain(struct ft__out *plain, struct ft__out *gz);

#endif
