//! Where `#[extern_kernel]` finds its files: the declaring Rust file (relative paths start at its
//! directory, as with `include_str!`) and the kernel source with its `#include` closure. All of
//! it goes through [`SourceLoader`], so that tests can expand the macro in process.

use std::path::{Path, PathBuf};

use opbox_codegen::cuda::{scan_closure, Closure, ScanError, ScanRequest};
use syn::LitStr;

use super::attr::Args;
use crate::errors::Errors;

/// The file lookups of one expansion.
pub trait SourceLoader {
    /// The file that declares the kernel.
    fn declaring_file(&self) -> DeclaringFile;
    /// The include closure of `req.source`, every file read.
    fn closure(&self, req: &ScanRequest<'_>) -> Result<Closure, ScanError>;
}

/// The file that declares the kernel: where relative paths start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaringFile {
    /// The directory relative paths are resolved against.
    pub dir: PathBuf,
    /// The declaring file as messages show it: relative to the compiler's working directory
    /// when inside it, else its file name (never a machine-specific absolute path).
    pub shown: String,
}

impl DeclaringFile {
    /// From what the compiler says: the macro call's `local_file` (None when the call is not in
    /// a file on disk), its working directory, and `CARGO_MANIFEST_DIR` (the fallback base).
    pub fn resolve(
        local_file: Option<PathBuf>,
        cwd: Option<PathBuf>,
        manifest_dir: Option<PathBuf>,
    ) -> DeclaringFile {
        let Some(file) = local_file else {
            return DeclaringFile {
                dir: manifest_dir.unwrap_or_default(),
                shown: "the crate root (CARGO_MANIFEST_DIR)".into(),
            };
        };
        let absolute = match (&cwd, file.is_absolute()) {
            (Some(cwd), false) => cwd.join(&file),
            _ => file.clone(),
        };
        let shown = cwd
            .as_deref()
            .and_then(|c| absolute.strip_prefix(c).ok())
            .map(Path::to_path_buf)
            .or_else(|| file.file_name().map(PathBuf::from))
            .unwrap_or(file);
        DeclaringFile {
            dir: absolute.parent().map(Path::to_path_buf).unwrap_or_default(),
            shown: shown.display().to_string(),
        }
    }
}

/// The compiler's files: the declaring file from `local_file`, which `opbox-macros` passes in
/// (only a proc-macro crate may call `proc_macro::Span::local_file`), and the disk.
pub struct CompilerFiles<F>(pub F);

impl<F: Fn() -> Option<PathBuf>> SourceLoader for CompilerFiles<F> {
    fn declaring_file(&self) -> DeclaringFile {
        DeclaringFile::resolve(
            (self.0)(),
            std::env::current_dir().ok(),
            std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
        )
    }

    fn closure(&self, req: &ScanRequest<'_>) -> Result<Closure, ScanError> {
        scan_closure(req)
    }
}

/// The source's include closure, or `None` with the reason in `errors`.
pub(super) fn load(args: &Args, files: &dyn SourceLoader, errors: &mut Errors) -> Option<Closure> {
    let site = files.declaring_file();
    let include_dirs: Vec<String> = args.include_dirs.iter().map(LitStr::value).collect();
    let include_refs: Vec<&str> = include_dirs.iter().map(String::as_str).collect();
    let scanned = files.closure(&ScanRequest {
        source: &args.source.value(),
        include_dirs: &include_refs,
        base_dir: &site.dir,
        declared_in: &site.shown,
    });
    errors.ok(scanned.map_err(|e| scan_error(&e, args, &site)))
}

/// A scan error at the literal it is about, with a message free of absolute paths.
fn scan_error(e: &ScanError, args: &Args, site: &DeclaringFile) -> syn::Error {
    match e {
        ScanError::SourceNotFound { written, .. } => syn::Error::new(
            args.source.span(),
            format!(
                "kernel source `{written}` not found: paths are relative to the declaring file's directory ({}), as with include_str!",
                site.shown
            ),
        ),
        ScanError::IncludeDirNotFound { written, .. } => {
            let at = args
                .include_dirs
                .iter()
                .find(|l| l.value() == *written)
                .map_or(args.source.span(), LitStr::span);
            syn::Error::new(
                at,
                format!(
                    "include dir `{written}` not found (or not a directory): paths are relative to the declaring file's directory ({}), as with include_str!",
                    site.shown
                ),
            )
        }
        other => syn::Error::new(args.source.span(), other.to_string()),
    }
}
