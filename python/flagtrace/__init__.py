"""flagtrace: vendor-neutral GPU activity profiling. `import flagtrace.torch` makes
torch.profiler record device activity through flagtrace."""

__version__ = "0.1.0"
