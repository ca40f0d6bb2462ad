"""bench/run.py's method without a GPU: the bootstrap intervals, the three verdicts,
paired ratios, the lockstep turn order and its process protocol, and the README
table rewrite.
Usage: test_bench_method.py BENCH_DIR"""
import inspect
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import run  # noqa: E402


class Method(unittest.TestCase):
    def test_pair_ratio_is_the_median_of_per_pair_ratios(self):
        # medians of each side would give 2.0 / 1.0 = 2.0; per pair: 1.5, 3.0, 1.2 -> 1.5
        self.assertAlmostEqual(run.pair_ratio([(2.0, 3.0), (1.0, 3.0), (5.0, 6.0)]), 1.5)

    def test_interval_brackets_the_estimate_and_is_reproducible(self):
        pairs = [(1.0, 1.0 + 0.01 * ((i * 7) % 5 - 2)) for i in range(15)]
        est, lo, hi = run.bootstrap(pairs, run.pair_ratio)
        self.assertTrue(lo <= est <= hi)
        self.assertLess(lo, hi)
        self.assertEqual(run.bootstrap(pairs, run.pair_ratio), (est, lo, hi))

    def test_constant_pairs_give_a_point(self):
        self.assertEqual(run.bootstrap([(2.0, 1.0)] * 15, run.pair_ratio), (0.5, 0.5, 0.5))

    def test_independent_samples_are_resampled_apart(self):
        est, lo, hi = run.bootstrap(([1.0, 1.0, 1.0], [2.0, 3.0, 4.0]), lambda d: d[1][0] / d[0][0])
        self.assertEqual((lo, hi), (2.0, 4.0))

    def test_verdicts(self):
        self.assertEqual(run.judge((0.99, 0.98, 1.00), 1.00, True, False), "pass")
        self.assertEqual(run.judge((1.00, 0.99, 1.02), 1.00, True, False), "within noise")
        self.assertEqual(run.judge((1.05, 1.01, 1.09), 1.00, True, False), "MISS")
        self.assertEqual(run.judge((12.0, 10.0, 14.0), 10, False, False), "pass")
        self.assertEqual(run.judge((10.5, 9.0, 12.0), 10, False, False), "within noise")
        self.assertEqual(run.judge((8.0, 7.0, 9.9), 10, False, False), "MISS")
        self.assertEqual(run.judge((8.0, 7.0, 9.9), 10, False, True), "(quick mode, not judged)")
        self.assertEqual(run.judge((1.03, 1.02, 1.04), None, True, False), "not judged")

    def test_turn_order_puts_each_side_first_as_often(self):
        self.assertEqual([run.turn_order("ab", r) for r in range(4)],
                         [["a", "b"], ["b", "a"], ["b", "a"], ["a", "b"]])
        firsts = [run.turn_order("abcde", r)[0] for r in range(20)]
        self.assertEqual(sorted(firsts.count(x) for x in "abcde"), [4] * 5)
        self.assertTrue(all(sorted(run.turn_order("abcde", r)) == list("abcde") for r in range(20)))

    def test_flanked_order_puts_the_reference_beside_every_turn(self):
        self.assertEqual(run.flanked_order(["ref", "a", "b"], "ref", 0), ["ref", "a", "ref", "b", "ref"])
        self.assertEqual(run.flanked_order(["ref", "a", "b"], "ref", 1), ["ref", "b", "ref", "a", "ref"])
        for r in range(12):
            order = run.flanked_order(["ref", "a", "b", "c", "d"], "ref", r)
            self.assertEqual(order[::2], ["ref"] * 5)
            self.assertEqual(sorted(order[1::2]), list("abcd"))

    def test_pair_order_keeps_each_pair_together(self):
        for r in range(8):
            order = run.pair_order(3, r)
            self.assertEqual(sorted(order), [(i, s) for i in range(3) for s in ("base", "ft")])
            self.assertTrue(all(order[k][0] == order[k + 1][0] for k in range(0, 6, 2)))
        # no side of a pair always first
        self.assertEqual(sorted(run.pair_order(1, r)[0][1] for r in range(4)), ["base", "base", "ft", "ft"])

    def test_group_bootstrap_counts_a_group_offset(self):
        # two groups at 1.00 and one at 1.30: resampling groups first lets the odd group
        # decide the median in a quarter of the draws; resampling the 30 rounds as one
        # pool almost never does, and would hide the offset
        groups = [[(1.0, 1.0)] * 10, [(1.0, 1.0)] * 10, [(1.0, 1.3)] * 10]
        est, lo, hi = run.group_bootstrap(groups, run.pair_ratio)
        self.assertEqual((est, lo), (1.0, 1.0))
        self.assertAlmostEqual(hi, 1.3)
        self.assertLess(run.bootstrap([p for g in groups for p in g], run.pair_ratio)[2], 1.2)
        self.assertEqual(run.group_bootstrap(groups, run.pair_ratio), (est, lo, hi))

    def test_overhead_ratio_counts_a_buffer_paid_every_few_turns(self):
        # the floor pays 0.9 over bare every third turn, 0.45 otherwise: its whole-run
        # overhead is 0.6; ours 0.6 every turn. Equal, so 1.0; a per-round median would
        # have taken the floor at 0.45 and said 1.33
        floor = [1.9 if k % 3 == 1 else 1.45 for k in range(12)]
        group = [(1.0, f, 1.0, 1.6) for f in floor]
        self.assertAlmostEqual(run.overhead_ratio([group, group, group]), 1.0)
        self.assertAlmostEqual(run.overhead_ratio([group, [(1.0, 1.5, 1.0, 1.8)] * 12, group]), 1.0)
        self.assertAlmostEqual(run.overhead_ratio([[(1.0, 1.5, 1.0, 1.8)] * 12] * 2), 1.6)
        with self.assertRaises(ValueError):
            run.overhead_ratio([[(1.0, 0.9, 1.0, 1.5)] * 4])

    def test_first_cpu(self):
        self.assertEqual([run.first_cpu(c) for c in ("2,3,4,5", "2-5", "7", "", None)], [2, 2, 7, None, None])

    def test_readme_block_is_replaced_and_the_rest_kept(self):
        rows = [run.row("P3", "end to end", "0.5 s kineto", "0.45 s", (0.9, 0.85, 0.95), "≤ 1.00", 1.0, True, False)]
        with tempfile.TemporaryDirectory() as d:
            res = os.path.join(d, "r.json")
            with open(res, "w") as f:
                json.dump({"name": "2026-01-01-abc-gpu", "date": "2026-01-01 00:00 UTC", "commit": "abc",
                           "gpu": "NVIDIA H200", "rows": rows}, f)
            readme = os.path.join(d, "README.md")
            with open(readme, "w") as f:
                f.write(f"before\n{run.README_BEGIN}\nold table\n{run.README_END}\nafter\n")
            run.update_readme(res, readme)
            with open(readme) as f:
                text = f.read()
        self.assertTrue(text.startswith("before\n") and text.endswith("\nafter\n"))
        self.assertNotIn("old table", text)
        self.assertIn("| P3 | end to end | 0.5 s kineto | 0.45 s | 0.900 [0.850, 0.950] | ≤ 1.00 | pass |", text)
        self.assertEqual(text.count(run.README_BEGIN), 1)

    def test_the_latest_table_lives_in_docs_performance(self):
        # --readme-from's page: docs/performance.md holds the one block; the README only links to it
        self.assertEqual(os.path.relpath(run.PERFORMANCE_PAGE, run.ROOT), os.path.join("docs", "performance.md"))
        self.assertEqual(inspect.signature(run.update_readme).parameters["readme"].default, run.PERFORMANCE_PAGE)
        with open(run.PERFORMANCE_PAGE) as f:
            text = f.read()
        self.assertEqual((text.count(run.README_BEGIN), text.count(run.README_END)), (1, 1))
        with open(os.path.join(run.ROOT, "README.md")) as f:
            readme = f.read()
        self.assertNotIn(run.README_BEGIN, readme)
        self.assertIn("docs/performance.md", readme)


class ServerProtocol(unittest.TestCase):
    """The real Server class against small Python processes."""

    def test_ready_ask_close(self):
        sv = run.Server([sys.executable, "-c", "import sys\nprint('ready', flush=True)\n"
                         "for l in sys.stdin: print(l.strip() * 2, flush=True)"])
        self.assertEqual(sv.ready(), "ready")
        self.assertEqual([sv.ask("go"), sv.ask("ab")], ["gogo", "abab"])
        self.assertEqual(sv.close(), 0)

    def test_a_side_that_ends_is_an_error_not_a_hang(self):
        sv = run.Server([sys.executable, "-c", "print('ready', flush=True)"], timeout=20)
        self.addCleanup(sv.close)
        self.assertEqual(sv.ready(), "ready")
        with self.assertRaisesRegex(RuntimeError, "exit 0 before answering"):
            sv.ask("go")

    def test_a_silent_side_times_out(self):
        sv = run.Server([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
        self.addCleanup(sv.close)
        with self.assertRaisesRegex(RuntimeError, "no answer in 0.5 s"):
            sv.ready()


class FakeServer:
    """Stands in for launch_loop serve and torch_bench.py serve."""

    # what each torch process's start gives it (layout, placement), by start
    OFFSETS = (1.00, 1.06, 0.95, 1.03, 0.97, 1.04, 1.01)
    DRIFT = 0.002  # the host's slowing, per turn of any launch loop (a shared clock)
    turns = 0
    clock = 0  # ends of input and exits, in order

    def __init__(self, log, cmd, env=None):
        self.cmd, self.env, self.asked, self.closed, self.ended_at = list(cmd), dict(env or {}), [], False, None
        self.pending, self.sent_at, self.answered_at = None, [], []
        self.torch = any(c.endswith("torch_bench.py") for c in cmd)
        self.side = cmd[cmd.index("serve") + 1] if self.torch else None
        self.offset = self.OFFSETS[len(log) % len(self.OFFSETS)]
        self.pid = 4000 + len(log)
        log.append(self)

    def ready(self):
        return json.dumps({"ready": self.side, "import_s": 4.0}) if self.torch else "ready"

    def ask(self, cmd):
        self.send(cmd)
        return self.answer()

    def send(self, cmd):
        if self.pending is not None:
            raise AssertionError(f"{cmd!r} sent before the answer to {self.pending!r} was read")
        FakeServer.clock += 1
        self.pending = cmd
        self.sent_at.append(FakeServer.clock)

    def answer(self):
        cmd, self.pending = self.pending, None
        FakeServer.clock += 1
        self.answered_at.append(FakeServer.clock)
        self.asked.append(cmd)
        k = len(self.asked)
        if not self.torch and "alloc_loop" in " ".join(self.cmd):  # P7: 10 µs an iteration bare
            text = " ".join(self.cmd)
            floor = "CUDA_INJECTION64_PATH" in self.env  # the floor: 0.3 off, 0.6 on
            extra = 0.5 if "--memory=on" in text else 0.2 if "--memory=off" in text else \
                (0.6 if self.env.get("CUPTI_FLOOR_MEMORY") == "1" else 0.3) if floor else 0.0
            FakeServer.turns += 1
            return repr((10.0 + extra) * (1 + self.DRIFT * FakeServer.turns))
        if not self.torch:
            text = " ".join(self.cmd)
            extra = 1.5 if "CUDA_INJECTION64_PATH" in self.env else 0.02 if "--on-demand" in text else 1.4 if \
                "--capture-range" not in text and "record" in text else 0.1 if "--inject=cuda" in text else 0.02 if "record" in text else 0.0
            FakeServer.turns += 1
            return repr((3.5 + extra) * (1 + self.DRIFT * FakeServer.turns))
        if cmd == "plain":
            if "prof" in self.asked or "warm" in self.asked:
                raise AssertionError("a plain loop after a profile")
            return json.dumps({"us_per_op": (7.0 + 0.05 * (k % 3)) * self.offset})
        got = {"us_per_op": 11.0 + 0.1 * ((k + (self.side == "ft")) % 2), "end_to_end_s": 0.2 + 0.01 * (k % 2) - 0.03 * (self.side == "ft")}
        if cmd == "warm":
            got["device_events"] = run.TORCH_ITERS
        return json.dumps(got)

    def end_input(self):  # the first time counts (close() ends input too)
        if self.ended_at is None:
            FakeServer.clock += 1
            self.ended_at = FakeServer.clock

    def close(self):
        self.end_input()
        FakeServer.clock += 1
        self.closed, self.closed_at = True, FakeServer.clock
        return 0


class GpuPathsWithoutAGpu(unittest.TestCase):
    """The --gpu code paths against a stand-in for every measured process: CI has no GPU,
    and a slip in them would otherwise first show on the device's clock."""

    def setUp(self):
        self.calls = []
        self.saved = run.sh
        self.tmp = tempfile.TemporaryDirectory()
        tmp = self.tmp.name

        def fake(cmd, env=None, check=True, stderr=False):
            self.calls.append((list(cmd), dict(env or {})))
            if stderr:  # the raw-CUPTI floor's report comes on stderr
                n_floor = sum("CAPTURE_BENCH_NO_FLAGTRACE" in e for _, e in self.calls)
                return fake_out(cmd, env), f"cupti_floor: 3 records, 0 dropped, at most {n_floor} buffers of 256 KiB held at once\n"
            return fake_out(cmd, env)

        def fake_out(cmd, env):
            text = " ".join(cmd)
            k = len(self.calls)
            if "torch_bench.py" in text and "capture" in cmd:
                return json.dumps({"slices": [100009, 100009], "export_chrome_trace_s": [0.31, 0.32, 0.33] * 2,
                                   "key_averages_s": [6.0, 7.0]})
            if "capture_bench" in text:
                n = int(cmd[cmd.index(next(c for c in cmd if c.endswith("capture_bench"))) + 1])
                events = int(n * 2.1)
                prefix = cmd[cmd.index(next(c for c in cmd if c.endswith("capture_bench"))) + 2]
                if prefix != "-":
                    for ext in (".json.gz", ".json"):
                        open(prefix + ext, "w").close()
                reps = 1 if prefix == "-" else int(cmd[-1])
                # the floor: CUPTI's own 4 MB, then 5 MB (bimodal, as the floor was with big buffers)
                floors = sum("CAPTURE_BENCH_NO_FLAGTRACE" in e for _, e in self.calls)
                peak = 100e6 + (3e6 + 1e6 * floors if "CAPTURE_BENCH_NO_FLAGTRACE" in (env or {}) else 55 * events)
                return json.dumps({"kernels": n, "events": events, "write_json_s": [events / 3.2e6] * reps,
                                   "write_gzip_s": [events / 3.5e6] * reps, "bytes_gzip": events * 28,
                                   "rss_before": 100e6, "rss_at_create": 90e6, "peak_rss": peak})
            if "--split" in cmd:
                return "# split\n| part | CPU s |\n|---|---|\n| x | 1 |"
            return ""

        run.sh = fake
        self.boot_sizes = []
        self.saved_boot = run.group_bootstrap

        def counted(groups, stat, **kw):
            self.boot_sizes.append(len(groups))
            return self.saved_boot(groups, stat, **kw)

        run.group_bootstrap = counted
        shape = {"groups": 3, "pairs": 2, "rounds": 4, "prof_rounds": 3, "loop_groups": 5, "loop_rounds": 4}
        self.g = run.Gpu("/b", tmp, 3, shape, "2,3", False, "2,3,4")
        self.g.norand = ["setarch", "x86_64", "-R"]  # whatever this machine's setarch allows
        self.servers = []
        self.g.spawn = lambda cmd, env=None: FakeServer(self.servers, cmd, env)

    def tearDown(self):
        run.sh = self.saved
        run.group_bootstrap = self.saved_boot
        self.tmp.cleanup()

    def test_every_row_of_a_whole_run(self):
        want = set(run.IDS)
        rows = self.g.p1_p2(30000, want) + self.g.p1_p3_torch(want) + self.g.p4_p5_p6(45000, 500000, want)
        self.assertEqual([r["id"] for r in rows], ["P1"] * 5 + ["P2", "P1", "P3", "P3"] + ["P4"] * 4 + ["P5"] * 4
                         + ["P6"] * 2)
        # the fake's waiting costs 0.02 of 3.5 µs with the shim or preload, 0.1 under CUPTI (judged or
        # not, as labelled), exactly: each turn against the bare turns on either side of it, the
        # host's drift (0.2 % a turn, 2 % a round) cancels
        for r, extra in zip(rows[:5], (0.02, 0.02, 0.1, 0.02, 0.02)):
            self.assertAlmostEqual(r["estimate"], (3.5 + extra) / 3.5, places=9)
            self.assertAlmostEqual(r["high"], r["low"], places=9)
        self.assertEqual([r["verdict"] for r in rows[:5]], ["pass", "pass", "not judged", "pass", "pass"])
        self.assertIn("record --on-demand", rows[3]["what"])
        self.assertIn("after one 200 ms `flagtrace capture`", rows[4]["what"])
        # P2: the overheads (1.4 and 1.5 of 3.5) in the same way
        self.assertAlmostEqual(rows[5]["estimate"], 1.4 / 1.5, places=9)
        for r in rows:
            self.assertIn(r["verdict"], ("pass", "MISS", "within noise", "not judged"), r)
            self.assertTrue(r["low"] <= r["estimate"] <= r["high"], r)
        # 5 groups of the 8 launch-loop sides, 4 rounds each, the bare side before, between and
        # after the others (8 turns a round), every side on CPU 2 alone
        loops = [sv for sv in self.servers if not sv.torch]
        self.assertEqual(len(loops), 5 * 8)
        def bare(sv):
            return sv.cmd[6].endswith("launch_loop") and "CUDA_INJECTION64_PATH" not in sv.env

        self.assertTrue(all(sv.asked == ["go"] * (32 if bare(sv) else 4) and sv.closed for sv in loops))
        self.assertTrue(all(sv.cmd[:6] == ["taskset", "-c", "2", "setarch", "x86_64", "-R"]
                            and sv.cmd[-2:] == ["30000", "serve"] for sv in loops))
        self.assertEqual(sorted(" ".join(sv.cmd[6:9]) for sv in loops[:8]),
                         sorted(["/b/bench/gpu/launch_loop 30000 serve",
                                 "/b/flagtrace record --capture-range=cudaProfilerApi",
                                 "/b/flagtrace record --inject=preload", "/b/flagtrace record --inject=cuda",
                                 "/b/bench/gpu/launch_loop 30000 serve", "/b/flagtrace record --force-overwrite",
                                 "/b/flagtrace record --on-demand", "/b/flagtrace record --on-demand"]))
        # each recorded side writes a file of its own (a group's sides end together)
        outs = [sv.cmd[sv.cmd.index("-o") + 1] for sv in loops[:8] if "-o" in sv.cmd]
        self.assertEqual(len(set(outs)), 6)
        # the side measured after a capture was captured once, by its record's pid, before its rounds
        after = [sv for sv in loops if "on_demand_after-%p-%n.json.gz" in " ".join(sv.cmd)]
        captures = [c for c, _ in self.calls if "--job" in c]
        self.assertEqual(captures, [["taskset", "-c", "2,3,4", "/b/flagtrace", "capture", "--job", str(sv.pid),
                                     "--duration", "200ms"] for sv in after])
        # every side of a group is told to end before the first exit is waited for
        for k in range(0, len(loops), 8):
            self.assertLess(max(sv.ended_at for sv in loops[k:k + 8]), min(sv.closed_at for sv in loops[k:k + 8]))
        # 3 groups of 2 (base, ft) pairs: every plain turn before the first profile, then one
        # warm-up profile each
        torch = [sv for sv in self.servers if sv.torch]
        self.assertEqual(sorted(sv.side for sv in torch), ["base"] * 6 + ["ft"] * 6)
        self.assertTrue(all(sv.asked == ["plain"] * 4 + ["warm"] + ["prof"] * 3 and sv.closed for sv in torch))
        # a group's warm-ups overlap: each is sent before any is read
        for k in range(0, len(torch), 4):
            self.assertLess(max(sv.sent_at[4] for sv in torch[k:k + 4]), min(sv.answered_at[4] for sv in torch[k:k + 4]))
        # the torch rows' intervals are over the 6 pairs (each process pair's own offset, up to
        # 11 % apart here, is one sample), then their rounds
        self.assertEqual(self.boot_sizes[-3:], [6, 6, 6])
        self.assertGreater(rows[6]["high"] - rows[6]["low"], 0.03)
        self.assertTrue(all(sv.cmd[:6] == ["taskset", "-c", "2,3,4", "setarch", "x86_64", "-R"]
                            and sv.cmd[-2:] == ["--pin", "2"]
                            and sv.cmd[sv.cmd.index("--iters") + 1] == str(run.TORCH_ITERS) for sv in torch))
        # P4-P6 (captures, writes, stats) on the io cores; the split reader unpinned
        self.assertTrue(all(c[:3] == ["taskset", "-c", "2,3,4"] for c, _ in self.calls if c and c[0] != "/b/bench/bench_stats"))
        # P5 (issue 50): advise on the 1 M-event capture, whole process, 7 runs, judged against 1 s
        adv = [r for r in rows if "`flagtrace advise`" in r["what"]]
        self.assertEqual([(r["id"], r["target"], r["verdict"]) for r in adv], [("P5", "< 1 s", "pass")])
        self.assertEqual(sum(c[3:5] == ["/b/flagtrace", "advise"] and c[-1].endswith("cap1m.json.gz")
                             for c, _ in self.calls), 7)
        cap, cap_env = next((c, e) for c, e in self.calls if "capture" in c and any(x.endswith("torch_bench.py") for x in c))
        self.assertEqual(cap_env.get("TMPDIR"), self.tmp.name)  # kineto's exports where our captures go
        self.assertTrue(any(any(x.endswith("capture_bench") for x in c) and c[-1] == "30" for c, _ in self.calls))
        # 6 kineto captures, one export each (torch 2.11 saves a profile once), key_averages on 2
        self.assertEqual((cap[cap.index("--reps") + 1], cap[cap.index("--key-averages") + 1]), ("6", "2"))
        # P6: ours less CUPTI's own, the floor run twice with small buffers (P2's floor keeps its
        # own); the interval spans the two floors, the estimate is their median
        floors = [e for c, e in self.calls if "CAPTURE_BENCH_NO_FLAGTRACE" in e]
        self.assertEqual(len(floors), 2)
        self.assertTrue(all(e["CUPTI_FLOOR_BUFFER_BYTES"] == str(256 * 1024) for e in floors))
        n = 1050000
        p6 = rows[-2]
        for key, floor in (("estimate", 4.5e6), ("low", 5e6), ("high", 4e6)):
            self.assertAlmostEqual(p6[key], (55 * n - floor) / n, places=9)
        self.assertIn("at most 0.5 MB of them held", p6["what"])
        self.assertEqual(p6["verdict"], "pass")
        # stats is timed 7 times on the 1 M trace, after its JSON twin is gone, and 7 more
        # through the event model (--engine=model: the P5 model row)
        stats_1m = [c for c, _ in self.calls if "stats" in c and c[-1].endswith("cap1m.json.gz")]
        self.assertEqual(sum("--engine=model" not in c for c in stats_1m), 7)
        self.assertEqual(sum("--engine=model" in c for c in stats_1m), 7)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "cap1m.json")))
        self.assertTrue(os.path.exists(os.path.join(self.tmp.name, "cap1m.json.gz")))

    def test_p7_memory_on_against_off_each_against_its_bare_turns(self):
        self.g.shape["mem_groups"] = 3
        rows = self.g.p7_memory(2000)
        self.assertEqual([r["id"] for r in rows], ["P7"] * 4)
        # on 10.5, off 10.2, bare 10 µs, the floor 10.6 on and 10.3 off: the host's drift cancels
        # against the bare turns around each
        for r, want in zip(rows, (10.5 / 10.2, 10.5 / 10.0, 10.2 / 10.0, 10.6 / 10.3)):
            self.assertAlmostEqual(r["estimate"], want, places=9)
            self.assertAlmostEqual(r["high"], r["low"], places=9)
        self.assertEqual([r["verdict"] for r in rows], ["pass", "not judged", "not judged", "not judged"])
        self.assertEqual((rows[0]["target"], rows[0]["ratio"][:5]), ("≤ 1.05", "1.029"))
        # 3 groups of 5 sides, the bare one before, between and after the others, every side on CPU 2
        self.assertEqual(len(self.servers), 15)
        self.assertEqual(sorted(" ".join(sv.cmd[6:9]) for sv in self.servers[:5]),
                         ["/b/bench/gpu/alloc_loop 2000 serve"] * 3 + ["/b/flagtrace record --memory=off",
                                                                       "/b/flagtrace record --memory=on"])
        self.assertEqual(sorted(str(sv.env.get("CUPTI_FLOOR_MEMORY")) for sv in self.servers[:5]
                                if "CUDA_INJECTION64_PATH" in sv.env), ["1", "None"])
        bare = [sv for sv in self.servers if "record" not in sv.cmd and "CUDA_INJECTION64_PATH" not in sv.env]
        self.assertEqual(len(bare), 3)
        self.assertTrue(all(sv.asked == ["go"] * (5 * 4 if sv in bare else 4) and sv.closed for sv in self.servers))
        self.assertTrue(all(sv.cmd[:6] == ["taskset", "-c", "2", "setarch", "x86_64", "-R"] for sv in self.servers))
        self.assertEqual(len({sv.env["FT_BENCH_MMAP_PAD"] for sv in self.servers}), 3)  # a layout per group

    def test_layouts_are_shared_within_a_pair_or_group_and_differ_between(self):
        want = set(run.IDS)
        self.g.p1_p2(30000, want)
        self.g.p1_p3_torch(want)
        keys = ("PYTHONHASHSEED", "FT_BENCH_STACK_PAD", "FT_BENCH_MMAP_PAD", "FT_BENCH_HEAP_PAD")

        def lay(sv):
            return tuple(sv.env[k] for k in keys)

        loops = [sv for sv in self.servers if not sv.torch]
        groups = [loops[k:k + 8] for k in range(0, len(loops), 8)]
        self.assertTrue(all(len({lay(sv) for sv in g}) == 1 for g in groups))
        self.assertEqual(len({lay(g[0]) for g in groups}), 5)
        # the floor's injection is kept beside the layout
        self.assertEqual(sum("CUDA_INJECTION64_PATH" in sv.env for sv in loops), 5)
        torch = [sv for sv in self.servers if sv.torch]
        pairs = [torch[k:k + 2] for k in range(0, len(torch), 2)]  # base_i, ft_i as started
        self.assertTrue(all([a.side, b.side] == ["base", "ft"] and lay(a) == lay(b) for a, b in pairs))
        self.assertEqual(len({lay(a) for a, _ in pairs}), 6)
        self.assertFalse({lay(a) for a, _ in pairs} & {lay(g[0]) for g in groups})

    def test_layouts_are_reproducible_and_in_range(self):
        a, b = run.layout(("torch", 0, 1)), run.layout(("torch", 0, 1))
        self.assertEqual(a, b)
        self.assertNotEqual(a, run.layout(("torch", 1, 0)))
        for key in [("loop", g) for g in range(40)]:
            got = run.layout(key)
            self.assertTrue(1 <= int(got["PYTHONHASHSEED"]) < 2 ** 32)
            self.assertLess(len(got["FT_BENCH_STACK_PAD"]), 32768)
            self.assertEqual(int(got["FT_BENCH_MMAP_PAD"]) % 4096, 0)
            self.assertLess(int(got["FT_BENCH_MMAP_PAD"]), 4096 * 1024)
            self.assertEqual(int(got["FT_BENCH_HEAP_PAD"]) % 16, 0)

    def test_aslr_on_draws_no_layouts(self):
        self.assertEqual(run.Gpu("/b", self.tmp.name, 3, {}, "2", False, aslr=True).norand, [])
        self.g.norand = []  # --aslr, or no setarch
        self.g.p1_p2(30000, {"P1"})
        self.g.p1_p3_torch({"P1"})
        self.assertTrue(self.servers)
        self.assertTrue(all("setarch" not in sv.cmd and "PYTHONHASHSEED" not in sv.env for sv in self.servers))

    def test_only_p3_runs_no_launch_loop_and_no_capture(self):
        rows = self.g.p1_p3_torch({"P3"})
        self.assertEqual([r["id"] for r in rows], ["P3", "P3"])
        self.assertEqual([r["verdict"] for r in rows], ["within noise", "pass"])  # the fake's ft exits 0.03 s sooner
        self.assertFalse([c for c, _ in self.calls if any(x.endswith("launch_loop") or x.endswith("capture_bench")
                                                          for x in c)])
        self.assertTrue(all(sv.torch and "plain" not in sv.asked for sv in self.servers))
        self.assertTrue(all(sv.asked == ["warm"] + ["prof"] * 3 for sv in self.servers))

    def test_a_profile_without_the_kernels_stops_the_run(self):
        real_answer = FakeServer.answer

        def no_kernels(sv):
            cmd = sv.pending
            got = json.loads(real_answer(sv))
            if cmd == "warm" and sv.side == "ft":
                got["device_events"] = 3
            return json.dumps(got)

        FakeServer.answer = no_kernels
        try:
            with self.assertRaisesRegex(RuntimeError, "ft0 side's first profile has 3 device events"):
                self.g.p1_p3_torch({"P3"})
        finally:
            FakeServer.answer = real_answer
        self.assertTrue(self.servers and all(sv.closed for sv in self.servers))


if __name__ == "__main__":
    unittest.main()
