//! `opbox ops [--plugin lib.so]... [--json]`: every op this process can call, with its schema,
//! its backends and the image that registered it (this binary, or a plugin loaded first).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use opbox::plugin::PluginInfo;

#[derive(Debug, Args)]
pub struct OpsArgs {
    /// Load this plugin first (repeat for several).
    #[arg(long = "plugin", value_name = "LIB")]
    pub plugins: Vec<PathBuf>,
    /// Print JSON, for tools.
    #[arg(long)]
    pub json: bool,
}

/// One op, as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpRow {
    pub name: String,
    pub namespace: String,
    pub schema: String,
    pub backends: Vec<String>,
    /// The plugin's path; None for an op linked into this binary.
    pub image: Option<String>,
}

pub fn run(args: &OpsArgs) -> ExitCode {
    let mut plugins = Vec::new();
    for path in &args.plugins {
        match opbox::plugin::load(path) {
            Ok(info) => plugins.push(info),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let rows = match rows() {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", render(&plugins, &rows, args.json));
    ExitCode::SUCCESS
}

/// Every registered op, by name.
pub fn rows() -> opbox::Result<Vec<OpRow>> {
    opbox::dispatch::registered_ops()
        .into_iter()
        .map(|name| {
            let op = opbox::op(name)?;
            Ok(OpRow {
                name: name.to_string(),
                namespace: name.split("::").next().unwrap_or_default().to_string(),
                schema: op.schema().to_string(),
                backends: op.backends(),
                image: op.image().map(str::to_string),
            })
        })
        .collect()
}

/// The listing: by namespace as text, or one JSON object.
pub fn render(plugins: &[PluginInfo], rows: &[OpRow], json: bool) -> String {
    if json {
        return render_json(plugins, rows);
    }
    let mut out = String::new();
    for p in plugins {
        let _ = writeln!(
            out,
            "plugin {} ({}): ABI {}, opbox {}, namespaces {}",
            p.name,
            p.path.display(),
            p.abi_version_string(),
            p.opbox_version_string(),
            p.namespaces.join(", ")
        );
    }
    let mut namespace = None;
    for r in rows {
        if namespace != Some(&r.namespace) {
            let from = r.image.as_deref().unwrap_or("this binary");
            let _ = writeln!(out, "{} (from {from})", r.namespace);
            namespace = Some(&r.namespace);
        }
        let _ = writeln!(out, "  {}  [{}]", r.schema, r.backends.join(", "));
    }
    if rows.is_empty() {
        out.push_str("no ops registered\n");
    }
    out
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_list(items: &[impl AsRef<str>]) -> String {
    let items: Vec<String> = items.iter().map(|s| json_str(s.as_ref())).collect();
    format!("[{}]", items.join(", "))
}

fn render_json(plugins: &[PluginInfo], rows: &[OpRow]) -> String {
    let plugins: Vec<String> = plugins
        .iter()
        .map(|p| {
            format!(
                "{{\"path\": {}, \"name\": {}, \"abi_version\": {}, \"opbox_version\": {}, \
                 \"namespaces\": {}, \"ops\": {}}}",
                json_str(&p.path.display().to_string()),
                json_str(&p.name),
                json_str(&p.abi_version_string()),
                json_str(&p.opbox_version_string()),
                json_list(&p.namespaces),
                json_list(&p.ops)
            )
        })
        .collect();
    let ops: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{{\"name\": {}, \"namespace\": {}, \"schema\": {}, \"backends\": {}, \
                 \"image\": {}}}",
                json_str(&r.name),
                json_str(&r.namespace),
                json_str(&r.schema),
                json_list(&r.backends),
                r.image.as_deref().map_or("null".to_string(), json_str)
            )
        })
        .collect();
    format!(
        "{{\"plugins\": [{}], \"ops\": [{}]}}\n",
        plugins.join(", "),
        ops.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, schema: &str, image: Option<&str>) -> OpRow {
        OpRow {
            name: name.to_string(),
            namespace: name.split("::").next().unwrap().to_string(),
            schema: schema.to_string(),
            backends: vec!["CPU".to_string(), "CUDA".to_string()],
            image: image.map(str::to_string),
        }
    }

    #[test]
    fn text_groups_by_namespace_and_json_escapes() {
        let rows = [
            row("a::f", "f(int x) -> int", None),
            row("a::g", "g(str s=\"q\") -> ()", None),
            row("b::h", "h() -> ()", Some("/p/libb.so")),
        ];
        assert_eq!(
            render(&[], &rows, false),
            "a (from this binary)\n  f(int x) -> int  [CPU, CUDA]\n  g(str s=\"q\") -> ()  \
             [CPU, CUDA]\nb (from /p/libb.so)\n  h() -> ()  [CPU, CUDA]\n"
        );
        assert_eq!(
            render(&[], &rows[1..2], true),
            "{\"plugins\": [], \"ops\": [{\"name\": \"a::g\", \"namespace\": \"a\", \"schema\": \
             \"g(str s=\\\"q\\\") -> ()\", \"backends\": [\"CPU\", \"CUDA\"], \"image\": null}]}\n"
        );
        assert_eq!(render(&[], &[], false), "no ops registered\n");
    }
}
