#!/usr/bin/env bash
# Build benches/peers/torch_dispatch.cpp against the PyTorch that `python3` holds, and run it:
# PyTorch's dispatcher (and, where nvcc and a GPU are there, its op → CUDA launch) on ops of the
# same shapes as opbox's benches. scripts/gpu-check runs this on the GPU machine after opbox's
# benches and prints both side by side (benches/peers/table.py).
#
# Every line meant for the table starts with "peer torch "; on anything that stops a part, a line
# says why (`... unavailable: <reason>`, `build failed: <stage>` with `peer torch error: <line>`s)
# and what can still run does. Exit status: 0 when the CPU figures were measured.
#
# Env:
#   PEER_CALLS, PEER_ROUNDS, PEER_LAUNCHES, PEER_LAUNCH_ROUNDS   passed to the program (its header)
#   PEER_BUILD_DIR        where to build (default: a fresh temporary directory, removed after)
#   PEER_CUDA=0           build and run without the CUDA part
#   PEER_CUDA_ARCH        e.g. 90 (default: the first GPU's compute capability, else 90)
#   PEER_TORCH_DIR        a torch package directory to use without importing torch in python
#                         (with PEER_TORCH_CXX11_ABI, default 1): for machines where the import
#                         fails, e.g. a CPU machine with the CUDA wheel but no CUDA libraries
#   PEER_TORCH_LIBS       the torch libraries for the CPU-only link (default: -ltorch -ltorch_cpu
#                         -lc10; "-ltorch_cpu -lc10" avoids libtorch.so's libtorch_cuda.so)
#   PEER_TORCH_CUDA_LIBS  the same for the CUDA build (default: -ltorch -ltorch_cpu -lc10
#                         -ltorch_cuda -lc10_cuda; -lcudart is always added)
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

say() { printf 'peer torch %s\n' "$*"; }

# The first lines worth reading of a compiler's output: its errors, else its start.
first_errors() {
    local log="$1" lines
    lines="$(grep -m 8 -E '(error|Error|undefined reference|cannot find|No such file)' "$log")"
    [[ -n "$lines" ]] || lines="$(head -n 8 "$log")"
    [[ -n "$lines" ]] || lines="(no output)"
    while IFS= read -r line; do say "error: $line"; done <<<"$lines"
}

# ---- Where PyTorch is -----------------------------------------------------------------------
inc=() libdirs=() torch_dir="" torch_version="" abi="" torch_cuda=""
if [[ -n "${PEER_TORCH_DIR:-}" ]]; then
    torch_dir="$PEER_TORCH_DIR"
    inc=("$torch_dir/include" "$torch_dir/include/torch/csrc/api/include")
    libdirs=("$torch_dir/lib")
    abi="${PEER_TORCH_CXX11_ABI:-1}"
    torch_version="$(sed -n 's/^ *"\([0-9][^"]*\)".*/\1/p' "$torch_dir/include/torch/headeronly/version.h" 2>/dev/null | head -n1)"
    torch_version="${torch_version:-unknown} (PEER_TORCH_DIR)"
    [[ -e "$torch_dir/lib/libtorch_cuda.so" ]] && torch_cuda="unknown version"
else
    if ! command -v python3 >/dev/null; then
        say "unavailable: python3 not found on PATH"
        exit 1
    fi
    # Shell assignments, each value quoted by shlex; `error=` alone when torch cannot be had.
    info="$(python3 - 2>&1 <<'EOF'
import os, shlex, sys
def out(k, v):
    print(k + "=" + shlex.quote(str(v)))
def arr(k, vs):
    print(k + "=(" + " ".join(shlex.quote(str(v)) for v in vs) + ")")
try:
    import torch
except Exception as e:
    out("error", ("import torch failed: %s: %s" % (type(e).__name__, e)).splitlines()[0])
    sys.exit(0)
d = os.path.dirname(torch.__file__)
try:
    import torch.utils.cpp_extension as c
    arr("inc", c.include_paths())
    arr("libdirs", c.library_paths())
except Exception as e:
    print("# torch.utils.cpp_extension failed (%s); using the package layout" % type(e).__name__)
    arr("inc", [os.path.join(d, "include"), os.path.join(d, "include", "torch", "csrc", "api", "include")])
    arr("libdirs", [os.path.join(d, "lib")])
out("torch_dir", d)
out("torch_version", torch.__version__)
out("abi", int(torch._C._GLIBCXX_USE_CXX11_ABI))
out("torch_cuda", torch.version.cuda or "")
EOF
)"
    error=""
    # Only the assignment lines: a warning torch prints on import must not reach eval.
    eval "$(grep -E '^(inc|libdirs|torch_dir|torch_version|abi|torch_cuda|error)=' <<<"$info")"
    if [[ -n "$error" ]]; then
        say "unavailable: $error"
        exit 1
    fi
    if [[ -z "$torch_dir" ]]; then
        say "unavailable: could not ask python3 about torch: $(head -n 3 <<<"$info" | tr '\n' ' ')"
        exit 1
    fi
fi
if ! command -v g++ >/dev/null; then
    say "unavailable: g++ not found on PATH"
    exit 1
fi
say "build torch=$torch_version torch_cuda=${torch_cuda:-none} cxx11_abi=$abi dir=$torch_dir"

build="${PEER_BUILD_DIR:-}"
if [[ -z "$build" ]]; then
    build="$(mktemp -d)"
    trap 'rm -rf "$build"' EXIT
fi
mkdir -p "$build"

cxxflags=(-O2 -std=c++17 "-D_GLIBCXX_USE_CXX11_ABI=$abi")
for d in "${inc[@]}"; do cxxflags+=(-isystem "$d"); done
ldflags=()
for d in "${libdirs[@]}"; do ldflags+=(-L "$d" "-Wl,-rpath,$d"); done
read -r -a cpu_libs <<<"${PEER_TORCH_LIBS:--ltorch -ltorch_cpu -lc10}"
read -r -a cuda_libs <<<"${PEER_TORCH_CUDA_LIBS:--ltorch -ltorch_cpu -lc10 -ltorch_cuda -lc10_cuda}"

# ---- The CUDA build, when it can be had -----------------------------------------------------
bin=""
cuda_why=""
nvcc=""
if [[ "${PEER_CUDA:-1}" == 0 ]]; then
    cuda_why="PEER_CUDA=0"
elif [[ -z "$torch_cuda" ]]; then
    cuda_why="this PyTorch is built without CUDA"
else
    candidates=("$(command -v nvcc 2>/dev/null)" /usr/local/cuda/bin/nvcc)
    [[ -n "${CUDA_HOME:-}" ]] && candidates=("$CUDA_HOME/bin/nvcc" "${candidates[@]}")
    for c in "${candidates[@]}"; do
        if [[ -n "$c" && -x "$c" ]]; then nvcc="$c"; break; fi
    done
    [[ -n "$nvcc" ]] || cuda_why="nvcc not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
fi
if [[ -n "$nvcc" ]]; then
    cuda_home="$(cd "$(dirname "$nvcc")/.." && pwd)"
    arch="${PEER_CUDA_ARCH:-}"
    if [[ -z "$arch" ]]; then
        arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')"
        [[ "$arch" =~ ^[0-9]+$ ]] || arch=90
    fi
    nvcc_version="$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
    if [[ "$torch_cuda" =~ ^[0-9] && -n "$nvcc_version" && "${torch_cuda%%.*}" != "${nvcc_version%%.*}" ]]; then
        say "note: PyTorch is built with CUDA $torch_cuda, nvcc is $nvcc_version: two CUDA runtimes in one process"
    fi
    # The CUDA runtime torch loads: first on the rpath, so that the kernel's registration and
    # torch's launch checks use the same one (same soname, loaded once).
    cudart_dirs=()
    for f in "$torch_dir"/lib/libcudart.so.* "$torch_dir"/../nvidia/*/lib/libcudart.so.* \
        "$torch_dir"/../nvidia/cuda_runtime/lib/libcudart.so.*; do
        [[ -e "$f" ]] && cudart_dirs+=("$(cd "$(dirname "$f")" && pwd)")
    done
    cuda_ld=()
    for d in "${cudart_dirs[@]}"; do cuda_ld+=("-Wl,-rpath,$d"); done
    # The toolkit's runtime to link against: its libcudart.so, else (a pip-style layout without
    # the unversioned link) the versioned file itself.
    cudart="-lcudart"
    for d in "$cuda_home/lib64" "$cuda_home/targets/x86_64-linux/lib" "$cuda_home/lib"; do
        [[ -d "$d" ]] || continue
        cuda_ld+=(-L "$d" "-Wl,-rpath,$d")
        if [[ "$cudart" == -lcudart && ! -e "$d/libcudart.so" ]]; then
            for f in "$d"/libcudart.so.[0-9]*; do [[ -e "$f" ]] && cudart="$f" && break; done
        fi
    done
    "$nvcc" -O2 -std=c++17 -Xcompiler -fPIC \
        -gencode "arch=compute_$arch,code=[sm_$arch,compute_$arch]" \
        -c "$here/peer_kernel.cu" -o "$build/peer_kernel.o" >"$build/nvcc.log" 2>&1 &
    nvcc_pid=$!
    g++ "${cxxflags[@]}" -DPEER_CUDA -isystem "$cuda_home/include" \
        -c "$here/torch_dispatch.cpp" -o "$build/torch_dispatch_cuda.o" >"$build/cxx-cuda.log" 2>&1
    cxx_rc=$?
    wait "$nvcc_pid"
    nvcc_rc=$?
    if [[ $nvcc_rc -ne 0 ]]; then
        say "build failed: nvcc peer_kernel.cu (sm_$arch, exit $nvcc_rc); the CUDA part will not run"
        first_errors "$build/nvcc.log"
        cuda_why="nvcc failed on peer_kernel.cu"
    elif [[ $cxx_rc -ne 0 ]]; then
        say "build failed: g++ torch_dispatch.cpp with PEER_CUDA (exit $cxx_rc); the CUDA part will not run"
        first_errors "$build/cxx-cuda.log"
        cuda_why="g++ failed on torch_dispatch.cpp with PEER_CUDA"
    elif ! g++ "$build/torch_dispatch_cuda.o" "$build/peer_kernel.o" -o "$build/torch_dispatch_cuda" \
        "${ldflags[@]}" "${cuda_ld[@]}" -Wl,--allow-shlib-undefined -Wl,--no-as-needed \
        "${cuda_libs[@]}" "$cudart" -Wl,--as-needed >"$build/link-cuda.log" 2>&1; then
        say "build failed: linking the CUDA build; the CUDA part will not run"
        first_errors "$build/link-cuda.log"
        cuda_why="linking the CUDA build failed"
    else
        bin="$build/torch_dispatch_cuda"
    fi
fi

# ---- Else the CPU-only build ----------------------------------------------------------------
build_cpu() {
    if ! g++ "${cxxflags[@]}" -c "$here/torch_dispatch.cpp" -o "$build/torch_dispatch.o" \
        >"$build/cxx.log" 2>&1; then
        say "build failed: g++ torch_dispatch.cpp"
        first_errors "$build/cxx.log"
        return 1
    fi
    if ! g++ "$build/torch_dispatch.o" -o "$build/torch_dispatch" "${ldflags[@]}" \
        -Wl,--allow-shlib-undefined -Wl,--no-as-needed "${cpu_libs[@]}" -Wl,--as-needed >"$build/link.log" 2>&1; then
        say "build failed: linking torch_dispatch (${cpu_libs[*]})"
        first_errors "$build/link.log"
        return 1
    fi
    bin="$build/torch_dispatch"
}

# ---- Run ------------------------------------------------------------------------------------
# Runs $bin; 0 when the CPU figures came out (the program prints them first, so they survive a
# later failure of the CUDA part).
run_bin() {
    local rc=0 why log
    log="$build/run-$(basename "$bin").log"
    say "build ok: $(basename "$bin")${cuda_why:+ (no CUDA part: $cuda_why)}"
    PEER_CUDA_UNAVAILABLE="$cuda_why" timeout "${PEER_TIMEOUT:-300}" "$bin" >"$log" 2>&1 || rc=$?
    grep '^peer torch ' "$log"
    if [[ $rc -ne 0 ]]; then
        case $rc in
            124) why="timed out after ${PEER_TIMEOUT:-300} s" ;;
            *) why="exit $rc" ;;
        esac
        say "run failed: $(basename "$bin"): $why; its last lines:"
        grep -v '^peer torch ' "$log" | tail -n 8 | while IFS= read -r line; do say "error: $line"; done
    fi
    grep -q '^peer torch tensor_op direct_ns=' "$log" && grep -q '^peer torch int_op direct_ns=' "$log"
}

if [[ -n "$bin" ]]; then
    run_bin && exit 0
    # The CUDA build did not even give the CPU figures (e.g. it could not load): try without.
    cuda_why="the CUDA build failed to run"
    bin=""
fi
build_cpu || exit 1
run_bin
