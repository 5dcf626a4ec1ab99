//! A graph as Graphviz text: one box per node (its kernel, or its group and members), one arrow
//! per dependency, labelled with its hazards.

use std::fmt::Write;

use super::Graph;

/// Graphviz's quoted-string escapes.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub(super) fn to_dot(g: &Graph) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(out, "digraph {} {{", quoted(g.name()));
    let _ = writeln!(out, "  node [shape=box];");
    for (i, node) in g.nodes.iter().enumerate() {
        let mut label = format!("#{i} {}", node.label);
        if node.members.len() > 1 {
            let names: Vec<&str> = node
                .members
                .iter()
                .map(|m| m.handle.decl().rust_name.as_ref())
                .collect();
            let _ = write!(label, "\n[{}]", names.join(", "));
        }
        let _ = writeln!(out, "  n{i} [label={}];", quoted(&label));
    }
    for e in g.edges() {
        let _ = writeln!(
            out,
            "  n{} -> n{} [label={}];",
            e.from.index(),
            e.to.index(),
            quoted(&e.hazards.to_string())
        );
    }
    out.push_str("}\n");
    out
}
