//! The conformance crate's own tests, one binary with a module per area: the reference
//! and the sparse backend through the test macro (`cpu`, `sparse`), the runner binary
//! (`runner`), the example plugin loaded from its library (`plugin`), and the self-test
//! that plants faults and checks the suite catches exactly them (`selftest`).

mod cpu;
mod plugin;
mod runner;
mod selftest;
mod sparse;
