"""bench/run.py's method without a GPU: the bootstrap interval, the three verdicts,
paired ratios, the interleaving order, and the README table rewrite.
Usage: test_bench_method.py BENCH_DIR"""
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

    def test_rounds_alternate_the_order(self):
        g = run.Gpu("/nonexistent", "/tmp", 1, 4, "", True)
        order = []
        g.rounds({"a": 1, "b": 2}, lambda name, spec: order.append(name) or spec)
        self.assertEqual(order, ["a", "b", "b", "a", "a", "b", "b", "a"])

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
            text = open(readme).read()
        self.assertTrue(text.startswith("before\n") and text.endswith("\nafter\n"))
        self.assertNotIn("old table", text)
        self.assertIn("| P3 | end to end | 0.5 s kineto | 0.45 s | 0.900 [0.850, 0.950] | ≤ 1.00 | pass |", text)
        self.assertEqual(text.count(run.README_BEGIN), 1)


if __name__ == "__main__":
    unittest.main()
