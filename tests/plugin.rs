//! Op plugins end to end: a C plugin compiled here with the system C compiler, a Rust plugin
//! built with the usual macros (`tests/fixtures/rust_plugin`, an example that `cargo test`
//! builds), versioning, and plugins that misbehave. After each failure the host stays usable.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

use opbox::plugin::abi::{ABI_V1_0, ABI_V1_1, ABI_VERSION};
use opbox::plugin::{self, LoadOptions};
use opbox::prelude::*;
use opbox::tensor::live_tensors_on_this_thread;

#[stable_library(hostlib)]
fn hostlib(m: &mut Library) {
    m.def("twice(int x) -> int");
    // Grew `y` after the C plugin was written against `add_to(int x) -> int`.
    m.def("add_to(int x, int y=100) -> int");
}

#[stable_impl(hostlib, CPU)]
mod cpu {
    pub fn twice(x: i64) -> i64 {
        2 * x
    }

    pub fn add_to(x: i64, y: i64) -> i64 {
        x + y
    }
}

/// Still running when the next work is queued: shows which stream a plugin's copies wait on.
#[extern_kernel(source = "kernels/slow_fill.cu")]
fn slow_fill(out: Out<[f32]>, value: f32, n: i64, spin: i64);

/// The tests share one process-wide registry and count live handles: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn out_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temp dir"))
        .path()
}

fn library_file(name: &str) -> String {
    format!(
        "{}{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// Compiles `tests/fixtures/c_plugin/<source>` with `defines` into a library named `name`
/// (once per name), with `$CC` or `cc`.
fn c_plugin(source: &str, name: &str, defines: &[&str]) -> PathBuf {
    static BUILT: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(path) = built.get_or_insert_with(HashMap::new).get(name) {
        return path.clone();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = out_dir().join(library_file(name));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let result = Command::new(&cc)
        .args([
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
        ])
        .arg(format!("-I{}", root.join("include").display()))
        .args(defines)
        .arg("-o")
        .arg(&out)
        .arg(root.join("tests/fixtures/c_plugin").join(source))
        .output()
        .unwrap_or_else(|e| panic!("running the C compiler `{cc}`: {e}"));
    assert!(
        result.status.success(),
        "{cc} failed on {source} {defines:?}:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
    built
        .get_or_insert_with(HashMap::new)
        .insert(name.to_string(), out.clone());
    out
}

/// An example cdylib next to this test's binary (`cargo test` builds examples), or in
/// `OPBOX_PLUGIN_DIR` (scripts/gpu-check ships them there).
fn rust_plugin(example: &str) -> PathBuf {
    let dir = match std::env::var_os("OPBOX_PLUGIN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let exe = std::env::current_exe().expect("the test binary's path");
            exe.parent()
                .and_then(Path::parent)
                .expect("target/<profile>/deps")
                .join("examples")
        }
    };
    let path = dir.join(library_file(example));
    assert!(
        path.is_file(),
        "the plugin {} is not built: `cargo test` builds it, or run `cargo build --example {example}`",
        path.display()
    );
    path
}

fn error_of(path: &Path, options: &LoadOptions) -> String {
    match plugin::load_with(path, options) {
        Ok(info) => panic!("{} loaded: {info:?}", path.display()),
        Err(e) => e.to_string(),
    }
}

fn refused(path: &Path) -> String {
    error_of(path, &LoadOptions::default())
}

fn shown(path: &Path) -> String {
    path.canonicalize()
        .expect("canonical")
        .display()
        .to_string()
}

/// The host's own ops still work, and nothing of `namespace` was registered.
fn host_unchanged(namespace: &str) {
    let four: i64 = opbox::op("hostlib::twice")
        .and_then(|op| op.call((2i64,)))
        .expect("the host's op still runs");
    assert_eq!(four, 4);
    let prefix = format!("{namespace}::");
    let leaked: Vec<&str> = opbox::dispatch::registered_ops()
        .into_iter()
        .filter(|name| name.starts_with(&prefix))
        .collect();
    assert!(leaked.is_empty(), "registered anyway: {leaked:?}");
}

fn int_call(op: &str, args: impl opbox::dispatch::IntoStack) -> opbox::Result<i64> {
    opbox::op(op)?.call(args)
}

#[test]
fn a_c_plugin_registers_ops_whose_kernels_are_c_and_whose_errors_carry_its_message() {
    let _serial = serial();
    let path = c_plugin("plugin.c", "cplug", &[]);
    let info = plugin::load(&path).expect("the C plugin loads");
    assert_eq!(info.name, "cplug");
    assert_eq!(info.namespaces, ["cplug"]);
    assert_eq!(
        info.ops,
        [
            "cplug::add_one",
            "cplug::fails",
            "cplug::has_warn",
            "cplug::calls_host",
            "cplug::stream_of",
            "cplug::identity",
            "cplug::iota",
            "cplug::to_device"
        ]
    );
    assert_eq!(info.abi_version, ABI_VERSION);
    assert_eq!(info.abi_version_string(), "1.6.0");
    assert_eq!(info.opbox_version, 0, "not built with opbox's crates");

    let add_one = opbox::op("cplug::add_one").expect("resolves like an in-process op");
    assert_eq!(add_one.backends(), ["CPU"]);
    assert_eq!(add_one.image(), Some(shown(&path).as_str()));
    assert_eq!(
        add_one.schema().to_string(),
        "cplug::add_one(Tensor x) -> Tensor"
    );
    // A transposed view: the C kernel reads the strides from the header.
    let x = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let y: Tensor = add_one.call((&x,)).expect("add_one runs");
    assert_eq!(y.shape(), [3, 2]);
    assert_eq!(y.to_vec::<f32>().unwrap(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let wrong = Tensor::from_vec(vec![1i64], &[1]).unwrap();
    let e = add_one.call::<_, Tensor>((&wrong,)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cplug::add_one: add_one takes a float32 CPU tensor"
    );

    // A kernel returning its input writes the input's lent header back (ABI 1.3): the host
    // gets its own tensor, and nothing is retained or released through the header.
    let back: Tensor = opbox::op("cplug::identity").unwrap().call((&x,)).unwrap();
    assert!(back.ptr_eq(&x), "the host's own tensor came back");
    assert_eq!(x.ref_count(), 2);
    drop(back);
    assert_eq!(x.ref_count(), 1);

    // A tensor made from the C kernel's own array: the host copies it in (ABI 1.5).
    let (iota, copied): (Tensor, i64) = opbox::op("cplug::iota").unwrap().call((4i64,)).unwrap();
    assert_eq!(
        (iota.to_vec::<f32>().unwrap(), copied),
        (vec![0.0, 1.0, 2.0, 3.0], 1)
    );
    assert_eq!(
        opbox::op("cplug::iota")
            .unwrap()
            .call::<_, (Tensor, i64)>((17i64,))
            .unwrap_err()
            .to_string(),
        "cplug::iota: iota takes an int from 0 to 16"
    );

    // A move through the host (ABI 1.6): already on the cpu, x comes back as the host's own
    // tensor; a device the host does not know is refused with its message.
    let to_device = opbox::op("cplug::to_device").unwrap();
    let (moved, by_host): (Tensor, i64) = to_device.call((&x, 1i64)).unwrap();
    assert!(moved.ptr_eq(&x) && by_host == 1);
    drop(moved);
    assert_eq!(x.ref_count(), 1, "nothing kept on either side");
    let refused = to_device
        .call::<_, (Tensor, i64)>((&x, 99i64))
        .unwrap_err()
        .to_string();
    assert_eq!(
        refused,
        "cplug::to_device: tensor_to: DLPack device type 99 (unknown to DLPack 1.x) is not one \
         opbox holds; it takes kDLCPU, kDLCUDAHost (as cpu), kDLCUDA and kDLCUDAManaged (as cuda)"
    );

    assert_eq!(int_call("cplug::fails", (-4i64,)).unwrap(), 4);
    // An old call of a host op that has since grown a trailing default.
    assert_eq!(int_call("cplug::calls_host", (5i64,)).unwrap(), 105);
    // A C plugin asks the host for its current CUDA stream (ABI 1.2); nothing is scoped here,
    // so the host names the legacy default stream without touching CUDA.
    assert_eq!(int_call("cplug::stream_of", (0i64,)).unwrap(), 0);
    assert_eq!(
        int_call("cplug::stream_of", (-1i64,))
            .unwrap_err()
            .to_string(),
        "cplug::stream_of: invalid argument: current_stream: device -1 is negative"
    );
    let e = int_call("cplug::fails", (3i64,)).unwrap_err();
    assert!(
        matches!(&e, Error::Kernel { op, .. } if op == "cplug::fails"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "cplug::fails: x must not be positive (the C kernel says no)"
    );
    // The host checks the arguments against the schema before a C kernel sees them.
    let e = int_call("cplug::fails", ("three",)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cplug::fails expects argument #0 (x) to be int, but got str"
    );
}

#[test]
fn loading_the_same_file_twice_is_a_no_op_that_returns_the_same_info() {
    let _serial = serial();
    let path = c_plugin("plugin.c", "cplug", &[]);
    let first = plugin::load(&path).unwrap();
    let again = plugin::load(&path).unwrap();
    assert_eq!(first, again);
    let count = opbox::dispatch::registered_ops()
        .into_iter()
        .filter(|n| *n == "cplug::add_one")
        .count();
    assert_eq!(count, 1);
    assert!(plugin::loaded().contains(&first));
}

#[test]
fn a_rust_plugin_built_with_the_macros_reads_host_tensors_and_calls_host_ops() {
    let _serial = serial();
    let path = rust_plugin("plugin_fixture");
    let info = plugin::load(&path).expect("the Rust plugin loads");
    assert_eq!(info.name, "plugin_fixture");
    assert_eq!(info.namespaces, ["rplug"]);
    assert_eq!(info.opbox_version_string(), env!("CARGO_PKG_VERSION"));
    assert!(
        info.ops.contains(&"rplug::shout"),
        "the fragment's op: {info:?}"
    );

    let scale = opbox::op("rplug::scale").unwrap();
    assert_eq!(scale.backends(), ["CPU", "CUDA"]);
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    // The host fills the default (s=2.0) before the plugin runs.
    let plugin_live = int_call("rplug::live", ()).unwrap();
    let y: Tensor = opbox::op("rplug::scale").unwrap().call((&x,)).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [2.0, 4.0, 6.0]);
    assert_eq!(
        int_call("rplug::live", ()).unwrap(),
        plugin_live,
        "the plugin's Tensor::from_vec made the host's own tensor (ABI 1.5): it holds nothing \
         for y"
    );
    let kept: Tensor = opbox::op("rplug::keep").unwrap().call((&x,)).unwrap();
    assert_eq!(
        kept.data_ptr(),
        x.data_ptr(),
        "the same memory, through two images"
    );
    assert!(
        kept.ptr_eq(&x),
        "the plugin gave back the host's own header, so the host took its own tensor back"
    );
    let zeros: Tensor = opbox::op("rplug::zeros_in_host")
        .unwrap()
        .call((4i64,))
        .unwrap();
    assert_eq!(zeros.to_vec::<f32>().unwrap(), [0.0; 4]);
    assert_eq!(int_call("rplug::via_host", (20i64,)).unwrap(), 41);
    let shout: String = opbox::op("rplug::shout")
        .unwrap()
        .call(("ab", &[1i64, 2][..]))
        .unwrap();
    assert_eq!(shout, "ABABAB");

    let e = int_call("rplug::fails", (3i64,)).unwrap_err();
    assert_eq!(e.to_string(), "rplug::fails: refuses 3");
    let e = int_call("rplug::panics", (5i64,)).unwrap_err();
    assert!(matches!(e, Error::KernelPanic { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "rplug::panics panicked: rplug::panics was given 5"
    );
    host_unchanged("no_such_namespace");
}

#[test]
fn a_plugin_that_keeps_an_input_past_its_call_keeps_the_host_tensor_alive() {
    let _serial = serial();
    plugin::load(rust_plugin("plugin_fixture")).unwrap();
    let (host_before, plugin_before) = (
        live_tensors_on_this_thread(),
        int_call("rplug::live", ()).unwrap(),
    );
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();

    // An input nobody keeps is let go when the call ends.
    let _: Tensor = opbox::op("rplug::scale").unwrap().call((&x, 1.0)).unwrap();
    assert_eq!(x.ref_count(), 1, "the plugin let go of its reference");

    // Kept in a static: the plugin holds a reference to the host tensor.
    assert_eq!(int_call("rplug::stash", (&x,)).unwrap(), 0);
    assert_eq!(
        x.ref_count(),
        2,
        "the stash holds a reference to the host tensor"
    );
    let data = x.data_ptr();
    drop(x);
    let back: Tensor = opbox::op("rplug::unstash").unwrap().call(()).unwrap();
    assert_eq!(back.data_ptr(), data, "the same memory, kept alive");
    assert_eq!(back.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(
        back.ref_count(),
        1,
        "it came home as the host's own tensor, and the plugin let go of it"
    );

    // A view returned: the plugin's view outlives the call, and keeps the memory.
    let half: Tensor = opbox::op("rplug::first_half")
        .unwrap()
        .call((&back,))
        .unwrap();
    assert_eq!(
        back.ref_count(),
        2,
        "the plugin's view holds the host tensor"
    );
    assert_eq!(half.to_vec::<f32>().unwrap(), [1.0, 2.0]);
    drop(back);
    assert_eq!(half.to_vec::<f32>().unwrap(), [1.0, 2.0], "still alive");
    drop(half);

    assert_eq!(live_tensors_on_this_thread(), host_before, "host tensors");
    assert_eq!(
        int_call("rplug::live", ()).unwrap(),
        plugin_before,
        "plugin handles"
    );
}

#[test]
fn threads_calling_a_plugin_at_once_each_get_their_own_inputs_and_nothing_leaks() {
    let _serial = serial();
    plugin::load(rust_plugin("plugin_fixture")).unwrap();
    let plugin_before = int_call("rplug::live", ()).unwrap();
    let (scale, keep, first_half) = (
        opbox::op("rplug::scale").unwrap(),
        opbox::op("rplug::keep").unwrap(),
        opbox::op("rplug::first_half").unwrap(),
    );
    std::thread::scope(|s| {
        for thread in 0..4 {
            s.spawn(move || {
                let base = 10.0 * thread as f32;
                let x =
                    Tensor::from_vec((0..6).map(|i| base + i as f32).collect(), &[2, 3]).unwrap();
                // Each thread's inputs change shape, rank and contiguity from call to call, so
                // a wrapper set aside by one call is re-pointed at a different layout by the next.
                let inputs = [
                    x.clone(),
                    x.transpose(0, 1).unwrap(),
                    x.reshape(&[6]).unwrap(),
                    x.narrow(1, 1, 2).unwrap(),
                ];
                for round in 0..50 {
                    let input = &inputs[round % inputs.len()];
                    let want: Vec<f32> = input.to_vec::<f32>().unwrap();
                    let scaled: Tensor = scale.call((input, 2.0)).unwrap();
                    let doubled: Vec<f32> = want.iter().map(|v| 2.0 * v).collect();
                    assert_eq!(scaled.to_vec::<f32>().unwrap(), doubled);
                    assert_eq!(scaled.shape(), input.shape());
                    let kept: Tensor = keep.call((input,)).unwrap();
                    assert!(
                        kept.ptr_eq(input),
                        "an input comes back as the host's own tensor"
                    );
                    let half: Tensor = first_half.call((input,)).unwrap();
                    assert_eq!(
                        half.to_vec::<f32>().unwrap(),
                        input
                            .narrow(0, 0, input.shape()[0] / 2)
                            .unwrap()
                            .to_vec::<f32>()
                            .unwrap()
                    );
                }
                drop(inputs);
                assert_eq!(x.ref_count(), 1, "the plugin kept no reference");
            });
        }
    });
    assert_eq!(
        int_call("rplug::live", ()).unwrap(),
        plugin_before,
        "plugin handles, with the threads' set-aside wrappers gone"
    );
}

#[test]
fn nothing_leaks_on_either_side() {
    let _serial = serial();
    plugin::load(rust_plugin("plugin_fixture")).unwrap();
    plugin::load(c_plugin("plugin.c", "cplug", &[])).unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let run = || {
        let _: Tensor = opbox::op("rplug::scale").unwrap().call((&x, 3.0)).unwrap();
        let _: Tensor = opbox::op("rplug::keep").unwrap().call((&x,)).unwrap();
        let _: Tensor = opbox::op("rplug::zeros_in_host")
            .unwrap()
            .call((2i64,))
            .unwrap();
        let _: Tensor = opbox::op("cplug::add_one").unwrap().call((&x,)).unwrap();
        let _ = int_call("rplug::panics", (1i64,)).unwrap_err();
        let _ = int_call("cplug::fails", (1i64,)).unwrap_err();
    };
    // The first run makes what lives for the process (resolved host ops, thread-locals).
    run();
    let host_before = live_tensors_on_this_thread();
    let plugin_before = int_call("rplug::live", ()).unwrap();
    for _ in 0..3 {
        run();
    }
    assert_eq!(live_tensors_on_this_thread(), host_before, "host tensors");
    assert_eq!(
        int_call("rplug::live", ()).unwrap(),
        plugin_before,
        "plugin handles"
    );
    assert_eq!(x.ref_count(), 1);
}

#[test]
fn a_v1_0_plugin_runs_on_this_host_and_a_1_1_function_falls_back_or_refuses_on_a_1_0_host() {
    let _serial = serial();
    // Built against ABI 1.0 only: its header has no `warn`.
    let v10 = c_plugin(
        "plugin.c",
        "cplug_v10",
        &[
            "-DCPLUG_NS=\"cplug_v10\"",
            "-DOPBOX_TARGET_VERSION=OPBOX_ABI_V1_0",
        ],
    );
    let info = plugin::load(&v10).expect("a 1.0 plugin loads on a newer host");
    assert_eq!(info.abi_version, ABI_V1_0);
    let x = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let y: Tensor = opbox::op("cplug_v10::add_one")
        .unwrap()
        .call((&x,))
        .unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [2.0]);
    assert_eq!(int_call("cplug_v10::has_warn", ()).unwrap(), 0);

    // Built against 1.1, shown a 1.0 host: it checks the table's size and falls back.
    let old_host = LoadOptions {
        host_version: ABI_V1_0,
    };
    let fallback = c_plugin("plugin.c", "cplug_old_host", &["-DCPLUG_NS=\"cplug_old\""]);
    plugin::load_with(&fallback, &old_host).expect("loads on a 1.0 host");
    assert_eq!(int_call("cplug_old::has_warn", ()).unwrap(), 0);
    // A 1.0 host must be given an owned reference: the plugin retains the input it returns.
    let back: Tensor = opbox::op("cplug_old::identity")
        .unwrap()
        .call((&x,))
        .unwrap();
    assert!(back.ptr_eq(&x));
    drop(back);
    assert_eq!(x.ref_count(), 1, "the retained header was released");
    assert_eq!(
        int_call("cplug_old::stream_of", (0i64,)).unwrap(),
        -1,
        "no current_stream on a 1.0 host"
    );
    let (iota, copied): (Tensor, i64) =
        opbox::op("cplug_old::iota").unwrap().call((3i64,)).unwrap();
    assert_eq!(
        (iota.to_vec::<f32>().unwrap(), copied),
        (vec![0.0, 1.0, 2.0], 0),
        "no tensor_from_bytes on a 1.0 host: allocated with tensor_empty and filled"
    );
    let (kept, by_host): (Tensor, i64) = opbox::op("cplug_old::to_device")
        .unwrap()
        .call((&x, 1i64))
        .unwrap();
    assert!(
        kept.ptr_eq(&x) && by_host == 0,
        "no tensor_to on a 1.0 host: the input, retained"
    );
    drop(kept);
    assert_eq!(x.ref_count(), 1);

    // On this (1.6) host the same plugin uses the functions.
    plugin::load(c_plugin("plugin.c", "cplug", &[])).unwrap();
    let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let handler = move |w: &opbox::warnings::Warning| sink.lock().unwrap().push(w.message.clone());
    let used =
        opbox::warnings::with_warning_handler(handler, || int_call("cplug::has_warn", ()).unwrap());
    assert_eq!(used, 1);
    assert_eq!(*seen.lock().unwrap(), ["hello from C"]);
    plugin::load(rust_plugin("plugin_fixture")).unwrap();
    assert_eq!(
        int_call("rplug::warn_or_fallback", ("from Rust",)).unwrap(),
        1
    );

    // One that requires 1.1 is refused by a 1.0 host, naming the function and both versions.
    let needs = c_plugin(
        "bad_plugin.c",
        "needs_1_1",
        &["-DNEEDS_1_1", "-DNS=\"needs\""],
    );
    assert_eq!(
        error_of(&needs, &old_host),
        format!(
            "plugin '{}': it needs host ABI 1.1.0 (for warn), but this host offers 1.0.0",
            needs.display()
        )
    );
    host_unchanged("needs");

    // One that requires 1.2, shown a 1.1 host: refused, naming the 1.2 function.
    let needs_1_2 = c_plugin(
        "bad_plugin.c",
        "needs_1_2",
        &["-DNEEDS_1_2", "-DNS=\"needs12\""],
    );
    let host_1_1 = LoadOptions {
        host_version: ABI_V1_1,
    };
    assert_eq!(
        error_of(&needs_1_2, &host_1_1),
        format!(
            "plugin '{}': it needs host ABI 1.2.0 (for current_stream), but this host offers \
             1.1.0",
            needs_1_2.display()
        )
    );
    host_unchanged("needs12");
}

#[test]
fn bad_plugins_are_refused_with_messages_that_say_why_and_the_host_stays_usable() {
    let _serial = serial();
    let not_a_library = out_dir().join(library_file("not_a_library"));
    std::fs::write(&not_a_library, "this is text, not ELF\n".repeat(64)).unwrap();
    let e = refused(&not_a_library);
    let prefix = format!("plugin '{}': cannot be loaded: ", not_a_library.display());
    assert!(e.starts_with(&prefix), "{e}");
    assert!(e.contains("invalid ELF header"), "{e}");

    let cases: &[(&str, &[&str], &str)] = &[
        (
            "no_entry",
            &["-DNO_ENTRY"],
            "does not export opbox_plugin_v1: build it as a cdylib with `opbox::export_plugin!();` \
             at its crate root (or, in C, define the entry opbox.h declares)",
        ),
        (
            "major",
            &["-DBAD_MAJOR"],
            "it was built for plugin ABI 2.0.0, but this host speaks major version 1 (it offers \
             1.6.0); rebuild the plugin against this opbox",
        ),
        (
            "size",
            &["-DBAD_SIZE"],
            "its descriptor is 24 bytes, smaller than the 48 bytes its version 1.6.0 has",
        ),
        (
            "refuses",
            &["-DREFUSES"],
            "refused to load: this plugin refuses every host",
        ),
        (
            "schema",
            &["-DBAD_SCHEMA"],
            "invalid argument: the schema 'broken(Tensor x -> Tensor' at bad_plugin.c:7 does not \
             parse: expected `,` or `)` after argument `x`, found `->` (at bytes 16..18)",
        ),
        (
            "dup_impl",
            &["-DBAD_DUP_IMPL"],
            "operator 'bad_dup::one' has two different CPU kernels: first at bad_plugin.c:60, \
             again at bad_plugin.c:61. Keep one of them",
        ),
        (
            "foreign_impl",
            &["-DBAD_FOREIGN_IMPL"],
            "a CPU kernel for 'hostlib::twice' is registered at bad_plugin.c:81, but \
             'hostlib::twice' is defined at tests/plugin.rs:17, outside this plugin: plugin ABI \
             v1 lets a plugin implement only the ops it defines",
        ),
        (
            "orphan_impl",
            &["-DBAD_ORPHAN_IMPL"],
            "a CPU kernel for 'bad_orphan::none' is registered at bad_plugin.c:92, but no \
             #[stable_library] or #[stable_fragment] defines 'bad_orphan::none'",
        ),
        (
            "type",
            &["-DBAD_TYPE"],
            "bad_type::names at bad_plugin.c:71: argument #0 (xs) is str[], which plugin ABI v1 \
             does not carry",
        ),
    ];
    for (name, defines, why) in cases {
        let path = c_plugin("bad_plugin.c", name, defines);
        assert_eq!(
            refused(&path),
            format!("plugin '{}': {why}", path.display()),
            "{name}"
        );
        host_unchanged("bad_dup");
    }

    // A namespace the host defines: both sites named.
    let path = c_plugin("bad_plugin.c", "namespace", &["-DBAD_NAMESPACE"]);
    let e = refused(&path);
    let host_site = format!("{}:16", file!());
    assert_eq!(
        e,
        format!(
            "plugin '{}': only one #[stable_library] may define the namespace 'hostlib': first \
             at {host_site}, again at bad_plugin.c:40. Put all definitions in one \
             #[stable_library(hostlib)], or use #[stable_fragment(hostlib)] for the others",
            path.display()
        )
    );
    assert!(opbox::op("hostlib::other").is_err());
    host_unchanged("bad_type");
}

#[test]
fn misbehaving_kernels_fail_their_call_and_plugin_owned_tensors_go_back_to_their_maker() {
    let _serial = serial();
    plugin::load(c_plugin("bad_plugin.c", "badk", &[])).expect("loads");
    let expect = |op: &str, message: &str| {
        let e = opbox::op(op)
            .unwrap()
            .call_boxed(&mut Stack::new())
            .unwrap_err();
        assert_eq!(e.to_string(), message, "{op}");
    };
    let path = shown(&c_plugin("bad_plugin.c", "badk", &[]));
    let e = int_call("badk::err", (1i64,)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("badk::err: the kernel in plugin '{path}' failed with status 1 and set no error")
    );
    expect(
        "badk::short",
        "badk::short: the kernel wrote 1 of the 2 outputs its schema declares",
    );
    expect(
        "badk::extra",
        "badk::extra: the kernel wrote more than the 1 outputs its schema declares",
    );
    expect(
        "badk::wrong_type",
        "badk::wrong_type: output #0 is bool, but the schema returns int",
    );
    host_unchanged("no_such_namespace");

    let before = live_tensors_on_this_thread();
    let made: Tensor = opbox::op("badk::made").unwrap().call(()).unwrap();
    assert_eq!(made.to_vec::<f32>().unwrap(), [0.0, 10.0, 20.0, 30.0]);
    assert_eq!(
        int_call("badk::live", ()).unwrap(),
        1,
        "the plugin's tensor lives"
    );
    let view = made.narrow(0, 1, 2).unwrap();
    drop(made);
    assert_eq!(int_call("badk::live", ()).unwrap(), 1, "a view keeps it");
    assert_eq!(view.to_vec::<f32>().unwrap(), [10.0, 20.0]);
    drop(view);
    assert_eq!(
        int_call("badk::live", ()).unwrap(),
        0,
        "released by its maker"
    );
    assert_eq!(live_tensors_on_this_thread(), before);
}

#[test]
fn the_readme_plugin_is_the_example_and_loads() {
    let _serial = serial();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = readme
        .split("## Plugins")
        .nth(1)
        .expect("a Plugins section");
    let block = section
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a rust block");
    let example = std::fs::read_to_string(root.join("examples/plugin.rs")).unwrap();
    assert!(
        example.ends_with(block),
        "README's plugin differs from examples/plugin.rs"
    );

    let info = plugin::load(rust_plugin("plugin")).expect("the README's plugin loads");
    assert_eq!(info.ops, ["myplug::add"]);
    let three: i64 = opbox::op("myplug::add").unwrap().call((2i64,)).unwrap();
    assert_eq!(three, 3);
}

#[test]
fn the_slow_fill_kernel_compiles_with_nvrtc() {
    match opbox::cuda::nvrtc::version() {
        Ok(_) => {
            opbox::cuda::compile_for_arch(&slow_fill::DECL, &[], "sm_90").expect("compiles");
        }
        Err(e) => {
            assert_ne!(
                std::env::var("OPBOX_REQUIRE_NVRTC").as_deref(),
                Ok("1"),
                "OPBOX_REQUIRE_NVRTC=1 but NVRTC is not usable: {e}"
            );
            eprintln!("skipped: NVRTC not usable ({e})");
        }
    }
}

#[test]
fn a_plugins_cuda_kernel_runs_on_host_cuda_tensors_when_there_is_a_gpu() {
    let _serial = serial();
    plugin::load(rust_plugin("plugin_fixture")).unwrap();
    let scale = opbox::op("rplug::scale").unwrap();
    assert_eq!(scale.backends(), ["CPU", "CUDA"]);
    match opbox::cuda::device_count() {
        Ok(n) if n > 0 => {}
        other => {
            let why = format!("no GPU ({other:?})");
            assert_ne!(
                std::env::var("OPBOX_REQUIRE_GPU").as_deref(),
                Ok("1"),
                "OPBOX_REQUIRE_GPU=1 but {why}"
            );
            eprintln!("skipped the CUDA half: {why}");
            return;
        }
    }
    let before = live_tensors_on_this_thread();
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])
        .and_then(|t| t.to(Device::Cuda(0)))
        .expect("a CUDA tensor");
    // Dispatched on the tensor's device to the plugin's CUDA kernel, which reads the host's
    // device memory through the header and allocates its result through the host.
    let y: Tensor = scale
        .call((&x, 3.0))
        .expect("the plugin's CUDA kernel runs");
    assert_eq!(y.device(), Device::Cuda(0));
    assert_eq!(
        y.to(Device::Cpu).unwrap().to_vec::<f32>().unwrap(),
        [3.0, 6.0, 9.0]
    );

    // The plugin's runtime is a copy with thread-locals of its own: its CUDA work goes to the
    // stream the host made current (ABI 1.2), not to the legacy default stream, which does not
    // wait for the host's non-blocking pool streams.
    let plugin_stream = || int_call("rplug::stream", (0i64,)).unwrap();
    assert_eq!(
        plugin_stream(),
        0,
        "nothing scoped: the legacy default stream"
    );
    let pool = opbox::cuda::stream_from_pool(0).unwrap();
    let raw = pool.cu_stream().unwrap() as i64;
    assert_ne!(raw, 0);
    let inside = opbox::cuda::with_stream(&pool, plugin_stream);
    assert_eq!(inside, raw, "the plugin queues on the host's scoped stream");
    // A host kernel on the pool stream is still writing `x` (it spins first) when the plugin's
    // op reads it: the read waits on that stream, so it sees the kernel's values. On the legacy
    // stream it would not wait, and would read the old ones.
    let spin = 200_000_000i64; // about 0.1 s of clock cycles
    let z: Tensor = opbox::cuda::with_stream(&pool, || {
        slow_fill::launch(LaunchConfig::for_elems(3), &x, 5.0, 3, spin)?;
        scale.call((&x, 2.0))
    })
    .expect("the plugin's CUDA kernel runs on the host's stream");
    opbox::cuda::synchronize_stream(&pool).unwrap();
    assert_eq!(
        z.to(Device::Cpu).unwrap().to_vec::<f32>().unwrap(),
        [10.0, 10.0, 10.0],
        "the plugin read x after the host's kernel on the scoped stream wrote it"
    );
    // The plugin lends the host's device memory for the call, without a retain: given back
    // unchanged, the host gets its own tensor; kept past the call, the header is retained then,
    // and the memory outlives the host's last handle.
    let kept: Tensor = opbox::op("rplug::keep").unwrap().call((&x,)).unwrap();
    assert!(kept.ptr_eq(&x), "the host's own tensor came back");
    drop(kept);
    let stashed = Tensor::from_vec(vec![7.0f32, 8.0], &[2])
        .and_then(|t| t.to(Device::Cuda(0)))
        .unwrap();
    let address = stashed.data_ptr();
    int_call("rplug::stash", (&stashed,)).unwrap();
    drop(stashed);
    let back: Tensor = opbox::op("rplug::unstash").unwrap().call(()).unwrap();
    assert_eq!(back.device(), Device::Cuda(0));
    assert_eq!(
        back.data_ptr(),
        address,
        "the same device memory, kept alive"
    );
    assert_eq!(
        back.to(Device::Cpu).unwrap().to_vec::<f32>().unwrap(),
        [7.0, 8.0]
    );
    drop((x, y, z, back));
    assert_eq!(live_tensors_on_this_thread(), before);
    println!(
        "CUDA: rplug::scale ran from the host on cuda:0, on the host's stream when scoped; \
         rplug::keep gave back the host's tensor and rplug::stash kept one past its call"
    );
}
