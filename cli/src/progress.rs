//! Draws a session's events: a progress bar on stderr, written paths on stdout (none for a
//! check, which writes nothing).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use opbox::aot::AotEvent;

pub struct Progress {
    bar: ProgressBar,
    quiet: bool,
    paths: bool,
}

impl Progress {
    /// `paths`: print each written file's path to stdout (`opbox aot`).
    pub fn new(quiet: bool, paths: bool) -> Progress {
        // Hidden until the plan says how many jobs there are; indicatif also hides it when
        // stderr is not a terminal, so logs get the plain lines only.
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}",
        );
        if let Ok(style) = style {
            bar.set_style(style);
        }
        Progress { bar, quiet, paths }
    }

    pub fn event(&self, event: AotEvent<'_>) {
        match event {
            AotEvent::Listed {
                kernel,
                module,
                declared_at,
            } => self
                .bar
                .suspend(|| println!("{kernel}\t{module}\t{declared_at}")),
            AotEvent::Skipped { kernel, reason } => self
                .bar
                .suspend(|| eprintln!("skipped: kernel '{kernel}' {reason}")),
            AotEvent::Planned { jobs } => {
                self.bar.set_length(jobs as u64);
                self.bar.set_message("compiling");
                if !self.quiet {
                    self.bar.set_draw_target(ProgressDrawTarget::stderr());
                }
            }
            AotEvent::Done {
                kernel,
                target,
                path,
            } => {
                if self.paths {
                    self.bar.suspend(|| println!("{}", path.display()));
                }
                self.bar.set_message(format!("{kernel} ({target})"));
                self.bar.inc(1);
            }
            AotEvent::Failed {
                kernel,
                target,
                message,
            } => {
                // The message names the kernel; the bar's line says which one was last.
                self.bar
                    .suspend(|| eprintln!("error [{target}]: {message}"));
                self.bar.set_message(format!("{kernel} ({target}) failed"));
                self.bar.inc(1);
            }
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
