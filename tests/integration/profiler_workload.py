"""The one workload the parity test and its baseline generator both run, so they
cannot drift: matmuls, relu, a sort, a host->device copy, zeros, an explicit memset,
and a kernel whose block size (100) is not a multiple of 32."""
import ctypes

# A PTX kernel launched with 100 threads per block through the driver API: torch's
# own kernels all use multiples of 32.
_PTX = b"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry odd_block_kernel(.param .u64 out)
{
    .reg .b64 %rd<3>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd1, %rd1, %rd2;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""
_fn = None


def _odd_block_launch(torch, buf):
    global _fn
    cuda = ctypes.CDLL("libcuda.so.1")
    if _fn is None:
        mod = ctypes.c_void_p()
        assert cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(_PTX)) == 0, "cuModuleLoadData"
        fn = ctypes.c_void_p()
        assert cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"odd_block_kernel") == 0, "cuModuleGetFunction"
        _fn = fn
    ptr = ctypes.c_uint64(buf.data_ptr())
    args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(ptr), ctypes.c_void_p))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    rc = cuda.cuLaunchKernel(_fn, 3, 1, 1, 100, 1, 1, 0, stream, args, None)
    assert rc == 0, f"cuLaunchKernel: {rc}"


def _memset(torch, buf):
    rt = ctypes.CDLL("libcudart.so.13")
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    rc = rt.cudaMemsetAsync(ctypes.c_void_p(buf.data_ptr()), 0, ctypes.c_size_t(buf.numel() * 4), stream)
    assert rc == 0, f"cudaMemsetAsync: {rc}"


_ops = None


def _custom_ops(torch):
    """The memset and the odd-block launch as torch ops, so that, like every other
    device activity here, they are issued inside an op and carry its External id."""
    global _ops
    if _ops is None:
        @torch.library.custom_op("flagtrace_test::memset", mutates_args=("buf",))
        def memset(buf: torch.Tensor) -> None:
            _memset(torch, buf)

        @torch.library.custom_op("flagtrace_test::odd_block", mutates_args=("buf",))
        def odd_block(buf: torch.Tensor) -> None:
            _odd_block_launch(torch, buf)

        _ops = (memset, odd_block)
    return _ops


def run_traced_ops(torch):
    dev = "cuda"
    x = torch.randn(256, 256, device=dev)
    y = torch.randn(256, 256, device=dev)
    for _ in range(5):
        torch.relu(torch.mm(x, y))
    torch.sort(torch.randn(4096, device=dev))
    torch.randn(16384).to(dev)
    z = torch.zeros(1 << 20, device=dev)
    memset, odd_block = _custom_ops(torch)
    memset(z)
    odd_block(z)
    torch.cuda.synchronize()
