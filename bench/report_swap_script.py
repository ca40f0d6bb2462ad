"""A report page with its script replaced by a source tree's (CSP hash updated, data untouched): paired
before/after runs of bench/report_view.py on byte-identical data (FT_BENCH_PAGES=A, then B).
python3 bench/report_swap_script.py SRC_DIR(src/cli/report) IN.html OUT.html"""
import base64, hashlib, re, sys
src, inp, out = sys.argv[1:]
tpl = open(src + "/page.html").read()
for name in re.findall(r"//@include ([A-Za-z0-9_.]+)", tpl):
    tpl = tpl.replace("//@include " + name + "\n", open(src + "/" + name).read())
a = tpl.index("<script>") + len("<script>"); body = tpl[a:tpl.index("</script>", a)]
page = open(inp).read()
a = page.rindex("<script>") + len("<script>"); z = page.index("</script>", a)
old = page[a:z]
h = lambda s: base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()
page = page[:a] + body + page[z:]
assert page.count("'sha256-" + h(old) + "'") == 1, "old hash not found"
page = page.replace("'sha256-" + h(old) + "'", "'sha256-" + h(body) + "'")
open(out, "w").write(page)
