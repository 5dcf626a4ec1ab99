//! With no handler installed, `opbox::warn!` goes to the `log` crate (target `opbox`). Its own
//! binary: a `log` logger is process-wide and set once.

use std::sync::Mutex;

static RECORDS: Mutex<Vec<(log::Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        RECORDS.lock().unwrap().push((
            record.level(),
            record.target().to_string(),
            record.args().to_string(),
        ));
    }
    fn flush(&self) {}
}

#[test]
fn the_default_handler_is_the_log_crate() {
    log::set_logger(&Capture).unwrap();
    log::set_max_level(log::LevelFilter::Warn);
    for i in 0..2 {
        opbox::warn!("low on memory ({i})");
    }
    let records = RECORDS.lock().unwrap();
    assert_eq!(records.len(), 1, "once per call site: {records:?}");
    let (level, target, message) = &records[0];
    assert_eq!(*level, log::Level::Warn);
    assert_eq!(target, "opbox");
    assert!(
        message.starts_with("low on memory (0) (tests/warn_to_log.rs:"),
        "{message}"
    );
}
