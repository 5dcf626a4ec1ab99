//! What a bench reads of its own process (each includes this file with `#[path]`).

/// This process's minor page faults so far (`/proc/self/stat`'s tenth field; 0 where there is
/// none): what a one-time step (a first launch, a plugin's load) maps in that nothing touched
/// before it.
pub fn minor_faults() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (in parentheses, which may hold spaces) start at the
    // third; the tenth is the eighth of them.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(7))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}
