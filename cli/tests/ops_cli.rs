//! `opbox ops --plugin` on the README's example plugin (`examples/plugin.rs`, a cdylib that
//! `cargo test` builds), through the standalone binary.

use std::path::PathBuf;
use std::process::Command;

/// The `opbox` binary: cargo's, or `OPBOX_CLI_BIN` (scripts/gpu-check ships it).
fn opbox_bin() -> PathBuf {
    std::env::var_os("OPBOX_CLI_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_opbox")))
}

/// The example plugin beside cargo's binary, or in `OPBOX_PLUGIN_DIR`.
fn example_plugin() -> PathBuf {
    let dir = std::env::var_os("OPBOX_PLUGIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_BIN_EXE_opbox"))
                .parent()
                .expect("the bin dir")
                .join("examples")
        });
    let path = dir.join(format!(
        "{}plugin{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        path.is_file(),
        "the example plugin {} is not built: `cargo test` builds it, or run `cargo build --example plugin`",
        path.display()
    );
    path.canonicalize().expect("canonical")
}

fn opbox(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(opbox_bin()).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ops_lists_a_plugins_namespace_schemas_backends_and_image() {
    let plugin = example_plugin();
    let p = plugin.display().to_string();
    let version = env!("CARGO_PKG_VERSION");
    let (code, out, err) = opbox(&["ops", "--plugin", &p]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        format!(
            "plugin plugin ({p}): ABI 1.6.0, opbox {version}, namespaces myplug\nmyplug (from \
             {p})\n  myplug::add(int a, int b=1) -> int  [CPU]\n"
        )
    );
    let (code, out, _) = opbox(&["ops", "--plugin", &p, "--json"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!(
            "{{\"plugins\": [{{\"path\": \"{p}\", \"name\": \"plugin\", \"abi_version\": \
             \"1.6.0\", \"opbox_version\": \"{version}\", \"namespaces\": [\"myplug\"], \"ops\": \
             [\"myplug::add\"]}}], \"ops\": [{{\"name\": \"myplug::add\", \"namespace\": \
             \"myplug\", \"schema\": \"myplug::add(int a, int b=1) -> int\", \"backends\": [\"CPU\"], \
             \"image\": \"{p}\"}}]}}\n"
        )
    );
}

#[test]
fn ops_reports_a_plugin_it_cannot_load() {
    let (code, out, err) = opbox(&["ops", "--plugin", "/no/such/libplugin.so"]);
    assert_eq!(code, 2);
    assert_eq!(out, "");
    assert_eq!(
        err,
        "error: plugin '/no/such/libplugin.so': cannot be opened: No such file or directory (os \
         error 2)\n"
    );
}
