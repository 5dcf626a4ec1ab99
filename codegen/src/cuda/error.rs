//! Errors of the CUDA code model. The macro turns each into a spanned `compile_error!`; the
//! runtime into `opbox::Error`. Every message names the file and, where there is one, the fix.

use std::fmt;
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanError {
    /// The declaration's `source = "..."` names no file.
    SourceNotFound {
        written: String,
        path: PathBuf,
        declared_in: String,
    },
    /// An `include_dirs` entry names no directory.
    IncludeDirNotFound {
        written: String,
        path: PathBuf,
        declared_in: String,
    },
    /// A file of the closure could not be read, or is not UTF-8.
    Read { path: PathBuf, message: String },
    /// An `#include` chain comes back to a file that has no include guard, which the
    /// preprocessor would expand forever.
    Cycle { chain: Vec<String> },
    /// Includes nested deeper than any real source needs; almost surely a generated loop.
    TooDeep { chain: Vec<String> },
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanError::SourceNotFound { written, path, declared_in } => write!(
                f,
                "kernel source `{written}` not found at {} (relative to the declaring file {declared_in})",
                path.display()
            ),
            ScanError::IncludeDirNotFound { written, path, declared_in } => write!(
                f,
                "include dir `{written}` not found at {} (relative to the declaring file {declared_in})",
                path.display()
            ),
            ScanError::Read { path, message } => {
                write!(f, "cannot read kernel source {}: {message}", path.display())
            }
            ScanError::Cycle { chain } => write!(
                f,
                "#include cycle: {}; add `#pragma once` or an include guard to the headers in it",
                chain.join(" -> ")
            ),
            ScanError::TooDeep { chain } => write!(
                f,
                "#include nesting deeper than {} files: {} -> ...",
                chain.len(),
                chain.iter().take(8).cloned().collect::<Vec<_>>().join(" -> ")
            ),
        }
    }
}

impl std::error::Error for ScanError {}

/// A translation unit that cannot be emitted for the given specialization.
#[derive(Clone, Debug, PartialEq)]
pub enum EmitError {
    /// The specialization gives a different number of constexpr values than the declaration has.
    ConstexprCount {
        kernel: String,
        expected: usize,
        got: usize,
    },
    /// A constexpr value of the wrong type.
    ConstexprType {
        kernel: String,
        param: String,
        expected: String,
        got: String,
    },
    /// A float constexpr that is NaN or infinite: C++ has no literal for it.
    NonFiniteConstexpr { kernel: String, param: String },
    /// A float constexpr in a template-argument kernel: C++17 has no float template arguments.
    FloatTemplateArg { kernel: String, param: String },
    /// The declaration has no source files.
    NoSource { kernel: String },
    /// An include edge points at a file index or line that does not exist: the static data was
    /// not produced by opbox's scanner.
    BadInclude {
        kernel: String,
        file: String,
        line: u32,
    },
    /// Two by-value struct params use one C++ name with two layouts.
    NativeConflict { kernel: String, message: String },
    /// Unguarded headers include each other so often that the unit passes `limit` bytes.
    UnitTooLarge { kernel: String, limit: usize },
    /// A module with no kernels.
    EmptyModule,
    /// Two kernels asked to share a unit that differ in a compile input (see `shares_module`).
    NotOneModule { first: String, other: String },
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::ConstexprCount { kernel, expected, got } => write!(
                f,
                "kernel `{kernel}` has {expected} #[constexpr] parameters, but {got} values were given"
            ),
            EmitError::NativeConflict { kernel, message } => {
                write!(f, "kernel `{kernel}`: {message}")
            }
            EmitError::ConstexprType { kernel, param, expected, got } => write!(
                f,
                "kernel `{kernel}` expects #[constexpr] {param} to be {expected}, but got {got}"
            ),
            EmitError::NonFiniteConstexpr { kernel, param } => write!(
                f,
                "kernel `{kernel}`: #[constexpr] {param} is NaN or infinite, which has no C++ literal; pass it as a launch argument instead"
            ),
            EmitError::FloatTemplateArg { kernel, param } => write!(
                f,
                "kernel `{kernel}`: #[constexpr] {param} is a float, which cannot be a C++17 template argument; use constexpr = \"define\" or an integer"
            ),
            EmitError::NoSource { kernel } => write!(f, "kernel `{kernel}` has no source file"),
            EmitError::UnitTooLarge { kernel, limit } => write!(
                f,
                "kernel `{kernel}`: the translation unit passes {} MiB because headers without include guards are included again and again; add `#pragma once` to them",
                limit >> 20
            ),
            EmitError::EmptyModule => write!(f, "a module needs at least one kernel"),
            EmitError::NotOneModule { first, other } => write!(
                f,
                "kernels `{first}` and `{other}` cannot share one translation unit: their sources, preamble, options, build options or #[constexpr] defines differ"
            ),
            EmitError::BadInclude { kernel, file, line } => write!(
                f,
                "kernel `{kernel}`: include at {file}:{line} points outside the embedded sources"
            ),
        }
    }
}

impl std::error::Error for EmitError {}
