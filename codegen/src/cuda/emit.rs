//! The C++ emitter: one self-contained translation unit per kernel specialization.
//!
//! Layout: opbox's prelude, the declaration's preamble, the constexpr defines, the user's sources
//! inlined at their `#include` lines, then the signature check. Every part starts with a `#line`
//! directive, so NVRTC's log names the user's own `file(line)` for errors in user code and
//! `<opbox-check:NAME>` for a signature mismatch.
//!
//! Inlining (rather than NVRTC's virtual headers) keeps resolution exactly what the scanner
//! decided, whatever the spelling of each include. Each guarded header (`#pragma once`, or a
//! whole-file `#ifndef` guard, see the `guard` module) is written once, at its first inclusion:
//! a later inclusion, and an include that closes a cycle (only possible between guarded headers,
//! see the scanner), expands to a comment, as the preprocessor would expand it to nothing. So a
//! diamond lattice of headers costs each header once, not once per path to it.

use std::fmt::Write as _;

use super::cstr::escape;
use super::decl::{ConstexprStyle, EntryAbi, KernelDecl, NativeParam, ParamKind, SourceFile};
use super::directive::{directives, lines, DirectiveKind};
use super::error::EmitError;
use super::guard::{include_guard, undefines, Guard};
use super::host_headers::{NamedHeader, NAMED_HEADERS};
use super::module::{shares_module, ModuleMember};
use super::native_checks::{native_checks, CheckTarget};
use super::prelude::{prelude, PreludeParts};
use super::signature_check::push_checks;
use crate::native::NativeSchema;
use crate::types::{ConstValue, ElemType};

/// What NVRTC gets for one module: one or more kernels of one source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranslationUnit {
    /// The full C++ source.
    pub source: String,
    /// NVRTC's program name: `opbox/axpby_f32.cu`. It only names lines before the first `#line`.
    pub program_name: String,
    /// Each member's entry as an NVRTC name expression, in member order: `&axpby` or
    /// `&axpby<256u>`. Its lowered name is the symbol to load; for an `extern "C"` entry that is
    /// the plain name.
    pub name_expressions: Vec<String>,
    /// The headers NVRTC resolves by name (the C and C++ standard headers, see `host_headers`).
    pub headers: &'static [NamedHeader],
}

impl TranslationUnit {
    /// The first member's name expression: the only one of a single kernel's unit.
    pub fn name_expression(&self) -> &str {
        self.name_expressions.first().map_or("", String::as_str)
    }
}

/// Emits the translation unit of `decl` specialized by `constexprs` (one value per `#[constexpr]`
/// parameter, in declaration order).
pub fn emit(decl: &KernelDecl, constexprs: &[ConstValue]) -> Result<TranslationUnit, EmitError> {
    emit_module(&[ModuleMember { decl, constexprs }], &[])
}

/// A line of a kernel's preamble (`BuildOptions::preamble`) after which the rest goes after the
/// C++ twins of the `#[derive(KernelArg)]` structs, because it names them.
pub const KERNEL_ARGS_SLOT: &str = "// opbox: the #[derive(KernelArg)] twins go here\n";

/// [`emit`], also defining the C++ twins of `shared_structs`: the `#[derive(KernelArg)]`
/// structs that other kernels of the same source file take. The whole file is compiled for each
/// of its kernels, so every kernel's unit needs every twin the file names, not only its own.
pub fn emit_with_structs(
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    shared_structs: &[&'static NativeSchema],
) -> Result<TranslationUnit, EmitError> {
    emit_module(&[ModuleMember { decl, constexprs }], shared_structs)
}

/// Emits one unit for every member of a module (see [`shares_module`]): the file once, then each
/// member's signature check and name expression, so NVRTC compiles the file once for all of them.
pub fn emit_module(
    members: &[ModuleMember<'_>],
    shared_structs: &[&'static NativeSchema],
) -> Result<TranslationUnit, EmitError> {
    let Some(first) = members.first() else {
        return Err(EmitError::EmptyModule);
    };
    let decl = first.decl;
    let kernel = decl.rust_name.to_string();
    if decl.sources.is_empty() {
        return Err(EmitError::NoSource { kernel });
    }
    let literals: Vec<Vec<(String, String)>> = members
        .iter()
        .map(|m| constexpr_literals(m.decl, m.constexprs))
        .collect::<Result<_, _>>()?;
    for (m, lits) in members.iter().zip(&literals).skip(1) {
        let defines = |d: &KernelDecl, l: &[(String, String)]| {
            if d.constexpr_style == ConstexprStyle::Defines {
                l.to_vec()
            } else {
                Vec::new()
            }
        };
        if !shares_module(decl, m.decl) || defines(decl, &literals[0]) != defines(m.decl, lits) {
            return Err(EmitError::NotOneModule {
                first: kernel,
                other: m.decl.rust_name.to_string(),
            });
        }
    }

    let mut src = String::new();
    let _ = writeln!(
        src,
        "// opbox translation unit for kernel `{}`: generated, do not edit.",
        decl.rust_name
    );
    src.push_str("#line 1 \"<opbox-prelude>\"\n");
    let uses = |t: ElemType| members.iter().any(|m| m.decl.uses_elem(t));
    let natives: Vec<NativeParam> = members
        .iter()
        .flat_map(|m| m.decl.native_params())
        .collect();
    // A #[kernel]'s unit holds user C++ only through its preamble, where `dsl_build_options`
    // includes the header itself.
    let user_cpp = members.iter().any(|m| !m.decl.is_generated());
    src.push_str(&prelude(PreludeParts {
        f16: uses(ElemType::F16),
        bf16: uses(ElemType::BF16),
        fp8: uses(ElemType::F8E4M3) || uses(ElemType::F8E5M2),
        stdint: user_cpp || !natives.is_empty(),
    }));
    // Code that names `#[derive(KernelArg)]` structs (a DSL kernel's #[device] fns) follows the
    // slot line, and goes after their twins, which follow the user's own preamble (a twin's
    // fields may be the user's native types).
    let (preamble, after_twins) = match decl.preamble.split_once(KERNEL_ARGS_SLOT) {
        Some((before, after)) => (before, after),
        None => (&*decl.preamble, ""),
    };
    if !preamble.is_empty() {
        src.push_str("#line 1 \"<opbox-preamble>\"\n");
        push_text(&mut src, preamble);
    }
    if decl.constexpr_style == ConstexprStyle::Defines && !literals[0].is_empty() {
        let _ = writeln!(
            src,
            "#line 1 \"<opbox-constexpr:{}>\"",
            escape(&decl.rust_name)
        );
        for (name, lit) in &literals[0] {
            let _ = writeln!(src, "#define {name} {lit}");
        }
    }
    let mut generated: Vec<&'static NativeSchema> = Vec::new();
    for schema in natives
        .iter()
        .map(|n| n.schema)
        .chain(shared_structs.iter().copied())
    {
        collect_generated(schema, &mut generated);
    }
    if !generated.is_empty() {
        src.push_str("#line 1 \"<opbox-kernel-args>\"\n");
        for schema in &generated {
            push_struct_definition(&mut src, schema);
        }
    }
    if !after_twins.is_empty() {
        src.push_str("#line 1 \"<opbox-preamble>\"\n");
        push_text(&mut src, after_twins);
    }
    if decl.abi == EntryAbi::ConstantParams {
        src.push_str("#line 1 \"<opbox-constant-params>\"\n");
        let own: Vec<NativeParam> = decl.native_params().collect();
        match own.as_slice() {
            [n] if decl.params.len() == 1 && members.len() == 1 => {
                let _ = writeln!(
                    src,
                    "// {}'s bytes, written by the host before each launch",
                    n.schema.rust_name
                );
                let _ = writeln!(
                    src,
                    "extern \"C\" {{ __constant__ __align__({}) unsigned char params[{}]; }}",
                    n.schema.align, n.schema.size
                );
            }
            _ => src.push_str(
                "#error \"opbox: abi constant_params needs exactly one struct parameter\"\n",
            ),
        }
    }
    Inliner::new(decl, &mut src).inline(0)?;
    if !natives.is_empty() {
        let mut roots: Vec<&'static NativeSchema> = Vec::new();
        for n in &natives {
            if !roots.iter().any(|r| r.native_name == n.schema.native_name) {
                roots.push(n.schema);
            }
        }
        let checks =
            native_checks(&roots, CheckTarget::Nvrtc).map_err(|e| EmitError::NativeConflict {
                kernel: kernel.clone(),
                message: e.to_string(),
            })?;
        src.push_str(&checks.source);
    }

    let mut name_expressions = Vec::with_capacity(members.len());
    for (index, (m, lits)) in members.iter().zip(&literals).enumerate() {
        let entry_expr = match m.decl.constexpr_style {
            ConstexprStyle::TemplateArgs if !lits.is_empty() => {
                let args: Vec<&str> = lits.iter().map(|(_, l)| l.as_str()).collect();
                format!("{}<{}>", m.decl.entry, args.join(", "))
            }
            _ => m.decl.entry.to_string(),
        };
        // A #[kernel]'s entry and its declaration are both printed from one Rust signature, so
        // their check is the DSL checking itself: debug builds (OPBOX_DSL_BOUNDS, which the test
        // suites compile) keep it; release builds skip its template instantiations.
        if m.decl.is_generated() {
            src.push_str("#ifdef OPBOX_DSL_BOUNDS\n");
        }
        push_checks(&mut src, index, m.decl, &entry_expr);
        if m.decl.is_generated() {
            src.push_str("#endif\n");
        }
        name_expressions.push(format!("&{entry_expr}"));
    }
    Ok(TranslationUnit {
        source: src,
        program_name: format!("opbox/{}.cu", decl.rust_name),
        name_expressions,
        headers: NAMED_HEADERS,
    })
}

/// `(name, C++ literal)` for each constexpr param, checked against the declaration.
fn constexpr_literals(
    decl: &KernelDecl,
    values: &[ConstValue],
) -> Result<Vec<(String, String)>, EmitError> {
    let kernel = || decl.rust_name.to_string();
    let params: Vec<_> = decl.constexpr_params().collect();
    if params.len() != values.len() {
        return Err(EmitError::ConstexprCount {
            kernel: kernel(),
            expected: params.len(),
            got: values.len(),
        });
    }
    let mut out = Vec::with_capacity(values.len());
    for (p, v) in params.into_iter().zip(values) {
        let mismatch = |expected: &str| EmitError::ConstexprType {
            kernel: kernel(),
            param: p.name.to_string(),
            expected: expected.to_string(),
            got: v.type_name().to_string(),
        };
        let ty = match (p.kind, v) {
            (ParamKind::ConstexprEnum(e), ConstValue::Type { enum_name, cpp }) => {
                if *enum_name != e.rust_name {
                    return Err(mismatch(e.rust_name));
                }
                out.push((p.name.to_string(), cpp.to_string()));
                continue;
            }
            (ParamKind::ConstexprEnum(e), _) => return Err(mismatch(e.rust_name)),
            (ParamKind::Constexpr(ty), v) if v.scalar_type() == Some(ty) => ty,
            (ParamKind::Constexpr(ty), _) => return Err(mismatch(ty.rust_name())),
            _ => continue,
        };
        if decl.constexpr_style == ConstexprStyle::TemplateArgs && !ty.can_be_template_arg() {
            return Err(EmitError::FloatTemplateArg {
                kernel: kernel(),
                param: p.name.to_string(),
            });
        }
        let lit = v
            .cpp_literal()
            .ok_or_else(|| EmitError::NonFiniteConstexpr {
                kernel: kernel(),
                param: p.name.to_string(),
            })?;
        out.push((p.name.to_string(), lit));
    }
    Ok(out)
}

/// Above this a unit is a runaway include lattice of unguarded headers, which the preprocessor
/// too would expand exponentially; no real kernel comes near it.
const MAX_UNIT_BYTES: usize = 64 << 20;

struct Inliner<'a> {
    decl: &'a KernelDecl,
    /// Files being expanded, outermost first.
    stack: Vec<usize>,
    /// Per file: written once already.
    emitted: Vec<bool>,
    /// Per file, once asked: a second inclusion expands to nothing (see `included_once`).
    once: Vec<Option<bool>>,
    out: &'a mut String,
}

impl<'a> Inliner<'a> {
    fn new(decl: &'a KernelDecl, out: &'a mut String) -> Inliner<'a> {
        let n = decl.sources.len();
        Inliner {
            decl,
            stack: Vec::new(),
            emitted: vec![false; n],
            once: vec![None; n],
            out,
        }
    }

    fn inline(&mut self, index: usize) -> Result<(), EmitError> {
        let decl = self.decl;
        if self.out.len() > MAX_UNIT_BYTES {
            return Err(EmitError::UnitTooLarge {
                kernel: decl.rust_name.to_string(),
                limit: MAX_UNIT_BYTES,
            });
        }
        let file: &SourceFile = &decl.sources[index];
        let name = escape(&file.name);
        // Each pragma line becomes a blank one: the file is written once anyway
        // (`included_once`), and NVRTC warns about `#pragma once` in a main file.
        let once = directives(&file.content)
            .into_iter()
            .filter(|d| d.kind == DirectiveKind::PragmaOnce)
            .map(|d| d.line)
            .collect::<Vec<_>>();
        let _ = writeln!(self.out, "#line 1 \"{name}\"");
        self.stack.push(index);
        self.emitted[index] = true;
        let mut edges = file.includes.iter().peekable();
        let total = line_count(&file.content);
        for (i, text) in lines(&file.content).take(total).enumerate() {
            let line = (i + 1) as u32;
            // Edges come in line order; one per include line.
            if let Some(edge) = edges.next_if(|e| e.line == line) {
                let target = edge.file as usize;
                if target >= decl.sources.len() {
                    return Err(EmitError::BadInclude {
                        kernel: decl.rust_name.to_string(),
                        file: file.name.to_string(),
                        line,
                    });
                }
                let target_name = || escape(&decl.sources[target].name).replace("*/", "* /");
                if self.stack.contains(&target) {
                    let _ = writeln!(
                        self.out,
                        "/* opbox: include cycle ends here: {} is guarded */",
                        target_name()
                    );
                    continue;
                }
                if self.emitted[target] && self.included_once(target) {
                    let _ = writeln!(
                        self.out,
                        "/* opbox: {} is already included */",
                        target_name()
                    );
                    continue;
                }
                self.inline(target)?;
                let _ = writeln!(self.out, "#line {} \"{name}\"", line + 1);
            } else if once.contains(&line) {
                self.out.push('\n');
            } else {
                self.out.push_str(text);
                self.out.push('\n');
            }
        }
        if let Some(edge) = edges.next() {
            return Err(EmitError::BadInclude {
                kernel: decl.rust_name.to_string(),
                file: file.name.to_string(),
                line: edge.line,
            });
        }
        self.stack.pop();
        Ok(())
    }

    /// Whether including file `index` again adds nothing, as the preprocessor decides it: the
    /// file has `#pragma once`, or a whole-file guard whose macro no file of the closure
    /// `#undef`s.
    fn included_once(&mut self, index: usize) -> bool {
        if let Some(known) = self.once[index] {
            return known;
        }
        let sources = &self.decl.sources;
        let once = match include_guard(&sources[index].content) {
            Some(Guard::PragmaOnce) => true,
            Some(Guard::Macro(name)) => !sources.iter().any(|f| undefines(&f.content, &name)),
            None => false,
        };
        self.once[index] = Some(once);
        once
    }
}

/// The `#[derive(KernelArg)]` structs `schema` is or holds (through fields and arrays), nested
/// ones first, each once (by C++ name).
fn collect_generated(schema: &'static NativeSchema, out: &mut Vec<&'static NativeSchema>) {
    fn field(ty: &'static crate::native::FieldType, out: &mut Vec<&'static NativeSchema>) {
        match ty {
            crate::native::FieldType::Native(s) => collect_generated(s, out),
            crate::native::FieldType::Array(elem, _) => field(elem, out),
            crate::native::FieldType::Scalar(_) => {}
        }
    }
    if schema.initializer != crate::native::Initializer::Generated
        || out.iter().any(|s| s.native_name == schema.native_name)
    {
        return;
    }
    for f in schema.fields {
        field(&f.ty, out);
    }
    out.push(schema);
}

/// `struct alignas(A) Name { float a; int n[4]; };` for a `#[derive(KernelArg)]` struct, inside
/// its namespaces when the name is qualified (`a::b::Name`).
fn push_struct_definition(out: &mut String, schema: &NativeSchema) {
    let parts: Vec<&str> = schema.native_name.split("::").collect();
    let (name, namespaces) = parts.split_last().unwrap_or((&"", &[]));
    let _ = writeln!(
        out,
        "// the C++ twin of the Rust struct {}, generated by #[derive(KernelArg)]",
        schema.rust_name
    );
    for ns in namespaces {
        let _ = write!(out, "namespace {ns} {{ ");
    }
    let _ = write!(out, "struct alignas({}) {name} {{", schema.align);
    for f in schema.fields {
        let c = f.ty.c_type();
        let (base, bounds) = c.split_at(c.find('[').unwrap_or(c.len()));
        let _ = write!(out, " {base} {}{bounds};", f.name);
    }
    out.push_str(" };");
    for _ in namespaces {
        out.push_str(" }");
    }
    out.push('\n');
}

/// Number of lines, not counting the empty piece after a final newline.
fn line_count(text: &str) -> usize {
    let n = text.split('\n').count();
    if text.ends_with('\n') {
        n - 1
    } else {
        n
    }
}

fn push_text(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
}

#[cfg(test)]
mod tests;
