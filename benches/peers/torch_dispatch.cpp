// PyTorch's dispatcher on ops of the same shapes as opbox's benches, measured on the machine and
// in the run where opbox's are, so that the "compared with PyTorch" goals are checked
// against figures from the same hardware and the same moment (benches/peers/run.sh builds and
// runs this; scripts/gpu-check prints the comparison).
//
// - `opbox_peer::axpby(Tensor x, Tensor y, float a) -> Tensor` and `opbox_peer::add(int a, int b)
//   -> int`, as benches/dispatch.rs: the kernels do no math (axpby returns x, a refcount bump like
//   opbox's `x.clone()`), so the differences are the cost of dispatch and boxing. Each is called
//   directly, through `typed<...>().call(...)` and through `callBoxed` on a reused stack.
// - With PEER_CUDA: `opbox_peer::noop(Tensor x) -> ()`, as benches/launch.rs (c): its CUDA kernel
//   launches an empty `__global__` kernel on the current stream; beside it a bare
//   `cudaLaunchKernel` of the same kernel with pre-packed arguments (peer_kernel.cu).
//
// Output, one line each, figures per call (parsed by benches/peers/table.py; numbers made up):
//   peer torch info version=2.11.0 calls=2000000 rounds=7 ...
//   peer torch tensor_op direct_ns=1.9 typed_ns=17.2 boxed_ns=95.1
//   peer torch int_op direct_ns=0.3 typed_ns=9.8 boxed_ns=60.2
//   peer torch cuda_launch op_us=2.31 raw_us=2.20
// or `peer torch <what> unavailable: <reason>` / `peer torch <what> failed: <reason>`.
//
// Env: PEER_CALLS (calls per round, default 2000000; or the first argument), PEER_ROUNDS
// (default 7), PEER_LAUNCHES (launches per CUDA round, default 20000, as benches/launch.rs),
// PEER_LAUNCH_ROUNDS (default 15), PEER_CUDA_UNAVAILABLE (a reason run.sh gives when it built
// without CUDA).

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/core/InferenceMode.h>
#include <torch/library.h>
#include <torch/version.h>

#ifdef PEER_CUDA
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef PEER_CUDA
// peer_kernel.cu, compiled by nvcc: the empty kernel and its launches.
extern "C" void peer_launch_chevron(const float* x, cudaStream_t stream);
extern "C" int peer_launch_raw(void** packed_args, cudaStream_t stream);
#endif

namespace {

at::Tensor axpby(const at::Tensor& x, const at::Tensor& /*y*/, double /*a*/) {
  return x;
}

int64_t add(int64_t a, int64_t b) {
  return a + b;
}

#ifdef PEER_CUDA
// What a PyTorch extension's CUDA kernel usually does: the dtype check of `const_data_ptr<float>`,
// the current stream, `<<<>>>`, and C10_CUDA_KERNEL_LAUNCH_CHECK. No device guard: the dispatcher
// adds none for TORCH_LIBRARY ops, and opbox's stub does not switch devices either.
void noop_cuda(const at::Tensor& x) {
  TORCH_CHECK(x.is_cuda(), "noop: x must be a CUDA tensor");
  peer_launch_chevron(
      x.const_data_ptr<float>(),
      c10::cuda::getCurrentCUDAStream(x.device().index()).stream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
#endif

}  // namespace

TORCH_LIBRARY(opbox_peer, m) {
  m.def("axpby(Tensor x, Tensor y, float a) -> Tensor");
  m.def("add(int a, int b) -> int");
  m.def("noop(Tensor x) -> ()");
}

TORCH_LIBRARY_IMPL(opbox_peer, CPU, m) {
  m.impl("axpby", &axpby);
}

// `add` has no tensor argument, so no backend key reaches it: PyTorch serves such ops from a
// CompositeExplicitAutograd kernel (the dispatch table's Undefined entry), the counterpart of
// opbox's CPU kernel for a tensor-less op.
TORCH_LIBRARY_IMPL(opbox_peer, CompositeExplicitAutograd, m) {
  m.impl("add", &add);
}

#ifdef PEER_CUDA
TORCH_LIBRARY_IMPL(opbox_peer, CUDA, m) {
  m.impl("noop", &noop_cuda);
}
#endif

namespace {

using Clock = std::chrono::steady_clock;

// The compiler must compute `v` and keep it: the role criterion's black_box plays for opbox.
template <class T>
inline void keep(const T& v) {
  asm volatile("" : : "g"(&v) : "memory");
}

// The compiler must not assume it knows `v` (a constant argument, a tensor's address).
template <class T>
inline void opaque(T& v) {
  asm volatile("" : "+r"(v));
}

long env_long(const char* name, long fallback) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') {
    return fallback;
  }
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v <= 0) {
    std::fprintf(stderr, "peer torch: ignoring %s=%s (want a positive integer)\n", name, s);
    return fallback;
  }
  return v;
}

// One line of text: what() of c10::Error carries a backtrace after the first line.
std::string first_line(const char* what) {
  std::string s(what == nullptr ? "" : what);
  auto nl = s.find('\n');
  if (nl != std::string::npos) {
    s.resize(nl);
  }
  return s.empty() ? std::string("(no message)") : s;
}

// Median per-call time of each form over `rounds` rounds. A form's round runs its whole timed
// loop (so the std::function call is once per round, not per call) and returns seconds; the forms
// take turns within every round in a rotating order, so that clock and frequency drift between
// phases cannot masquerade as a difference between them (as benches/launch.rs does).
std::vector<double> interleaved(
    int rounds,
    long per_round,
    const std::vector<std::function<double(long)>>& forms) {
  for (const auto& f : forms) {
    f(per_round / 10 + 1);
  }
  size_t n = forms.size();
  std::vector<std::vector<double>> samples(n);
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < n; ++k) {
      size_t which = (r + k) % n;
      samples[which].push_back(forms[which](per_round) / static_cast<double>(per_round));
    }
  }
  std::vector<double> medians;
  for (auto& s : samples) {
    std::sort(s.begin(), s.end());
    medians.push_back(s[s.size() / 2]);
  }
  return medians;
}

template <class F>
double timed(long n, F&& f) {
  auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) {
    f();
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void tensor_op(int rounds, long calls) {
  auto x = at::ones({4}, at::kFloat);
  auto y = at::ones({4}, at::kFloat);
  auto handle = c10::Dispatcher::singleton().findSchemaOrThrow("opbox_peer::axpby", "");
  auto typed = handle.typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
  torch::jit::Stack stack;
  stack.reserve(4);
  const at::Tensor* px = &x;
  const at::Tensor* py = &y;
  auto ns = interleaved(
      rounds,
      calls,
      {
          [&](long n) {
            return timed(n, [&] {
              double a = 2.0;
              opaque(px);
              opaque(py);
              opaque(a);
              keep(axpby(*px, *py, a));
            });
          },
          [&](long n) {
            return timed(n, [&] {
              double a = 2.0;
              opaque(px);
              opaque(py);
              opaque(a);
              keep(typed.call(*px, *py, a));
            });
          },
          [&](long n) {
            return timed(n, [&] {
              double a = 2.0;
              opaque(px);
              opaque(py);
              opaque(a);
              stack.clear();
              stack.emplace_back(*px);
              stack.emplace_back(*py);
              stack.emplace_back(a);
              handle.callBoxed(&stack);
              keep(stack);
            });
          },
      });
  // A wrong result would mean the measurement is of something else.
  TORCH_CHECK(stack.size() == 1 && stack[0].isTensor() && stack[0].toTensor().is_same(x),
              "callBoxed left an unexpected stack");
  std::printf("peer torch tensor_op direct_ns=%.3f typed_ns=%.3f boxed_ns=%.3f\n",
              ns[0] * 1e9, ns[1] * 1e9, ns[2] * 1e9);
}

void int_op(int rounds, long calls) {
  auto handle = c10::Dispatcher::singleton().findSchemaOrThrow("opbox_peer::add", "");
  auto typed = handle.typed<int64_t(int64_t, int64_t)>();
  torch::jit::Stack stack;
  stack.reserve(4);
  auto ns = interleaved(
      rounds,
      calls,
      {
          [&](long n) {
            return timed(n, [&] {
              int64_t a = 2, b = 3;
              opaque(a);
              opaque(b);
              keep(add(a, b));
            });
          },
          [&](long n) {
            return timed(n, [&] {
              int64_t a = 2, b = 3;
              opaque(a);
              opaque(b);
              keep(typed.call(a, b));
            });
          },
          [&](long n) {
            return timed(n, [&] {
              int64_t a = 2, b = 3;
              opaque(a);
              opaque(b);
              stack.clear();
              stack.emplace_back(a);
              stack.emplace_back(b);
              handle.callBoxed(&stack);
              keep(stack);
            });
          },
      });
  TORCH_CHECK(stack.size() == 1 && stack[0].isInt() && stack[0].toInt() == 5,
              "callBoxed left an unexpected stack");
  std::printf("peer torch int_op direct_ns=%.3f typed_ns=%.3f boxed_ns=%.3f\n",
              ns[0] * 1e9, ns[1] * 1e9, ns[2] * 1e9);
}

#ifdef PEER_CUDA
std::string cuda_error(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

void cuda_launch(int rounds, long launches) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    std::printf("peer torch cuda_launch unavailable: %s\n",
                cuda_error("cudaGetDeviceCount", e).c_str());
    return;
  }
  if (count == 0) {
    std::printf("peer torch cuda_launch unavailable: cudaGetDeviceCount reports 0 devices\n");
    return;
  }
  auto x = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, 0));
  auto typed = c10::Dispatcher::singleton()
                   .findSchemaOrThrow("opbox_peer::noop", "")
                   .typed<void(const at::Tensor&)>();
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(0).stream();
  void* ptr = x.data_ptr();
  void* packed[] = {&ptr};
  int raw_error = 0;
  auto sync = [&] {
    cudaError_t s = cudaDeviceSynchronize();
    if (s != cudaSuccess) {
      throw std::runtime_error(cuda_error("cudaDeviceSynchronize", s));
    }
  };
  auto us = interleaved(
      rounds,
      launches,
      {
          [&](long n) {
            sync();
            double t = timed(n, [&] { typed.call(x); });
            sync();
            return t;
          },
          [&](long n) {
            sync();
            auto t0 = Clock::now();
            for (long i = 0; i < n; ++i) {
              raw_error |= peer_launch_raw(packed, stream);
            }
            sync();
            return std::chrono::duration<double>(Clock::now() - t0).count();
          },
      });
  if (raw_error != 0) {
    throw std::runtime_error(cuda_error("cudaLaunchKernel", static_cast<cudaError_t>(raw_error)));
  }
  std::printf("peer torch cuda_launch op_us=%.4f raw_us=%.4f\n", us[0] * 1e6, us[1] * 1e6);
}
#endif

// Runs one part; a failure is reported on its own line and the other parts still run.
bool part(const char* what, const std::function<void()>& f) {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    std::printf("peer torch %s failed: %s\n", what, first_line(e.what()).c_str());
  } catch (...) {
    std::printf("peer torch %s failed: unknown exception\n", what);
  }
  std::fflush(stdout);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  long calls = env_long("PEER_CALLS", 2000000);
  if (argc > 1) {
    char* end = nullptr;
    long v = std::strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || v <= 0) {
      std::fprintf(stderr, "usage: %s [calls per round, a positive integer]\n", argv[0]);
      return 2;
    }
    calls = v;
  }
  int rounds = static_cast<int>(env_long("PEER_ROUNDS", 7));
  long launches = env_long("PEER_LAUNCHES", 20000);
  int launch_rounds = static_cast<int>(env_long("PEER_LAUNCH_ROUNDS", 15));

  std::printf(
      "peer torch info version=%s calls=%ld rounds=%d launches=%ld launch_rounds=%d "
      "cxx11_abi=%d\n",
      TORCH_VERSION, calls, rounds, launches, launch_rounds, _GLIBCXX_USE_CXX11_ABI);
  std::fflush(stdout);

  // Like opbox's tensors, which carry no autograd state: no autograd or ADInplaceOrView keys.
  c10::InferenceMode guard;
  bool ok = part("tensor_op", [&] { tensor_op(rounds, calls); });
  std::fflush(stdout);
  ok = part("int_op", [&] { int_op(rounds, calls); }) && ok;
  std::fflush(stdout);
#ifdef PEER_CUDA
  ok = part("cuda_launch", [&] { cuda_launch(launch_rounds, launches); }) && ok;
#else
  const char* why = std::getenv("PEER_CUDA_UNAVAILABLE");
  std::printf("peer torch cuda_launch unavailable: %s\n",
              why != nullptr && *why != '\0' ? why : "built without CUDA (PEER_CUDA undefined)");
#endif
  std::fflush(stdout);
  return ok ? 0 : 1;
}
