"""The device-type rules of flagtrace.torch (cuda or privateuse1) without torch: every
branch of flagtrace/_device.py, bad values, and how flagtrace/torch.py hands the
decision to the extension (a stand-in torch and _C), and the torch functions it wraps
for what kineto does not tell a child profiler (toggle_collection_dynamic, sync events).
Usage: test_device_rules.py PYTHON_DIR"""
import enum
import contextlib
import importlib
import io
import os
import sys
import types
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from flagtrace._device import ENV, UNNAMED, check_device, resolve_device  # noqa: E402


def never():
    raise AssertionError("cuda_available was consulted although an earlier rule decides")


class Rules(unittest.TestCase):
    def test_explicit_wins_over_everything(self):
        for env in (None, "", "cuda", "privateuse1", "bogus"):
            for name in (UNNAMED, "npu"):
                self.assertEqual(resolve_device("cuda", env, name, never)[0], "cuda")
                self.assertEqual(resolve_device("privateuse1", env, name, never)[0], "privateuse1")

    def test_env_wins_over_automatic(self):
        self.assertEqual(resolve_device(None, "privateuse1", UNNAMED, never),
                         ("privateuse1", f"chosen by {ENV}"))
        self.assertEqual(resolve_device(None, "cuda", "npu", never), ("cuda", f"chosen by {ENV}"))

    def test_values_are_case_and_space_insensitive(self):
        self.assertEqual(resolve_device(" PrivateUse1 ", None, UNNAMED, never)[0], "privateuse1")
        self.assertEqual(resolve_device(None, "CUDA\n", UNNAMED, never)[0], "cuda")

    def test_empty_env_is_unset(self):
        self.assertEqual(resolve_device(None, "", "musa", never)[0], "privateuse1")

    def test_named_backend_means_privateuse1(self):
        d, why = resolve_device(None, None, "npu", never)
        self.assertEqual(d, "privateuse1")
        self.assertIn("privateuse1 backend has been given a name", why)

    def test_unnamed_backend_falls_to_cuda(self):
        self.assertEqual(resolve_device(None, None, UNNAMED, True)[0], "cuda")
        self.assertEqual(resolve_device(None, None, None, lambda: True)[0], "cuda")
        self.assertEqual(resolve_device(None, None, "", True)[0], "cuda")

    def test_nothing_gives_a_one_line_reason(self):
        for cuda in (False, lambda: False):
            d, why = resolve_device(None, None, UNNAMED, cuda)
            self.assertIsNone(d)
            self.assertNotIn("\n", why)
            for part in ("no device", "privateuse1 backend has no name", "torch.cuda.is_available() is False", ENV):
                self.assertIn(part, why)

    def test_bad_values_name_the_valid_ones(self):
        cases = [(("npu", None), "install(device=...)='npu'"), (("", None), "install(device=...)=''"),
                 ((None, "npu"), f"{ENV}='npu'"), ((None, "cuda:0"), f"{ENV}='cuda:0'"),
                 ((3, None), "install(device=...)=3")]
        for (explicit, env), source in cases:
            with self.assertRaises(ValueError) as cm:
                resolve_device(explicit, env, "npu", never)
            msg = str(cm.exception)
            self.assertNotIn("\n", msg)
            self.assertTrue(msg.startswith(source), msg)
            self.assertIn("use cuda or privateuse1", msg)

    def test_check_device_normalizes(self):
        self.assertEqual(check_device("Cuda", "x"), "cuda")
        self.assertRaises(ValueError, check_device, None, "x")


class FakeC(types.ModuleType):
    """flagtrace._C as the Python side sees it."""

    def __init__(self, install_result=(True, "")):
        super().__init__("flagtrace._C")
        self.install_result, self.installs, self.choices = install_result, 0, []

    def install(self):
        self.installs += 1
        return self.install_result

    def set_device_choice(self, unnamed, unnamed_why, named, named_why):
        self.choices.append((unnamed, named))

    def set_collecting(self, on):
        self.collecting.append(on)
        return True

    def set_sync_requested(self, on):
        self.sync.append(on)

    collecting, sync = None, None


class PA(enum.Enum):
    CPU, CUDA, PrivateUse1 = 0, 1, 2


# torch 2.11's signature text, which flagtrace.torch reads the fields' order from
EXP_DOC = ("__init__(self: torch._C._profiler._ExperimentalConfig, profiler_metrics: collections.abc.Sequence[str] = "
           "[], profiler_measure_per_kernel: bool = False, verbose: bool = False, performance_events: "
           "collections.abc.Sequence[str] = [], enable_cuda_sync_events: bool = False, adjust_profiler_step: bool = "
           "False, disable_external_correlation: bool = False, profile_all_threads: bool = False, "
           "capture_overload_names: bool = False, record_python_gc_info: bool = False, expose_kineto_event_metadata: "
           "bool = False, custom_profiler_config: str = '') -> None")


class Exp:
    """_ExperimentalConfig as pybind shows it: no attributes, a state tuple."""

    def __init__(self, sync=False):
        self.state = ([], False, False, [], sync, False, False, False, False, False, False, "")

    def __getstate__(self):
        return self.state


Exp.__init__.__doc__ = EXP_DOC


def fake_torch(name=UNNAMED, cuda=True):
    """torch with the parts flagtrace.torch reads and wraps; .calls logs torch's own."""
    t = types.ModuleType("torch")
    t.calls = []
    t.cuda = types.SimpleNamespace(is_available=lambda: cuda)
    t._C = types.SimpleNamespace(_get_privateuse1_backend_name=lambda: name, _profiler=types.SimpleNamespace(
        _set_cuda_sync_enabled_val=lambda v: t.calls.append(("sync", v))))
    ap = types.ModuleType("torch.autograd.profiler")
    ap._toggle_collection_dynamic = lambda enabled, acts: t.calls.append(("toggle", enabled, set(acts)))

    class Profile:
        def __init__(self, experimental_config=None):
            self.experimental_config = experimental_config

        def _prepare_trace(self):
            t.calls.append(("prepare",))

        def toggle_collection_dynamic(self, enabled, activities):  # as torch's: the module global
            return ap._toggle_collection_dynamic(enabled, set(activities))

    ap.profile = Profile
    t.autograd = types.SimpleNamespace(profiler=ap)
    t.profiler = types.SimpleNamespace(ProfilerActivity=PA)
    t.modules = {"torch.autograd": t.autograd, "torch.autograd.profiler": ap, "torch.profiler": t.profiler}
    return t


class Glue(unittest.TestCase):
    def load(self, torch, c, env=None):
        """Imports flagtrace.torch afresh with these stand-ins; returns (module, stderr)."""
        names = ("torch", "flagtrace._C", "flagtrace.torch", "torch.autograd", "torch.autograd.profiler", "torch.profiler")
        saved = {k: sys.modules.get(k) for k in names}
        self.addCleanup(lambda: [sys.modules.pop(k, None) if v is None else sys.modules.__setitem__(k, v)
                                 for k, v in saved.items()])
        old_env = os.environ.pop(ENV, None)
        self.addCleanup(lambda: os.environ.__setitem__(ENV, old_env) if old_env is not None else os.environ.pop(ENV, None))
        if env is not None:
            os.environ[ENV] = env
        sys.modules["torch"], sys.modules["flagtrace._C"] = torch, c
        c.collecting, c.sync = [], []
        sys.modules.update(getattr(torch, "modules", {}))
        sys.modules.pop("flagtrace.torch", None)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            mod = importlib.import_module("flagtrace.torch")
        return mod, err.getvalue()

    def test_import_installs_once_and_publishes_both_choices(self):
        c = FakeC()
        ft, err = self.load(fake_torch(), c)
        self.assertEqual(err, "")
        self.assertTrue(ft.available)
        self.assertEqual((c.installs, c.choices), (1, [("cuda", "privateuse1")]))
        self.assertTrue(ft.install())  # idempotent: no second registration
        self.assertEqual(c.installs, 1)

    def test_no_cuda_and_no_name_still_installs_and_says_nothing_at_import(self):
        c = FakeC()
        ft, err = self.load(fake_torch(cuda=False), c)
        self.assertEqual((err, ft.available, c.choices), ("", True, [("", "privateuse1")]))
        self.assertIsNone(ft.resolve()[0])

    def test_resolve_reads_the_name_at_call_time(self):
        t = fake_torch()
        ft, _ = self.load(t, FakeC())
        self.assertEqual(ft.resolve()[0], "cuda")
        t._C._get_privateuse1_backend_name = lambda: "flagos"  # a vendor extension imported later
        self.assertEqual(ft.resolve()[0], "privateuse1")

    def test_env_is_read_by_install_not_later(self):
        c = FakeC()
        ft, _ = self.load(fake_torch(), c)
        os.environ[ENV] = "privateuse1"  # restored by load's cleanup
        self.assertEqual(ft.resolve()[0], "cuda")  # what the extension still holds
        ft.install()
        self.assertEqual((ft.resolve()[0], c.choices[-1]), ("privateuse1", ("privateuse1", "privateuse1")))

    def test_env_fixes_both_choices(self):
        c = FakeC()
        ft, err = self.load(fake_torch(), c, env="privateuse1")
        self.assertEqual((err, c.choices), ("", [("privateuse1", "privateuse1")]))

    def test_bad_env_is_one_line_and_leaves_kineto_alone(self):
        c = FakeC()
        ft, err = self.load(fake_torch(), c, env="npu")
        self.assertFalse(ft.available)
        self.assertEqual(c.installs, 0)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertTrue(err.startswith(f"flagtrace.torch: {ENV}='npu' is not a device type"), err)
        self.assertIn("use cuda or privateuse1", err)
        self.assertIn("torch.profiler runs without flagtrace", err)

    def test_explicit_install_overrides_and_bad_values_raise(self):
        c = FakeC()
        ft, _ = self.load(fake_torch(name="npu"), c, env="privateuse1")
        self.assertTrue(ft.install(device="CUDA"))
        self.assertEqual(c.choices[-1], ("cuda", "cuda"))
        with self.assertRaises(ValueError) as cm:
            ft.install(device="npu")
        self.assertIn("use cuda or privateuse1", str(cm.exception))
        self.assertEqual(c.choices[-1], ("cuda", "cuda"))  # a bad value changes nothing
        self.assertEqual(ft.resolve()[0], "cuda")
        ft.install()  # None keeps the explicit choice
        self.assertEqual(c.choices[-1], ("cuda", "cuda"))
        self.assertEqual(c.installs, 1)

    def test_explicit_install_after_bad_env_installs(self):
        c = FakeC()
        ft, _ = self.load(fake_torch(), c, env="npu")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertTrue(ft.install(device="privateuse1"))
        self.assertEqual((err.getvalue(), c.installs, c.choices[-1]), ("", 1, ("privateuse1", "privateuse1")))

    def test_tracer_that_cannot_run_is_one_line(self):
        c = FakeC(install_result=(False, "this build's device tracer cannot run (no libcupti): torch.profiler "
                                         "runs without flagtrace"))
        ft, err = self.load(fake_torch(), c)
        self.assertFalse(ft.available)
        self.assertEqual(err, "flagtrace.torch: this build's device tracer cannot run (no libcupti): torch.profiler "
                              "runs without flagtrace\n")

    def test_toggle_reaches_the_profile_and_torch_keeps_its_part(self):
        t, c = fake_torch(), FakeC()
        self.load(t, c)
        record = c.set_collecting
        c.set_collecting = lambda on: (t.calls.append(("collecting", on)), record(on))[1]
        prof = t.autograd.profiler.profile()
        prof.toggle_collection_dynamic(False, [PA.CUDA])
        prof.toggle_collection_dynamic(True, [PA.CPU, PA.CUDA])
        # PrivateUse1: torch would only warn that it cannot; flagtrace toggles it, torch not asked
        prof.toggle_collection_dynamic(False, [PA.PrivateUse1])
        prof.toggle_collection_dynamic(True, [PA.CPU])  # CPU alone: torch's, no device change
        self.assertEqual(c.collecting, [False, True, False])
        # the device kinds never reach torch (for CUDA it would run kineto's own CUPTI)
        self.assertEqual(t.calls, [("collecting", False), ("collecting", True), ("toggle", True, {PA.CPU}),
                                   ("collecting", False), ("toggle", True, {PA.CPU})])

    def test_sync_events_are_asked_for_from_either_switch(self):
        t, c = fake_torch(), FakeC()
        self.load(t, c)
        profile = t.autograd.profiler.profile
        profile()._prepare_trace()
        profile(Exp(sync=True))._prepare_trace()
        profile(Exp(sync=False))._prepare_trace()
        t._C._profiler._set_cuda_sync_enabled_val(True)
        profile()._prepare_trace()
        t._C._profiler._set_cuda_sync_enabled_val(False)
        profile()._prepare_trace()
        self.assertEqual(c.sync, [False, True, False, True, False])
        self.assertEqual([x for x in t.calls if x[0] != "toggle"],
                         [("prepare",)] * 3 + [("sync", True), ("prepare",), ("sync", False), ("prepare",)])

    def test_a_torch_without_them_gets_one_line(self):
        t = fake_torch()
        del t.modules["torch.autograd.profiler"]
        t.autograd = types.SimpleNamespace()
        ft, err = self.load(t, FakeC())
        self.assertTrue(ft.available)
        self.assertEqual(err.count("\n"), 1)
        self.assertIn("toggle_collection_dynamic and sync events are not wired", err)


if __name__ == "__main__":
    unittest.main(verbosity=1)
