//! The schema parser on arbitrary input: it never panics, and whatever it accepts prints to a
//! schema that parses back to the same print (the grammar-aware half of this property is
//! codegen/tests/schema_proptest.rs).

#![no_main]

use libfuzzer_sys::fuzz_target;
use opbox_codegen::schema::parse;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(schema) = parse(text) {
        let printed = schema.to_string();
        match parse(&printed) {
            Ok(again) => assert_eq!(again.to_string(), printed, "print is not a fixed point"),
            Err(e) => panic!("the print of an accepted schema does not parse: {printed:?}: {e}"),
        }
    }
});
