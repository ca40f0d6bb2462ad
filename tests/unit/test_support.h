/* Helpers shared by the unit tests: JSON validation with yajl, gunzip. */
#ifndef FT_TEST_SUPPORT_H
#define FT_TEST_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_tree.h>

/* Parses text with yajl (strict, UTF-8 validated). Returns the tree (caller frees
 * with yajl_tree_free) or NULL, with the parser's message in err. */
yajl_val ft_test_parse_json(const char *text, size_t len, char *err, size_t errlen);

/* Inflates gzip data; returns malloc'ed NUL-terminated text or NULL. */
char *ft_test_gunzip(const char *data, size_t len, size_t *out_len);

/* Reads a whole file; malloc'ed, NUL-terminated, or NULL. */
char *ft_test_read_file(const char *path, size_t *len);

/* Looks up obj[key] for a yajl object; NULL when absent. */
yajl_val ft_test_get(yajl_val obj, const char *key);

#endif
