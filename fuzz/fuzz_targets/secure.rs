#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fastarray_fuzz::targets::secure(data));
