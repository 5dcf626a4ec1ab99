"""opbox's DLPack against a real framework in one process: PyTorch (cpu, and cuda when it has a
GPU) or else NumPy (cpu), through examples/dlpack_ffi.rs loaded with ctypes.

    cargo build --example dlpack_ffi
    python3 tests/dlpack_python.py target/debug/examples/libdlpack_ffi.so

Checks, for each device: a framework tensor imported into opbox (zero copy, its deleter run,
i.e. the framework's capsule consumed as the protocol says), and an opbox tensor (strided)
exported into the framework, read back equal, and released. Prints one line per check and exits
non-zero on a failure; exits 0 with "skipped: ..." when neither framework is importable.
"""
import ctypes
import sys

VERSIONED = b"dltensor_versioned"
USED = b"used_dltensor_versioned"

api = ctypes.pythonapi
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype = ctypes.c_int
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_GetName.restype = ctypes.c_char_p
api.PyCapsule_GetName.argtypes = [ctypes.py_object]
api.PyCapsule_IsValid.restype = ctypes.c_int
api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, DESTRUCTOR]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class Managed(ctypes.Structure):
    # DLManagedTensorVersioned's head: enough to call the deleter of an unconsumed capsule.
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.CFUNCTYPE(None, ctypes.c_void_p)),
        ("flags", ctypes.c_uint64),
    ]


@DESTRUCTOR
def _free_unconsumed(capsule):
    # The protocol: a capsule still named "dltensor_versioned" was never consumed, so its
    # deleter is the capsule's to call.
    capsule = ctypes.cast(capsule, ctypes.py_object)
    if api.PyCapsule_IsValid(capsule, VERSIONED):
        p = api.PyCapsule_GetPointer(capsule, VERSIONED)
        m = Managed.from_address(p)
        if m.deleter:
            m.deleter(p)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: dlpack_python.py path/to/libdlpack_ffi.so")
    lib = ctypes.CDLL(sys.argv[1])
    lib.opbox_dlpack_sum.restype = ctypes.c_double
    lib.opbox_dlpack_sum.argtypes = [ctypes.c_void_p]
    lib.opbox_dlpack_sum_legacy.restype = ctypes.c_double
    lib.opbox_dlpack_sum_legacy.argtypes = [ctypes.c_void_p]
    lib.opbox_dlpack_arange_t.restype = ctypes.c_void_p
    lib.opbox_dlpack_arange_t.argtypes = [ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]
    lib.opbox_live_tensors.restype = ctypes.c_size_t

    try:
        import torch as fw

        name = "torch " + fw.__version__
        devices = [("cpu", -1)] + ([("cuda", 0)] if fw.cuda.is_available() else [])
        make = lambda n, dev: fw.arange(n, dtype=fw.float32, device=dev)
        to_list = lambda t: t.cpu().tolist()
        from_dlpack = fw.from_dlpack
    except Exception as torch_err:  # noqa: BLE001 (any import failure means "not usable")
        try:
            import numpy as fw
        except ImportError:
            print(f"skipped: neither torch ({torch_err}) nor numpy can be imported")
            return 0
        name = "numpy " + fw.__version__
        devices = [("cpu", -1)]
        make = lambda n, dev: fw.arange(n, dtype=fw.float32)
        to_list = lambda a: a.tolist()
        from_dlpack = fw.from_dlpack

    failures = 0

    def check(ok, what):
        nonlocal failures
        print(f"{'ok' if ok else 'FAILED'}: {what} ({name})")
        failures += 0 if ok else 1

    for dev, ordinal in devices:
        # Framework -> opbox: the capsule is consumed, opbox sums it, then runs its deleter.
        t = make(10, dev)
        cap = t.__dlpack__(max_version=(1, 0))
        check(api.PyCapsule_GetName(cap) == VERSIONED, f"{dev}: the framework gives a versioned capsule")
        ptr = api.PyCapsule_GetPointer(cap, VERSIONED)
        api.PyCapsule_SetName(cap, USED)
        total = lib.opbox_dlpack_sum(ptr)
        check(total == 45.0, f"{dev}: opbox imported and summed {total}")
        del cap, t

        # The legacy capsule (no max_version): DLManagedTensor.
        t = make(10, dev)
        cap = t.__dlpack__()
        if api.PyCapsule_GetName(cap) == b"dltensor":
            ptr = api.PyCapsule_GetPointer(cap, b"dltensor")
            api.PyCapsule_SetName(cap, b"used_dltensor")
            total = lib.opbox_dlpack_sum_legacy(ptr)
            check(total == 45.0, f"{dev}: opbox imported a legacy tensor and summed {total}")
        del cap, t

        # opbox -> framework: a transposed [2, 3] arange, so strides travel too.
        p = lib.opbox_dlpack_arange_t(2, 3, ordinal)
        check(bool(p), f"{dev}: opbox exported")
        if not p:
            continue
        capsule = api.PyCapsule_New(p, VERSIONED, _free_unconsumed)

        class Exported:
            def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
                return capsule

            def __dlpack_device__(self):
                return (1, 0) if ordinal < 0 else (2, ordinal)

        got = from_dlpack(Exported())
        check(to_list(got) == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]], f"{dev}: the framework read {to_list(got)}")
        check(api.PyCapsule_GetName(capsule) == USED, f"{dev}: the framework consumed the capsule")
        del got, capsule

    import gc

    gc.collect()
    live = lib.opbox_live_tensors()
    check(live == 0, f"every opbox tensor was released (live: {live})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
