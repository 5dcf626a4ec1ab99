//! `opbox`: the standalone command. Its own binary links no kernels, so `opbox aot` here works
//! on a plugin (`--plugin`); a binary that links kernels runs [`opbox_cli::main`] itself.

fn main() -> std::process::ExitCode {
    opbox_cli::main()
}
